"""Reduction and softmax kernels against the array-module API."""
from __future__ import annotations

import operator

from typing import Callable

from ember.core import dtype as _dt


def _axis(a, dim):
    """numpy's axis for a registry `dim`: None/[] reduce everything (also on 0-d arrays)."""
    if dim is None or a.ndim == 0:
        return None
    if not isinstance(dim, (tuple, list)):
        return operator.index(dim)          # ints, numpy ints, 0-dim integer tensors
    return tuple(operator.index(d) for d in dim) if len(dim) else None


def constants_of(xp) -> Callable:
    """`constant(key, make)`: the array `make()` returns, made once per key and then only read (row
    indices, vectors of ones). Cached on numpy only, read-only, at most 64 of them: another array
    module's arrays belong to one of its devices (a key would need it)."""
    cache: dict = {}

    def constant(key, make):
        a = cache.get(key)
        if a is None:
            a = make()
            if xp.__name__ == "numpy" and len(cache) < 64:
                a.flags.writeable = False
                cache[key] = a
        return a
    return constant


def sums_by_product_of(xp) -> tuple[Callable, Callable]:
    """(row_sums, column_sums) of a 2-D float array as products with a cached vector of ones: one BLAS
    call, where a sum reduction loops once per short row (a batch's classes: several times slower) or
    walks the rows one by one (a bias gradient's column sums: about twice). The rounding differs from
    a sequential sum's by ulps, as torch's vectorised sums do."""
    constant = constants_of(xp)

    def ones(n, dtype):
        return constant(("ones", n, dtype), lambda: xp.ones(n, dtype))

    def row_sums(x):
        return x @ ones(x.shape[1], x.dtype)

    def column_sums(x):
        return ones(x.shape[0], x.dtype) @ x
    return row_sums, column_sums


def add_reduce_of(xp) -> Callable:
    """numpy's `add.reduce` (no np.sum Python wrapper: a small sum is a few us of work), or `xp.sum`
    for array modules whose ufuncs may lack the method (cupy)."""
    return xp.add.reduce if xp.__name__ == "numpy" else xp.sum


def result_of(xp) -> Callable:
    """`out(r, dt)`: a kernel's result `r` as an array of dtype `dt` (a numpy scalar, which reductions
    return, becomes a 0-d array; an array already of `dt` is returned itself, not copied)."""
    ndarray = xp.ndarray

    def out(r, dt):
        if not isinstance(r, ndarray):
            r = xp.asarray(r)
        return r if r.dtype == dt else r.astype(dt)
    return out


def fold_leading(a):
    """`a` as 2-D, its leading dims folded into one (a view when contiguous; zero-size dims allowed)."""
    n = 1
    for s in a.shape[:-1]:
        n *= s
    return a.reshape(n, a.shape[-1])


def make(xp, native: Callable) -> dict[str, Callable]:
    f32 = xp.dtype("float32")
    lowp = {native(_dt.float16), native(_dt.bfloat16)}

    out = result_of(xp)
    add_reduce = add_reduce_of(xp)

    def sum_(spec, a, dim=None, keepdim=False, dtype=None):
        dt = native(spec[1])
        acc = f32 if dt in lowp else dt
        return out(add_reduce(a, axis=_axis(a, dim), keepdims=keepdim, dtype=acc), dt)

    def amax(spec, a, dim=(), keepdim=False):
        return out(xp.max(a, axis=_axis(a, dim), keepdims=keepdim), native(spec[1]))

    def amin(spec, a, dim=(), keepdim=False):
        return out(xp.min(a, axis=_axis(a, dim), keepdims=keepdim), native(spec[1]))

    def arg(fn):
        def kernel(spec, a, dim=None, keepdim=False):
            if dim is None or a.ndim == 0:
                r = fn(a.reshape(-1))
                return out(xp.reshape(r, spec[0]), xp.dtype("int64"))
            return out(fn(a, axis=dim, keepdims=keepdim), xp.dtype("int64"))
        return kernel

    def softmax(spec, a, dim, dtype=None):
        dt = native(spec[1])
        x = a.astype(f32 if dt in lowp else dt)
        if x.ndim == 0:
            return out(xp.ones((), x.dtype), dt)
        if x.size == 0:
            return out(xp.empty(x.shape, x.dtype), dt)
        e = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
        return out(e / xp.sum(e, axis=dim, keepdims=True), dt)

    def log_softmax(spec, a, dim, dtype=None):
        dt = native(spec[1])
        x = a.astype(f32 if dt in lowp else dt)
        if x.ndim == 0:
            return out(xp.zeros((), x.dtype), dt)
        if x.size == 0:
            return out(xp.empty(x.shape, x.dtype), dt)
        shifted = x - xp.max(x, axis=dim, keepdims=True)
        return out(shifted - xp.log(xp.sum(xp.exp(shifted), axis=dim, keepdims=True)), dt)

    return {"sum.dim_IntList": sum_, "amax": amax, "amin": amin, "argmax": arg(xp.argmax),
            "argmin": arg(xp.argmin), "softmax.int": softmax, "log_softmax.int": log_softmax}
