"""Sorting, scans, shape ops and extra reductions against the array-module API.

`sort.stable` and `cumsum` are primitives (every backend implements them); the others are
native versions of ops that have decompositions, used when no gradient is recorded.
float16/bfloat16 are computed in float32 (exact for sorting and copies; PyTorch
accumulates reductions in float32 as well).
"""
from __future__ import annotations

import math
import operator
from typing import Callable

from ember.core import dtype as _dt


def _axes(a, dim):
    """A tuple of wrapped axes; None / [] mean all of them."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(a.ndim))
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)
    return tuple(operator.index(d) % max(a.ndim, 1) for d in dim) if a.ndim else ()


def make(xp, native: Callable) -> dict[str, Callable]:
    f32 = xp.dtype("float32")
    i64 = xp.dtype("int64")
    lowp = {native(_dt.float16), native(_dt.bfloat16)}

    def wide(a):
        return a.astype(f32) if a.dtype in lowp else a

    def out(r, spec):
        dt = native(spec[1])
        r = xp.asarray(r)
        return r if r.dtype == dt else r.astype(dt)

    def sort_stable(specs, a, stable=None, dim=-1, descending=False):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), i64)
        x = xp.moveaxis(wide(a), operator.index(dim), -1)
        n = x.shape[-1]
        if descending:        # a stable ascending sort of the reversed row, read backwards
            idx = (n - 1) - xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        else:
            idx = xp.argsort(x, axis=-1, kind="stable")
        values = xp.take_along_axis(xp.moveaxis(a, operator.index(dim), -1), idx, axis=-1)
        values = xp.ascontiguousarray(xp.moveaxis(values, -1, operator.index(dim)))
        idx = xp.ascontiguousarray(xp.moveaxis(idx, -1, operator.index(dim)))
        return values, idx.astype(i64)

    def scan(fn):
        def kernel(spec, a, dim, dtype=None):
            dt = native(spec[1])
            acc = f32 if dt in lowp else dt
            if a.ndim == 0:
                return out(a, spec).copy()
            return out(fn(a.astype(acc), axis=operator.index(dim)), spec)
        return kernel

    def flip(spec, a, dims):
        axes = _axes(a, dims) if len(dims) else ()
        return xp.array(xp.flip(a, axis=axes) if axes and a.ndim else a, copy=True, order="C")

    def roll(spec, a, shifts, dims=()):
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        if a.ndim == 0:
            return a.copy()
        if not dims:
            return xp.roll(a, shifts[0])
        return xp.roll(a, shifts, axis=dims)

    def tril(spec, a, diagonal=0):
        return xp.tril(a, diagonal)

    def triu(spec, a, diagonal=0):
        return xp.triu(a, diagonal)

    def repeat(spec, a, repeats):
        if not len(repeats):
            return a.copy()
        return xp.array(xp.tile(a, tuple(repeats)), copy=True, order="C")

    def prod(spec, a, dtype=None):
        dt = native(spec[1])
        return out(xp.prod(a, dtype=f32 if dt in lowp else dt), spec)

    def prod_dim(spec, a, dim, keepdim=False, dtype=None):
        dt = native(spec[1])
        return out(xp.prod(a, axis=_axes(a, dim), keepdims=keepdim, dtype=f32 if dt in lowp else dt), spec)

    def truth(fn):
        def kernel(spec, a, dim=None, keepdim=False):
            return out(fn(a, axis=_axes(a, dim), keepdims=keepdim), spec)
        return kernel

    def full_truth(fn):
        return lambda spec, a: out(fn(a), spec)

    def moment(fn):
        def kernel(spec, a, dim=None, correction=None, keepdim=False):
            c = 1 if correction is None else correction
            axes = _axes(a, dim)
            n = 1
            for ax in axes:
                n *= a.shape[ax]
            x = wide(a)
            centred = x - xp.mean(x, axis=axes, keepdims=True) if x.size else x
            r = xp.sum(centred * centred, axis=axes, keepdims=keepdim) / max(n - c, 0)
            return out(r if fn == "var" else xp.sqrt(r), spec)
        return kernel

    def logsumexp(spec, a, dim, keepdim=False):
        x = a.astype(f32 if a.dtype in lowp else native(spec[1]))
        axes = _axes(a, dim)
        if x.size == 0:
            return out(xp.log(xp.sum(xp.exp(x), axis=axes, keepdims=keepdim)), spec)
        m = xp.max(x, axis=axes, keepdims=True)
        m = xp.where(xp.isinf(m), 0, m)
        r = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
        return out(r if keepdim else xp.squeeze(r, axis=axes), spec)

    def norm(spec, a, p, dim, keepdim=False):
        p = 2 if p is None else p
        x = wide(a)
        axes = _axes(a, dim)
        kw = {"axis": axes, "keepdims": keepdim}
        if p == 0:
            r = xp.sum(x != 0, **kw)
        elif p == 1:
            r = xp.sum(xp.abs(x), **kw)
        elif p == 2:
            r = xp.sqrt(xp.sum(x * x, **kw))
        elif p == math.inf:
            r = xp.max(xp.abs(x), **kw)
        elif p == -math.inf:
            r = xp.min(xp.abs(x), **kw)
        else:
            r = xp.sum(xp.abs(x) ** p, **kw) ** (1.0 / p)
        return out(r, spec)

    return {"sort.stable": sort_stable, "cumsum": scan(xp.cumsum), "cumprod": scan(xp.cumprod),
            "flip": flip, "roll": roll, "tril": tril, "triu": triu, "repeat": repeat,
            "prod": prod, "prod.dim_int": prod_dim,
            "any.dims": truth(xp.any), "all.dims": truth(xp.all), "any.dim": truth(xp.any), "all.dim": truth(xp.all),
            "any": full_truth(xp.any), "all": full_truth(xp.all),
            "var.correction": moment("var"), "std.correction": moment("std"),
            "logsumexp": logsumexp, "norm.ScalarOpt_dim": norm}
