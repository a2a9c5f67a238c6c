"""_sparse_coo_mm, the product behind a sparse COO tensor's mm (ember/sparse), against torch.sparse.mm of the
same entries."""
from __future__ import annotations

import numpy as np

from .samples import OpInfo, Sample, T, fn, make
from .database import E, add


def _torch_sparse_mm(m, indices, values, dense, rows):
    """torch's product of the same sparse matrix (torch has no op over the parts). torch has no sparse
    product on meta: there, a new (rows, N) tensor, whose layout the meta test also checks against the
    product torch computes on cpu."""
    if dense.device.type == "meta":
        return m.empty((rows, dense.shape[1]), dtype=dense.dtype, device="meta")
    return m.sparse.mm(m.sparse_coo_tensor(indices, values, (rows, dense.shape[0])), dense)


def _indices(rng, rows, cols, nnz):
    return T(np.stack([rng.integers(0, rows, nnz), rng.integers(0, cols, nnz)]).astype(np.int64))


def _samples(rng, dtype):
    a = lambda shape, layout="c": T(make(rng, shape, dtype), layout)  # noqa: E731
    return [Sample((_indices(rng, 4, 3, 7), a((7,)), a((3, 5)), 4), desc="with repeated entries"),
            Sample((_indices(rng, 6, 2, 3), a((3,)), a((5, 2), "t"), 6), desc="transposed dense"),
            Sample((T(np.zeros((2, 0), dtype=np.int64)), a((0,)), a((3, 2)), 2), desc="no entries"),
            Sample((_indices(rng, 3, 4, 5), a((5,)), a((4, 0)), 3), desc="no columns")]


add(OpInfo("_sparse_coo_mm", fn("_sparse_coo_mm"), _samples, dtypes=("float32", "float64"), grad=False,
           torch_call=_torch_sparse_mm,
           errors=lambda rng: [
               E((T(np.zeros((3, 2), dtype=np.int64)), T(make(rng, (2,), "float32")), T(make(rng, (3, 2), "float32")),
                  2), RuntimeError, "_sparse_coo_mm", desc="indices not 2 x nnz"),
               E((_indices(rng, 2, 3, 2), T(make(rng, (2,), "float64")), T(make(rng, (3, 2), "float32")), 2),
                 RuntimeError, "_sparse_coo_mm", desc="values and dense of different dtypes")]))
