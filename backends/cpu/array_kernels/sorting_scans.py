"""Sorting, scans, shape ops and extra reductions against the array-module API.

`sort.stable` and `cumsum` are primitives (every backend implements them); the others are
native versions of ops that have decompositions, used when no gradient is recorded.
float16/bfloat16 are computed in float32 (exact for sorting and copies; PyTorch
accumulates reductions in float32 as well).
"""
from __future__ import annotations

import math
import operator

from .context import ArrayModule, Family, out, quiet
from .shape import empty_like_spec


def _axes(a, dim):
    """A tuple of wrapped axes; None / [] mean all of them."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(a.ndim))
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)
    return tuple(operator.index(d) % max(a.ndim, 1) for d in dim) if a.ndim else ()


def _wide(am: ArrayModule, a):
    """`a` in float32 when it is float16/bfloat16, else itself."""
    return a.astype(am.f32) if a.dtype in am.lowp else a


def sort_stable(am: ArrayModule, specs, a, stable=None, dim=-1, descending=False):
    xp = am.xp
    if a.ndim == 0:
        return a.copy(), xp.zeros((), am.int64)
    x = xp.moveaxis(_wide(am, a), operator.index(dim), -1)
    n = x.shape[-1]
    if descending:        # a stable ascending sort of the reversed row, read backwards
        idx = (n - 1) - xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        idx = xp.argsort(x, axis=-1, kind="stable")
    values = xp.take_along_axis(xp.moveaxis(a, operator.index(dim), -1), idx, axis=-1)
    values = xp.ascontiguousarray(xp.moveaxis(values, -1, operator.index(dim)))
    idx = xp.ascontiguousarray(xp.moveaxis(idx, -1, operator.index(dim)))
    return values, idx.astype(am.int64)


def scan(am: ArrayModule, fn, spec, a, dim, dtype=None):
    """cumsum/cumprod: `fn` along `dim`, accumulated in float32 for float16/bfloat16."""
    dt = am.native_of[spec[1]]
    acc = am.f32 if dt in am.lowp else dt
    if a.ndim == 0:
        return out(am, a, dt).copy()
    return out(am, fn(a.astype(acc), axis=operator.index(dim)), dt)


def flip(am: ArrayModule, spec, a, dims):
    """A copy of the flipped view, laid out as the shape rule says (a transposed input's layout kept, as torch)."""
    xp = am.xp
    axes = _axes(a, dims) if len(dims) else ()
    out = empty_like_spec(am, spec)
    xp.copyto(out, xp.flip(a, axis=axes) if axes and a.ndim else a)
    return out


def roll(am: ArrayModule, spec, a, shifts, dims=()):
    xp = am.xp
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if a.ndim == 0 or a.size == 0:        # (an empty input's dims are not read, as torch)
        return a.copy()
    if not dims:
        return xp.roll(a, shifts[0])
    return xp.roll(a, shifts, axis=dims)


def tril(am: ArrayModule, spec, a, diagonal=0):
    return am.xp.tril(a, diagonal)


def triu(am: ArrayModule, spec, a, diagonal=0):
    return am.xp.triu(a, diagonal)


def repeat(am: ArrayModule, spec, a, repeats):
    xp = am.xp
    if not len(repeats):
        return a.copy()
    return xp.array(xp.tile(a, tuple(repeats)), copy=True, order="C")


def prod(am: ArrayModule, spec, a, dtype=None):
    dt = am.native_of[spec[1]]
    return out(am, am.xp.prod(a, dtype=am.f32 if dt in am.lowp else dt), dt)


def prod_dim(am: ArrayModule, spec, a, dim, keepdim=False, dtype=None):
    dt = am.native_of[spec[1]]
    return out(am, am.xp.prod(a, axis=_axes(a, dim), keepdims=keepdim, dtype=am.f32 if dt in am.lowp else dt), dt)


def truth(am: ArrayModule, fn, spec, a, dim=None, keepdim=False):
    """any/all over `dim` (all dims when None; none when empty: each element's truth, as torch's)."""
    axes = () if isinstance(dim, (tuple, list)) and len(dim) == 0 else _axes(a, dim)
    return out(am, fn(a, axis=axes, keepdims=keepdim), am.native_of[spec[1]])


def full_truth(am: ArrayModule, fn, spec, a):
    """any/all over the whole array."""
    return out(am, fn(a), am.native_of[spec[1]])


def _variance(am: ArrayModule, a, dim, correction, keepdim):
    """The sum of squared deviations from the mean over `dim`, divided by max(n - correction, 0)
    (correction 1 when None), computed in float32 for float16/bfloat16."""
    xp = am.xp
    c = 1 if correction is None else correction
    axes = _axes(a, dim)
    n = 1
    for ax in axes:
        n *= a.shape[ax]
    x = _wide(am, a)
    centred = x - xp.mean(x, axis=axes, keepdims=True) if x.size else x
    # no element: NaN whatever the correction (0 / 0); a NaN correction: / 0
    return xp.sum(centred * centred, axis=axes, keepdims=keepdim) / (max(0, n - c) if n else 0)


def var(am: ArrayModule, spec, a, dim=None, correction=None, keepdim=False):
    return out(am, _variance(am, a, dim, correction, keepdim), am.native_of[spec[1]])


def std(am: ArrayModule, spec, a, dim=None, correction=None, keepdim=False):
    return out(am, am.xp.sqrt(_variance(am, a, dim, correction, keepdim)), am.native_of[spec[1]])


def logsumexp(am: ArrayModule, spec, a, dim, keepdim=False):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = a.astype(am.f32 if a.dtype in am.lowp else dt)
    axes = _axes(a, dim)
    if x.size == 0:
        return out(am, xp.log(xp.sum(xp.exp(x), axis=axes, keepdims=keepdim)), dt)
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isinf(m), 0, m)
    r = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
    return out(am, r if keepdim else xp.squeeze(r, axis=axes), dt)


def norm(am: ArrayModule, spec, a, p, dim, keepdim=False):
    xp = am.xp
    p = 2 if p is None else p
    x = _wide(am, a)
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
    else:           # a negative order: a zero makes |x|^p inf and the norm 0, as torch's
        with quiet(xp, divide="ignore"):
            r = xp.sum(xp.abs(x) ** p, **kw) ** (1.0 / p)
    return out(am, r, am.native_of[spec[1]])


KERNELS = {"sort.stable": sort_stable, "cumsum": Family(scan, "cumsum"), "cumprod": Family(scan, "cumprod"),
           "flip": flip, "roll": roll, "tril": tril, "triu": triu,
           "repeat": repeat, "prod": prod, "prod.dim_int": prod_dim,
           "any.dims": Family(truth, "any"), "all.dims": Family(truth, "all"), "any.dim": Family(truth, "any"),
           "all.dim": Family(truth, "all"), "any": Family(full_truth, "any"), "all": Family(full_truth, "all"),
           "var.correction": var, "std.correction": std,
           "logsumexp": logsumexp, "norm.ScalarOpt_dim": norm}
