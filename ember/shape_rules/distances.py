"""Shape rules of pairwise distances: cdist / _cdist_forward and pdist / _pdist_forward."""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DTypeError, MissingKernelError, ShapeError
from ember.core.layout import numel

from . import shape_rule
from .common import broadcast_shapes, check_kernel_dtype, check_tensor, type_name


def _check_p(op, p):
    if not p >= 0:                      # NaN too, as torch
        raise ArgumentValueError(f"{op.name}(): {op.name.split('.')[0].lstrip('_').split('_')[0]} only supports "
                                 f"non-negative p values")


@shape_rule("cdist")
def cdist(op, x1, x2, p=2.0, compute_mode=None):
    """[..., P, M] x [..., R, M] -> [..., P, R], batch dimensions broadcast."""
    check_tensor(op, x1, "x1")
    check_tensor(op, x2, "x2")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise ShapeError(f"{op.name}(): cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
        if not t.dtype.is_floating_point:
            raise DTypeError(f"{op.name}(): cdist only supports floating-point dtypes, {name} got: {type_name(t.dtype)}")
    s1, s2 = x1._data.shape, x2._data.shape
    if s1[-1] != s2[-1]:
        raise ShapeError(f"{op.name}(): X1 and X2 must have the same number of columns. X1: {s1[-1]} X2: {s2[-1]}")
    _check_p(op, p)
    if compute_mode not in (None, 0, 1, 2):
        raise ArgumentValueError(f"{op.name}(): {compute_mode} is not a valid value for compute_mode")
    shape = tuple(broadcast_shapes(op, [tuple(s1[:-2]), tuple(s2[:-2])])) + (s1[-2], s2[-2])
    # torch computes nothing for an empty result or no columns (zeros): the operands' dtypes are checked
    # only where the distances are computed
    if x1.dtype is not x2.dtype and numel(shape) and s1[-1]:
        raise DTypeError(f"{op.name}(): expected x2 to have scalar type {type_name(x1.dtype)} but found "
                         f"{type_name(x2.dtype)}")
    return (shape, x1.dtype)


def _pdist(op, self, p, dtype_error):
    check_tensor(op, self, "input")
    if self.ndim != 2:
        raise ShapeError(f"{op.name}(): pdist only supports 2D tensors, got: {self.ndim}D")
    if not self.dtype.is_floating_point:
        raise dtype_error
    check_kernel_dtype(op, self.dtype)              # float32 and float64 only
    _check_p(op, p)
    n = self._data.shape[0]
    return ((n * (n - 1) // 2,), self.dtype)


@shape_rule("pdist", reads=("dtypes",))
def pdist(op, self, p=2.0):
    """[N, M] -> [N (N - 1) / 2]: the distances of the pairs i < j, row by row."""
    return _pdist(op, self, p, DTypeError(f"{op.name}(): pdist only supports floating-point dtypes"))


@shape_rule("pdist_forward", reads=("dtypes",))
def pdist_forward(op, self, p=2.0):
    """pdist's core form; its kernel, not a check, refuses other dtypes in torch (NotImplementedError)."""
    return _pdist(op, self, p, MissingKernelError(f"{op.name}(): \"pdist\" not implemented for '{type_name(self.dtype)}'"))
