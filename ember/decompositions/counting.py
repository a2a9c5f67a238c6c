"""gcd, lcm, histc and mode in ember ops.

gcd is Euclid's: |a|, |b| replaced by |b|, |a| mod |b| until every |b| is 0 (a loop over the data, as many
rounds as the slowest pair needs); lcm is |a b| / gcd (0 where the gcd is). histc puts each element in bin
floor((x - min) bins / (max - min)) (max in the last bin) and counts with an index_add weighted by whether
the element lies in [min, max]; min = max = 0 takes the data's range (widened by 1 each side when it is one
value), as torch's. mode sorts each slice, counts each value's run, and takes the longest run (a tie: the
smallest value) and the last index of that value in the slice.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError
from ember.frontend.tensor import holds_data

from . import decomposition


def _gcd(self, other):
    a, b = F.abs(self), F.abs(other)
    shape = tuple(F.add(a, b).shape)
    a, b = F.expand(a, shape), F.expand(b, shape)
    while holds_data(b) and b.numel() and bool(F.any(F.ne(b, 0)).item()):
        zero = F.eq(b, 0)
        a, b = F.where(zero, a, b), F.where(zero, F.zeros_like(b), F.remainder(a, F.where(zero, F.ones_like(b), b)))
    return F.contiguous(a)


@decomposition("gcd")
def gcd(self, other):
    return _gcd(self, other)


@decomposition("lcm")
def lcm(self, other):
    g = _gcd(self, other)
    zero = F.eq(g, 0)
    return F.where(zero, F.zeros_like(g), F.abs(F.mul(F.floor_divide(self, F.where(zero, F.ones_like(g), g)), other)))


@decomposition("histc")
def histc(self, bins=100, min=0, max=0):
    x = F.reshape(self, (-1,))
    lo, hi = float(min), float(max)
    if lo == hi and holds_data(x):
        if x.numel():
            lo, hi = float(F.amin(x).item()), float(F.amax(x).item())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if lo != lo or hi != hi or abs(lo) == float("inf") or abs(hi) == float("inf"):
            raise ArgumentValueError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    scaled = F.floor(F.div(F.mul(F.sub(x, lo), bins), hi - lo))
    index = F._to_copy(F.clamp(scaled, 0, bins - 1), dtype=_dt.int64)
    inside = F.logical_and(F.ge(x, lo), F.le(x, hi))             # NaN is in no bin
    counts = F.zeros((bins,), dtype=self.dtype, device=self.device)
    return F.index_add(counts, 0, index, F._to_copy(inside, dtype=self.dtype))


@decomposition("mode")
def mode(self, dim=-1, keepdim=False):
    x = F.reshape(self, (1,)) if self.dim() == 0 else F.movedim(self, dim, -1)
    n = x.shape[-1]
    values = F.sort(x, stable=True, dim=-1)[0]
    positions = F.expand(F.arange(n, device=x.device), tuple(values.shape))
    starts = F.cat([F.ones(tuple(values.shape[:-1]) + (1,), dtype=_dt.bool, device=x.device),
                    F.ne(F.slice(values, -1, 1, n), F.slice(values, -1, 0, n - 1))], -1)    # a new run begins
    run_start = F.cummax(F.where(starts, positions, 0), -1)[0]
    length = F.add(F.sub(positions, run_start), 1)               # how far into its run each element is
    best = F.argmax(length, -1, True)                            # the first longest run: the smallest value
    value = F.gather(values, -1, best)
    last = F.amax(F.where(F.eq(x, value), F.expand(F.arange(n, device=x.device), tuple(x.shape)), -1), [-1], True)
    value, last = F.squeeze(value, -1), F.squeeze(last, -1)
    if self.dim() == 0:
        return F.reshape(value, ()), F.reshape(last, ())
    if keepdim:
        d = dim % self.dim()
        value, last = F.unsqueeze(value, d), F.unsqueeze(last, d)
    return value, last
