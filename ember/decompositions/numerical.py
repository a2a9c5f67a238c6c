"""torch's numerical functions in ember ops: the trapezoidal rule (trapezoid, trapz, cumulative_trapezoid),
the Vandermonde matrix, covariance and correlation.

An integral sums (y[i] + y[i+1]) * dx[i] / 2 over the samples (or accumulates it, cumulatively), integers
computed in the default float dtype; vander is the running product of [1, x, x, ...]; cov centres each
variable (row) on its weighted mean and takes the weighted product of the centred rows, divided by the
weights' sum less the correction (Bessel's, by default), as torch's; corrcoef scales the covariance by the
standard deviations and clamps to [-1, 1].
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError
from ember.core.type_promotion import promote_types
from ember.shape_rules.numerical import integral_dtype     # the dtype the shape rules give the results
from ember.frontend.tensor import holds_data

from . import decomposition


def _as(t, dtype):
    return t if t.dtype is dtype else F._to_copy(t, dtype=dtype)


def _pair_sums(y, d: int):
    """y[i] + y[i+1] along d (one fewer than the samples)."""
    n = y.shape[d]
    return F.add(F.slice(y, d, 1, max(n, 1)), F.slice(y, d, 0, max(n - 1, 0)))


def _gaps(x, y, d: int, dim: int):
    """x's differences, shaped to meet the samples' pair sums: a 1-D x along d, any other x along `dim` (a 0-d x
    has none, as torch's diff makes it)."""
    if x.dim() == 0:
        x = F.reshape(x, (1,))
    elif x.dim() != 1:
        return F.diff(x, 1, dim)
    view = [1] * y.dim()
    view[d] = max(x.shape[0] - 1, 0)
    return F.reshape(F.diff(x), view)


def _areas_at_points(y, x, dim):
    dtype = integral_dtype(y, x)
    y, x = _as(y, dtype), _as(x, dtype)
    d = dim % y.dim()
    return F.div(F.mul(_gaps(x, y, d, dim), _pair_sums(y, d)), 2.0)


def _areas_apart(y, dx, dim):
    y = _as(y, integral_dtype(y))
    return F.mul(_pair_sums(y, dim % y.dim()), dx / 2)


def _integral(areas, y, dim):
    """The areas summed along dim; no samples at all integrate to a new 0 in y's own dtype, without history,
    as torch's."""
    if y.shape[dim] == 0:
        shape = tuple(s for k, s in enumerate(areas.shape) if k != dim % areas.dim())
        return F.zeros(shape, dtype=y.dtype, device=y.device)
    return F.sum(areas, [dim])


@decomposition("trapezoid.x")
def trapezoid_x(y, x, dim=-1):
    return _integral(_areas_at_points(y, x, dim), y, dim)


@decomposition("trapz.x")
def trapz_x(y, x, dim=-1):
    return _integral(_areas_at_points(y, x, dim), y, dim)


@decomposition("trapezoid.dx")
def trapezoid_dx(y, dx=1, dim=-1):
    return _integral(_areas_apart(y, dx, dim), y, dim)


@decomposition("trapz.dx")
def trapz_dx(y, dx=1, dim=-1):
    return _integral(_areas_apart(y, dx, dim), y, dim)


@decomposition("cumulative_trapezoid.x")
def cumulative_trapezoid_x(y, x, dim=-1):
    return F.cumsum(_areas_at_points(y, x, dim), dim)


@decomposition("cumulative_trapezoid.dx")
def cumulative_trapezoid_dx(y, dx=1, dim=-1):
    return F.cumsum(_areas_apart(y, dx, dim), dim)


@decomposition("vander")
def vander(x, N=None, increasing=False):
    n = x.shape[0]
    N = n if N is None else N
    dtype = promote_types(x.dtype, _dt.int64)
    xx = _as(x, dtype)
    if N == 0:
        return F.zeros((n, 0), dtype=dtype, device=x.device)
    powers = F.cumprod(F.stack([F.ones_like(xx)] + [xx] * (N - 1), 1), 1)
    return powers if increasing else F.flip(powers, [1])


def _check_nonnegative(weights, name: str) -> None:
    if weights is not None and holds_data(weights) and weights.numel() and F.amin(weights).item() < 0:
        raise ArgumentValueError(f"cov(): {name} cannot be negative")


@decomposition("cov")
def cov(self, correction=1, fweights=None, aweights=None):
    dtype = integral_dtype(self) if aweights is None else integral_dtype(self, aweights)
    x = _as(self if self.dim() == 2 else F.reshape(self, (1, -1)), dtype)
    _check_nonnegative(fweights, "fweights")
    _check_nonnegative(aweights, "aweights")
    w = None if fweights is None else _as(fweights, dtype)
    if aweights is not None:
        a = _as(aweights, dtype)
        w = a if w is None else F.mul(w, a)
    if w is None:
        mean = F.mean(x, [1], True)
        norm = x.shape[1] - correction
    else:
        w_sum = F.sum(w)
        mean = F.div(F.sum(F.mul(x, w), [1], True), w_sum)
        norm = F.sub(w_sum, F.div(F.mul(F.sum(F.mul(w, a)), correction), w_sum)) if aweights is not None else \
            F.sub(w_sum, correction)
    norm = max(norm, 0) if isinstance(norm, (int, float)) else F.clamp_min(norm, 0)
    centred = F.sub(x, mean)
    weighted = centred if w is None else F.mul(centred, w)
    c = F.div(F.mm(weighted, F.t(centred)), norm)
    return c if self.dim() == 2 else F.reshape(c, ())


@decomposition("corrcoef")
def corrcoef(self):
    c = F.cov(self)
    if c.dim() == 0:
        return F.div(c, c)
    std = F.sqrt(F.diagonal(c))
    c = F.div(F.div(c, F.unsqueeze(std, 1)), F.unsqueeze(std, 0))
    return F.clamp(c, -1, 1)
