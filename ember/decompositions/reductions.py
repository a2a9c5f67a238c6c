"""Explicit kernels and decompositions of reductions and softmax."""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt

from . import decomposition, explicit_kernel


@decomposition("mean.dim")
def mean(self, dim=None, keepdim=False, dtype=None):
    total = F.sum(self, dim, keepdim, dtype=dtype or self.dtype)
    count = self.numel() // max(total.numel(), 1) if self.numel() else 0
    return F.div(total, count)


@decomposition("max")
def max_all(self):
    return F.amax(self)


@decomposition("min")
def min_all(self):
    return F.amin(self)


def _argable(self):
    """argmax/argmin reject bool (as PyTorch's do); max.dim/min.dim accept it."""
    return F._to_copy(self, dtype=_dt.uint8) if self.dtype is _dt.bool else self


@explicit_kernel("max.dim")
def max_dim(self, dim, keepdim=False):
    return F.amax(self, dim, keepdim), F.argmax(_argable(self), dim, keepdim)


@explicit_kernel("min.dim")
def min_dim(self, dim, keepdim=False):
    return F.amin(self, dim, keepdim), F.argmin(_argable(self), dim, keepdim)


@explicit_kernel("softmax.int")
def softmax(self, dim, dtype=None):
    x = self if dtype is None else F._to_copy(self, dtype=dtype)
    if x.numel() == 0:
        return F.clone(x)                      # amax rejects an empty dim
    shifted = F.exp(F.sub(x, F.amax(x, dim, True)))
    return F.div(shifted, F.sum(shifted, dim, True))


@explicit_kernel("log_softmax.int")
def log_softmax(self, dim, dtype=None):
    x = self if dtype is None else F._to_copy(self, dtype=dtype)
    if x.numel() == 0:
        return F.clone(x)                      # amax rejects an empty dim
    shifted = F.sub(x, F.amax(x, dim, True))
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, True)))


@decomposition("_softmax")
def _softmax(self, dim, half_to_float):
    """half_to_float (float16 in, float32 out) is CUDA-only in PyTorch; Ember allows it anywhere."""
    return F.softmax(self, dim, dtype=_dt.float32 if half_to_float else None)


@decomposition("_log_softmax")
def _log_softmax(self, dim, half_to_float):
    return F.log_softmax(self, dim, dtype=_dt.float32 if half_to_float else None)


@decomposition("_softmax_backward_data")
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    return F.mul(output, F.sub(grad_output, F.sum(F.mul(grad_output, output), dim, True)))


@decomposition("_log_softmax_backward_data")
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    return F.sub(grad_output, F.mul(F.exp(output), F.sum(grad_output, dim, True)))


@decomposition("count_nonzero")
def count_nonzero(self, dim=None):
    """sum(self != 0) over `dim` (a bool sum is int64; no dims or an empty list: every one, as sum reads them)."""
    return F.sum(F.ne(self, 0), dim)


# ------------------------------------------------------------------------------------------ NaN-aware, selections
@decomposition("nansum")
def nansum(self, dim=None, keepdim=False, dtype=None):
    """sum with NaNs replaced by zero (integers hold none)."""
    values = F.where(F.isnan(self), 0, self) if self.dtype.is_floating_point else self
    return F.sum(values, dim, keepdim, dtype=dtype)


@decomposition("nanmean")
def nanmean(self, dim=None, keepdim=False, dtype=None):
    """nansum over the count of elements that are not NaN (0 / 0: NaN where all are)."""
    counted = F.sum(F.logical_not(F.isnan(self)), dim, keepdim)
    return F.div(nansum(self, dim, keepdim, dtype), counted)


def _select(self, dim, keepdim, position):
    """(values, indices) at `position(n, nan_count)` (a keepdim-shaped position tensor or an int) of a stable
    sort along `dim`, where NaNs come last in their order (median, nanmedian, kthvalue)."""
    x = F.reshape(self, (1,)) if self.dim() == 0 else self
    d = dim if dim >= 0 else dim + x.dim()
    values, indices = F.sort(x, stable=True, dim=d)
    n = x.shape[d]
    nan_count = F.sum(F.isnan(x), [d], True) if x.dtype.is_floating_point else None
    at = position(n, nan_count)
    if isinstance(at, int):
        shape = list(values.shape)
        shape[d] = 1
        at = F.full(tuple(shape), at, dtype=_dt.int64, device=x.device)
    picked = (F.gather(values, d, at), F.gather(indices, d, at))
    if not keepdim or self.dim() == 0:
        picked = tuple(F.squeeze(p, [d]) for p in picked)
    return picked


def _lower_median(n, nan_count):
    """(n - 1) // 2, or the first NaN's place where the slice has one (torch's median propagates NaN)."""
    if nan_count is None:
        return (n - 1) // 2
    return F.where(F.gt(nan_count, 0), F.rsub(nan_count, n), (n - 1) // 2)


def _lower_nanmedian(n, nan_count):
    """The lower median's place among the elements that are not NaN (0 where all are NaN)."""
    if nan_count is None:
        return (n - 1) // 2
    return F.clamp_min(F.floor_divide(F.sub(F.rsub(nan_count, n), 1), 2), 0)


def _median_all(self, position):
    if self.numel() == 0:
        return F.full((), float("nan"), dtype=self.dtype, device=self.device)
    return _select(F.reshape(self, (-1,)), 0, False, position)[0]


@decomposition("median")
def median(self):
    return _median_all(self, _lower_median)


@decomposition("median.dim")
def median_dim(self, dim, keepdim=False):
    return _select(self, dim, keepdim, _lower_median)


@decomposition("nanmedian")
def nanmedian(self):
    return _median_all(self, _lower_nanmedian)


@decomposition("nanmedian.dim")
def nanmedian_dim(self, dim, keepdim=False):
    return _select(self, dim, keepdim, _lower_nanmedian)


@decomposition("kthvalue")
def kthvalue(self, k, dim=-1, keepdim=False):
    return _select(self, dim, keepdim, lambda n, nan_count: k - 1)
