"""quantile and nanquantile in ember ops, as torch computes them: the slices sorted (NaNs last), each q's rank
q * (n - 1) among a slice's n values (for nanquantile, its n values that are not NaN), the values at the ranks
below and above it picked by gather and interpolated (linear through lerp; lower, higher and nearest take one
of them, nearest rounding half to even; midpoint their mean). A slice with a NaN gives NaN (its rank is sent to
the last, NaN, value), as does a nanquantile slice of NaNs only. q in [0, 1] is checked on its values."""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError
from ember.frontend.tensor import holds_data

from . import decomposition


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan: bool, name: str):
    scalar_q = isinstance(q, (int, float))
    qs = F.full((1,), float(q), dtype=self.dtype, device=self.device) if scalar_q else \
        (F.reshape(q, (1,)) if q.dim() == 0 else q)
    if not scalar_q and holds_data(qs) and qs.numel() and \
            (F.amin(qs).item() < 0 or F.amax(qs).item() > 1):
        raise ArgumentValueError(f"{name}() q values must be in the range [0, 1]")
    x = F.reshape(self, (-1,)) if dim is None or self.dim() == 0 else F.movedim(self, dim, -1)
    values = F.sort(x, -1)[0]                                   # (..., n), NaNs last
    n = values.shape[-1]
    nan = F.isnan(values)
    if ignore_nan:
        last = F.sub(F.sum(F.logical_not(nan), [-1], True), 1)            # (..., 1): the last valid position
        ranks = F.mul(_along_q(qs, last.dim()), last)
        ranks = F.where(F.lt(ranks, 0), float(n - 1), ranks)              # no valid value: the NaN at the end
    else:
        ranks = F.mul(_along_q(qs, values.dim()), float(n - 1))
        ranks = F.where(F.any(nan, [-1], True), float(n - 1), F.expand(ranks, _q_shape(qs, values)))
    ranks = F.expand(ranks, _q_shape(qs, values))                         # (k, ..., 1)
    below, above = F.floor(ranks), F.ceil(ranks)
    if interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = above = F.round(ranks)
    grid = F.expand(F.unsqueeze(values, 0), (qs.shape[0],) + tuple(values.shape))
    low = F.gather(grid, -1, F._to_copy(below, dtype=_dt.int64))
    high = F.gather(grid, -1, F._to_copy(above, dtype=_dt.int64))
    if interpolation == "linear":
        out = F.lerp(low, high, F.sub(ranks, below))
    elif interpolation == "midpoint":
        out = F.lerp(low, high, 0.5)
    else:
        out = low
    out = F.squeeze(out, -1)                                              # (k, ...)
    if keepdim:
        if dim is None:
            out = F.reshape(out, (qs.shape[0],) + (1,) * self.dim())
        else:
            out = F.unsqueeze(out, 1 + dim % max(self.dim(), 1))
    if scalar_q or q.dim() == 0:
        return F.squeeze(out, 0)
    return F.movedim(F.contiguous(F.movedim(out, 0, -1)), -1, 0)        # torch's layout: q's dim innermost


def _along_q(qs, ndim: int):
    """q's values along a new leading dim, broadcasting against `ndim` trailing dims."""
    return F.reshape(qs, (qs.shape[0],) + (1,) * ndim)


def _q_shape(qs, values) -> tuple[int, ...]:
    return (qs.shape[0],) + tuple(values.shape[:-1]) + (1,)


@decomposition("quantile")
def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False, "quantile")


@decomposition("quantile.scalar")
def quantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False, "quantile")


@decomposition("nanquantile")
def nanquantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True, "nanquantile")


@decomposition("nanquantile.scalar")
def nanquantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True, "nanquantile")
