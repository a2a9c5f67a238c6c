"""scatter_reduce over ember ops (differentiated through), and scatter(..., reduce=) over it.

sum and mean (not bool) are two scatter_adds, of the values and of the counts. prod, amax
and amin (no primitive reduces by index that way) are a one-hot reduction: for
`n = self.size(dim)` target positions, each `src` element is compared against every
position (a one-hot of shape index.shape + (n,)), then the masked values are reduced over
the scattered dimension with prod / amax / amin. With
include_self, `self`'s own value joins each reduction as one more row, so amax/amin
gradients are shared evenly among every tie, `self` included, as in PyTorch. Their memory
is O(index.numel() * n); the cpu backend runs a native kernel instead when no gradient is
needed.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember._generated import functions as F
from ember.core import dtype as _dt

from . import decomposition
from .indexing import _gather_bounds, _place, _window


def _extreme(dtype, lowest: bool):
    if dtype.is_floating_point:
        return float("-inf") if lowest else float("inf")
    if dtype is _dt.bool:
        return not lowest
    info = np.iinfo(dtype.name)
    return int(info.min if lowest else info.max)


def _prod(x, dim):
    """The product over `dim` by pairwise halving (no prod reduction among the ops)."""
    while x.shape[dim] > 1:
        n = x.shape[dim]
        if n % 2:
            x = F.cat([x, F.ones_like(F.slice(x, dim, 0, 1))], dim)
            n += 1
        x = F.mul(F.slice(x, dim, 0, n, 2), F.slice(x, dim, 1, n, 2))
    return F.squeeze(x, [dim])


def _sum_mean(base, d: int, ix, s, reduce: str, include_self: bool):
    """sum and mean as scatter_adds of the values and of the counts: O(index.numel()) memory."""
    added = F.scatter_add(F.zeros_like(base), d, ix, s)
    count = F.scatter_add(F.zeros(tuple(base.shape), dtype=_dt.int64, device=base.device), d, ix,
                          F.ones(tuple(ix.shape), dtype=_dt.int64, device=base.device))
    hit = F.gt(count, 0)
    red = F.add(base, added) if include_self else added
    if reduce == "mean":
        c = F.add(count, 1) if include_self else F.where(hit, count, 1)
        c = F._to_copy(c, dtype=base.dtype)
        red = F.div(red, c) if base.dtype.is_floating_point else F.div(red, c, rounding_mode="floor")
    return F.where(hit, red, base)


@decomposition("scatter_reduce.two")
def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    if index.numel() == 0:
        return F.clone(self)
    x = self if self.dim() else F.reshape(self, (1,))
    ix = index if index.dim() else F.reshape(index, (1,))
    s = src if src.dim() else F.reshape(src, (1,))
    nd = x.dim()
    d = dim % nd
    _gather_bounds("scatter_reduce", x, d, ix)
    n = x.shape[d]
    s = _window(s, tuple(ix.shape))
    window = tuple(n if k == d else ix.shape[k] for k in range(nd))
    base = _window(x, window)                                   # the part of self that can change
    if reduce in ("sum", "mean") and x.dtype is not _dt.bool:
        new = _sum_mean(base, d, ix, s, reduce, include_self)
        out = _place(x, new) if tuple(new.shape) != tuple(x.shape) else F.clone(new)
        return out if self.dim() else F.reshape(out, ())
    # move the scattered dim last: (..., m) -> one-hot (..., m, n)
    perm = [k for k in range(nd) if k != d] + [d]
    ip, sp = F.permute(ix, perm), F.permute(s, perm)
    bp = F.permute(base, perm)                                  # (..., n)
    onehot = F.eq(F.unsqueeze(ip, -1), F.arange(n, dtype=_dt.int64, device=x.device))
    vals = F.expand(F.unsqueeze(sp, -1), tuple(onehot.shape))
    count = F.sum(onehot, -2)                                    # (..., n) int64
    fill = {"sum": 0, "mean": 0, "prod": 1, "amax": _extreme(x.dtype, True),
            "amin": _extreme(x.dtype, False)}[reduce]
    fillt = F.full((), fill, dtype=x.dtype, device=x.device)
    masked = F.where(onehot, vals, fillt)                        # (..., m, n)
    if include_self:
        masked = F.cat([masked, F.unsqueeze(bp, -2)], -2)
    if reduce in ("sum", "mean"):
        red = F.sum(masked, -2, dtype=x.dtype)
        if reduce == "mean":
            c = F.add(count, 1) if include_self else F.where(F.gt(count, 0), count, 1)
            c = F._to_copy(c, dtype=x.dtype)
            red = F.div(red, c) if x.dtype.is_floating_point else F.div(red, c, rounding_mode="floor")
    elif reduce == "prod":
        red = _prod(masked, masked.dim() - 2)
    elif reduce == "amax":
        red = F.amax(masked, -2)
    else:
        red = F.amin(masked, -2)
    red = F.where(F.gt(count, 0), red, bp)
    inv = [0] * nd
    for k, p in enumerate(perm):
        inv[p] = k
    new = F.permute(red, inv)
    out = _place(x, new) if tuple(new.shape) != tuple(x.shape) else F.clone(new)
    return out if self.dim() else F.reshape(out, ())


# ------------------------------------------------------------------- scatter(..., reduce=): torch's older spelling
@decomposition("scatter.reduce")
def scatter_with_reduce(self, dim, index, src, reduce):
    warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                  "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                  UserWarning, stacklevel=2)
    return _scatter_with_reduce(self, dim, index, src, reduce)


@decomposition("scatter.value_reduce")
def scatter_value_with_reduce(self, dim, index, value, reduce):
    src = F.full(tuple(index.shape), value, dtype=self.dtype, device=self.device)
    return _scatter_with_reduce(self, dim, index, src, reduce)


def _scatter_with_reduce(self, dim, index, src, reduce: str):
    """'add' is scatter_add; 'multiply' is scatter_reduce's prod with self's values included."""
    if reduce == "add":
        return F.scatter_add(self, dim, index, src)
    return F.scatter_reduce(self, dim, index, src, "prod")
