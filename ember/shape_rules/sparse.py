"""Shape rules of the ops a sparse COO tensor's kernels run on its parts (ember/sparse)."""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DTypeError, ShapeError

from . import shape_rule
from .common import check_tensor


@shape_rule("sparse_coo_mm")
def sparse_coo_mm(op, indices, values, dense, rows):
    for name, t in (("indices", indices), ("values", values), ("dense", dense)):
        check_tensor(op, t, name)
    if len(indices.shape) != 2 or indices.shape[0] != 2 or len(values.shape) != 1 or \
            values.shape[0] != indices.shape[1]:
        raise ShapeError(f"{op.name}(): expected 2 x nnz indices and nnz values, got {list(indices.shape)} and "
                         f"{list(values.shape)}")
    if len(dense.shape) != 2:
        raise ShapeError(f"{op.name}(): expected a 2-D dense matrix, got {len(dense.shape)}-D")
    if values._dtype is not dense._dtype:
        raise DTypeError(f"{op.name}(): expected values and dense of one dtype, got {values._dtype} and "
                         f"{dense._dtype}")
    if rows < 0:
        raise ArgumentValueError(f"{op.name}(): rows must be non-negative, got {rows}")
    return ((rows, dense.shape[1]), dense._dtype)
