"""Explicit kernels and decompositions of pointwise ops."""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.dispatcher.operator import ALL_OPS
from ember.core.type_promotion import result_type
from ember.frontend.tensor import Tensor
from ember.frontend.type_info import finfo

from . import as_float, decomposition, explicit_kernel


@explicit_kernel("sign")
def sign(self):
    if self.dtype.category == 0:
        return F.clone(self)
    positive = F._to_copy(F.gt(self, 0), dtype=self.dtype)
    negative = F._to_copy(F.lt(self, 0), dtype=self.dtype)
    return F.sub(positive, negative)             # sign(nan) is 0, as in PyTorch


@explicit_kernel("clamp.Tensor")
def clamp(self, min=None, max=None):
    result = result_type(self, min, max)
    out = self if self.dtype is result else F._to_copy(self, dtype=result)     # compared in the result's dtype
    if min is not None:
        out = _bounded(out, min, True)
    if max is not None:
        out = _bounded(out, max, False)
    return F.clone(out) if out is self else out


def _bounded(x, bound, lower: bool):
    """max(x, bound) (`lower`) or min(x, bound): maximum/minimum of a Tensor bound; for a number (which those
    take no more than PyTorch's do), the bound where x passes it or where it is NaN, as PyTorch's clamp."""
    if isinstance(bound, Tensor):
        return F.maximum(x, bound) if lower else F.minimum(x, bound)
    if bound != bound:
        passes = F.ones_like(x, dtype=_dt.bool)
    else:
        passes = F.lt(x, bound) if lower else F.gt(x, bound)
    return F.where(passes, bound, x)


@explicit_kernel("rsqrt")
def rsqrt(self):
    return F.div(1.0, F.sqrt(self))


@explicit_kernel("sigmoid")
def sigmoid(self):
    return F.div(1.0, F.add(F.exp(F.neg(as_float(self))), 1.0))


@explicit_kernel("relu")
def relu(self):
    return F.where(F.lt(self, 0), F.zeros_like(self), self)  # keeps NaN, as PyTorch


@decomposition("floor_divide")
def floor_divide(self, other):
    return F.div(self, other, rounding_mode="floor")


@decomposition("rsub.Tensor")
def rsub(self, other, alpha=1):
    return F.sub(other, self, alpha=alpha)


@explicit_kernel("square")
def square(self):
    if self.dtype.category == 0:
        self = F._to_copy(self, dtype=_dt.int64)      # PyTorch: pow(self, 2), bool promotes to int64
    return F.mul(self, self)


@decomposition("isclose")
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Equal, or NaN on both sides with `equal_nan`, or finite and |self - other| <= atol + |rtol * other|:
    torch's formula, in the operands' dtype (integers and bools in the default float dtype, where a
    difference cannot wrap around)."""
    close = F.eq(self, other)
    floating = self.dtype.is_floating_point
    if equal_nan and floating:
        close = F.logical_or(close, F.logical_and(F.isnan(self), F.isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    if not floating:
        self, other = (F._to_copy(t, dtype=_dt.get_default_dtype()) for t in (self, other))
    allowed = F.add(F.abs(F.mul(other, rtol)), atol)
    actual = F.abs(F.sub(self, other))
    return F.logical_or(close, F.logical_and(F.isfinite(actual), F.le(actual, allowed)))


@explicit_kernel("clamp_min")
def clamp_min(self, min):
    """clamp's kernel with one bound (its own node, clamp's formulas: an in-place clamp_min_ is recorded as
    the result it holds, where a decomposition's clamp node would have saved the overwritten self)."""
    return F.clamp(self, min, None)


@explicit_kernel("clamp_max")
def clamp_max(self, max):
    """clamp's kernel with only an upper bound (see clamp_min)."""
    return F.clamp(self, None, max)


@decomposition("nan_to_num")
def nan_to_num(self, nan=None, posinf=None, neginf=None):
    """Three selects on self's float values (a copy for integers and bools, which hold none of them); the
    infinities become the dtype's extreme finite values unless given."""
    if not self.dtype.is_floating_point:
        return F.clone(self)
    info = finfo(self.dtype)
    out = F.where(F.isnan(self), 0.0 if nan is None else nan, self)
    out = F.where(F.eq(self, math.inf), info.max if posinf is None else posinf, out)
    return F.where(F.eq(self, -math.inf), info.min if neginf is None else neginf, out)


@decomposition("deg2rad")
def deg2rad(self):
    return F.mul(as_float(self), math.pi / 180)


@decomposition("rad2deg")
def rad2deg(self):
    return F.mul(as_float(self), 180 / math.pi)


def _log_add(self, other, exp_of_minus_gap, scale):
    """max + log1p(exp(-|self - other|)) * scale (torch's formula), where two equal infinities give themselves
    (their difference would be NaN)."""
    top = F.maximum(self, other)
    gap = F.neg(F.abs(F.sub(self, other)))
    rest = F.log1p(exp_of_minus_gap(gap))
    summed = F.add(top, rest if scale == 1 else F.mul(rest, scale))
    return F.where(F.logical_and(F.isinf(self), F.eq(self, other)), self, summed)


@decomposition("logaddexp")
def logaddexp(self, other):
    return _log_add(self, other, F.exp, 1)


@decomposition("logaddexp2")
def logaddexp2(self, other):
    return _log_add(self, other, F.exp2, 1 / math.log(2))


@decomposition("isposinf")
def isposinf(self):
    return F.eq(self, math.inf) if self.dtype.is_floating_point else F.zeros_like(self, dtype=_dt.bool)


@decomposition("isneginf")
def isneginf(self):
    return F.eq(self, -math.inf) if self.dtype.is_floating_point else F.zeros_like(self, dtype=_dt.bool)


@explicit_kernel("logit")
def logit(self, eps=None):
    """log(x / (1 - x)) after the clamp to [eps, 1 - eps]; its own node (torch's gradient: inf at 0 and 1)."""
    x = as_float(self)
    if eps is not None and eps >= 0:
        x = F.clamp(x, eps, 1 - eps)
    return F.log(F.div(x, F.rsub(x, 1)))


@decomposition("sinc")
def sinc(self):
    """sin(pi x) / (pi x) with 1 at 0; the division sees 1 there, so no NaN reaches the gradient."""
    x = as_float(self)
    zero = F.eq(x, 0)
    angle = F.mul(F.where(zero, 1, x), math.pi)
    return F.where(zero, 1, F.div(F.sin(angle), angle))


@explicit_kernel("copysign")
def copysign(self, other):
    """|self| with other's sign bit, in the dtype its shape rule promotes to (int_to_float); its own node, with
    torch's formulas."""
    op = ALL_OPS["copysign"]
    dtype = op.shape_rule(op, self, other)[1]
    magnitude = F.abs(F._to_copy(self, dtype=dtype) if isinstance(self, Tensor) else F.full((), self, dtype=dtype))
    if not isinstance(other, Tensor):
        return F.neg(magnitude) if math.copysign(1.0, other) < 0 else F.clone(magnitude)
    return F.where(F.signbit(other), F.neg(magnitude), magnitude)


def _nan_losing(self, other, pick):
    """`pick` (maximum or minimum) where neither is NaN, else the one that is not (NaN where both are)."""
    return F.where(F.isnan(self), other, F.where(F.isnan(other), self, pick(self, other)))


@explicit_kernel("fmax")
def fmax(self, other):
    return _nan_losing(self, other, F.maximum)


@explicit_kernel("fmin")
def fmin(self, other):
    return _nan_losing(self, other, F.minimum)
