"""heaviside, float_power, ldexp and the scans logcumsumexp, cummax and cummin in ember ops.

A scan is a log-step (Hillis-Steele) combination: at step s every position combines the running value
s places before it with its own, so after ceil(log2 n) steps each holds the combination of everything up
to it. logcumsumexp combines with logaddexp (-inf is its identity, so no overflow and no underflow to
log 0); cummax/cummin carry (value, index) pairs whose combination keeps the later element unless the
earlier one is strictly better or NaN (NaN wins, its first index kept), as torch's. The values are then
gathered at the indices, so that their gradient is gather's: the incoming gradient at each argmax.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt

from ember.dispatcher import ALL_OPS

from . import decomposition


@decomposition("heaviside")
def heaviside(self, values):
    step = F._to_copy(F.gt(self, 0), dtype=self.dtype)
    return F.where(F.eq(self, 0), values, step)


@decomposition("float_power")
def float_power(self, exponent):
    def f64(x):
        return F._to_copy(x, dtype=_dt.float64) if hasattr(x, "dtype") else float(x)
    base, power = f64(self), f64(exponent)
    if not hasattr(base, "dtype"):                       # a number raised to a tensor
        return F.pow(F.full_like(power, base), power)
    return F.pow(base, power)


@decomposition("ldexp")
def ldexp(self, other):
    dtype = ALL_OPS["ldexp"].shape_rule(ALL_OPS["ldexp"], self, other)[1]         # the promoted floating dtype
    return F.mul(F._to_copy(self, dtype=dtype), F.pow(2.0, F._to_copy(other, dtype=dtype)))


def _earlier(x, dim: int, s: int):
    """x moved s places later along dim, its first s positions its own (the mask keeps them out)."""
    n = x.shape[dim]
    return F.cat([F.slice(x, dim, 0, s), F.slice(x, dim, 0, n - s)], dim)


def _positions(x, dim: int):
    """Each element's index along dim, in x's shape."""
    n = x.shape[dim]
    view = [1] * x.dim()
    view[dim] = n
    return F.expand(F.reshape(F.arange(n, device=x.device), view), tuple(x.shape))


@decomposition("logcumsumexp")
def logcumsumexp(self, dim):
    x = self if self.dim() else F.reshape(self, (1,))
    d = dim % x.dim()
    n, s, out = x.shape[d], 1, x
    if n < 2:                                   # nothing to combine: a copy (never a view of the input)
        return F.clone(self)
    positions = _positions(x, d)
    while s < n:
        out = F.where(F.ge(positions, s), F.logaddexp(_earlier(out, d, s), out), out)
        s *= 2
    return F.reshape(out, tuple(self.shape))


def _cumulative_extreme(self, dim, larger: bool):
    x = self if self.dim() else F.reshape(self, (1,))
    d = dim % x.dim()
    n = x.shape[d]
    positions = _positions(x, d)
    value, index, s = x, positions, 1
    floating = x.dtype.is_floating_point
    while s < n:
        prev_value, prev_index = _earlier(value, d, s), _earlier(index, d, s)
        better = F.gt(prev_value, value) if larger else F.lt(prev_value, value)
        if floating:                                   # a NaN before wins; one here beats any number before
            better = F.logical_or(F.isnan(prev_value), F.logical_and(F.logical_not(F.isnan(value)), better))
        take = F.logical_and(F.ge(positions, s), better)
        value, index = F.where(take, prev_value, value), F.where(take, prev_index, index)
        s *= 2
    values = F.gather(x, d, index)
    shape = tuple(self.shape)
    return F.reshape(values, shape), F.contiguous(F.reshape(index, shape))     # (index: the arange's expand at n 1)


@decomposition("cummax")
def cummax(self, dim):
    return _cumulative_extreme(self, dim, True)


@decomposition("cummin")
def cummin(self, dim):
    return _cumulative_extreme(self, dim, False)
