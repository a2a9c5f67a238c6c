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


@decomposition("count_nonzero")
def count_nonzero(self, dim=None):
    """sum(self != 0) over `dim` (a bool sum is int64)."""
    nonzero = F.ne(self, 0)
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return F.sum(nonzero)
    return F.sum(nonzero, [dim] if isinstance(dim, int) else list(dim))
