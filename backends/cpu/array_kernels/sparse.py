"""Products of sparse COO tensors' parts against the array-module API: scipy.sparse on numpy,
cupyx.scipy.sparse on cupy (a CSR matrix built from the entries, repeats summed, times the dense one)."""
from __future__ import annotations

import importlib

from .context import ArrayModule


def sparse_coo_mm(am: ArrayModule, spec, indices, values, dense, rows):
    """(rows x K sparse, `values` at `indices`) @ dense (K x N)."""
    xp = am.xp
    if indices.shape[1] == 0 or dense.dtype.kind != "f" or dense.dtype.itemsize < 4:
        # nothing to add, or a dtype the sparse libraries lack (float16, bfloat16): scatter-add in the array module
        out = xp.zeros(spec[0], dtype=dense.dtype)
        if indices.shape[1]:
            products = (dense[indices[1]].astype(xp.float32) * values[:, None].astype(xp.float32)).astype(dense.dtype)
            xp.add.at(out, indices[0], products)
        return out
    sparse = importlib.import_module("scipy.sparse" if am.is_numpy else "cupyx.scipy.sparse")
    matrix = sparse.csr_matrix((values, (indices[0], indices[1])), shape=(rows, dense.shape[0]))
    return xp.ascontiguousarray(matrix @ dense)


KERNELS = {"_sparse_coo_mm": sparse_coo_mm}
