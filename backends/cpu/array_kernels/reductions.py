"""Reduction and softmax kernels against the array-module API."""
from __future__ import annotations

import operator

from .context import ArrayModule, Family, out


def _axis(a, dim):
    """numpy's axis for a registry `dim`: None/[] reduce everything (also on 0-d arrays)."""
    if dim is None or a.ndim == 0:
        return None
    if not isinstance(dim, (tuple, list)):
        return operator.index(dim)          # ints, numpy ints, 0-dim integer tensors
    return tuple(operator.index(d) for d in dim) if len(dim) else None


def sum_(am: ArrayModule, spec, a, dim=None, keepdim=False, dtype=None):
    dt = am.native_of[spec[1]]
    add_reduce = am.add_reduce      # read as an attribute, then called (a slot called as a method is a slow lookup)
    return out(am, add_reduce(a, axis=_axis(a, dim), keepdims=keepdim, dtype=am.compute_of[dt]), dt)


def amax(am: ArrayModule, spec, a, dim=(), keepdim=False):
    return out(am, am.xp.max(a, axis=_axis(a, dim), keepdims=keepdim), am.native_of[spec[1]])


def amin(am: ArrayModule, spec, a, dim=(), keepdim=False):
    return out(am, am.xp.min(a, axis=_axis(a, dim), keepdims=keepdim), am.native_of[spec[1]])


def arg_reduction(am: ArrayModule, fn, spec, a, dim=None, keepdim=False):
    """argmax/argmin: `fn` over one dim, or over the flattened array when `dim` is None."""
    if dim is None or a.ndim == 0:
        return out(am, am.xp.reshape(fn(a.reshape(-1)), spec[0]), am.int64)
    return out(am, fn(a, axis=dim, keepdims=keepdim), am.int64)


def softmax(am: ArrayModule, spec, a, dim, dtype=None):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = a.astype(am.compute_of[dt])
    if x.ndim == 0:
        return out(am, xp.ones((), x.dtype), dt)
    if x.size == 0:
        return out(am, xp.empty(x.shape, x.dtype), dt)
    e = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
    return out(am, e / xp.sum(e, axis=dim, keepdims=True), dt)


def log_softmax(am: ArrayModule, spec, a, dim, dtype=None):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = a.astype(am.compute_of[dt])
    if x.ndim == 0:
        return out(am, xp.zeros((), x.dtype), dt)
    if x.size == 0:
        return out(am, xp.empty(x.shape, x.dtype), dt)
    shifted = x - xp.max(x, axis=dim, keepdims=True)
    return out(am, shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True)), dt)


KERNELS = {"sum.dim_IntList": sum_, "amax": amax, "amin": amin, "argmax": Family(arg_reduction, "argmax"),
           "argmin": Family(arg_reduction, "argmin"), "softmax.int": softmax, "log_softmax.int": log_softmax}
