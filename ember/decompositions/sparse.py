"""Explicit kernels of the ops sparse COO tensors run on their parts, in ember ops (every backend, meta)."""
from __future__ import annotations

from . import explicit_kernel


@explicit_kernel("_sparse_coo_mm")
def sparse_coo_mm(indices, values, dense, rows):
    """Gather the dense rows of the entries' columns, scale them by the values, add them into their rows."""
    from ember._generated import functions as F

    out = F.zeros((rows, dense.shape[1]), dtype=dense.dtype, device=dense.device)
    if values.shape[0] == 0:
        return out
    products = F.mul(F.index_select(dense, 0, indices[1]), values.unsqueeze(1))
    return F.index_add(out, 0, indices[0], products)
