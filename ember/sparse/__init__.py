"""`ember.sparse`: sparse COO tensors (torch.sparse's COO layout).

    s = ember.sparse_coo_tensor(indices, values, size)    # or dense.to_sparse()
    y = ember.sparse.mm(s, x)                              # also ember.mm, s @ x, ember.spmm

A sparse tensor is an `ember.Tensor` with `layout == ember.sparse_coo`; its ops reach the Sparse
dispatch key's kernels (kernels.py), built from dense ops on its indices and values, so they run on
every backend and size on meta. Gradients flow to the dense operands of its ops, and to a sparse leaf
of mm/matmul/addmm as a dense gradient (torch.mm's behaviour).
"""
from __future__ import annotations

from ember._generated import functions as _F
from ember.core.layout import sparse_coo

from . import methods as _methods  # noqa: F401  (attaches Tensor.to_dense, coalesce, ...)
from .coo import sparse_coo_tensor

__all__ = ["mm", "addmm", "sum", "sparse_coo_tensor", "FloatTensor", "DoubleTensor", "LongTensor", "sparse_coo"]


def mm(mat1, mat2):
    """sparse @ dense (or sparse @ sparse); the gradient of the dense operand is mm(mat1.t(), grad)."""
    return _F.mm(mat1, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), with mat1 sparse."""
    return _F.addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):   # noqa: A001 (torch.sparse.sum)
    """torch.sparse.sum: all entries (a dense 0-d tensor), or over `dim` (sparse while sparse dims remain)."""
    return _F.sum(input, dim, dtype=dtype)


def _legacy(dtype_name: str, class_name: str):
    def construct(indices, values, size=None, *, device=None):
        """torch.sparse's legacy constructor: sparse_coo_tensor(indices, values, size) of one dtype."""
        from ember.core import dtype as _dt

        return sparse_coo_tensor(indices, values, size, dtype=getattr(_dt, dtype_name), device=device)
    construct.__name__ = construct.__qualname__ = class_name
    return construct


FloatTensor = _legacy("float32", "FloatTensor")
DoubleTensor = _legacy("float64", "DoubleTensor")
LongTensor = _legacy("int64", "LongTensor")
