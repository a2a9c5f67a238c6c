"""Explicit kernels that keep the primitive set small: pointwise ops built from primitives.

Each op here is `impl: explicit` in the registry: autograd uses its own formula, and a
backend runs it through these kernels only when it has no native kernel (the cpu backend
has native ones for all of them). The constructions are the numerically careful ones
(expm1 for sinh near 0, log1p for asinh/acosh/atanh, atan2 for asin/acos, scaling for hypot),
computed in float32 for float16/bfloat16 inputs and rounded once, as PyTorch's kernels do.

The primitives they stand on: add, mul, div, neg, abs, exp, expm1, log, log1p, sqrt, pow,
sin, cos, tanh, atan2, floor, round, fmod, eq, lt, le, where, bitwise_and/or/xor, bmm.
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.frontend.tensor import Tensor
from ember.core.type_promotion import elementwise_dtypes

from . import explicit_kernel, wrapped_number

_LN2 = math.log(2.0)
_LARGE = 1e8        # beyond it, x**2 + 1 == x**2 in float64: use the asymptotic forms


def _dtypes(rule, *operands):
    return elementwise_dtypes(*operands, rule=rule)


def _opmath(rule: str):
    """Run the kernel in the op's computation dtype and round once to its result dtype."""
    def wrap(kernel):
        def run(*args):
            operands = [a for a in args if isinstance(a, (Tensor, bool, int, float))]
            compute, result = _dtypes(rule, *operands)
            cast = [F._to_copy(a, dtype=compute) if isinstance(a, Tensor) and a.dtype is not compute else a
                    for a in args]
            out = kernel(*cast)
            return out if out.dtype is result else F._to_copy(out, dtype=result)
        run.__name__ = run.__qualname__ = kernel.__name__
        run.__doc__ = kernel.__doc__
        return run
    return wrap


def _is_float(x) -> bool:
    return x.dtype.is_floating_point if isinstance(x, Tensor) else isinstance(x, float)


# ------------------------------------------------------------------------ arithmetic
@explicit_kernel("sub.Tensor")
def sub(self, other, alpha=1):
    return F.add(self, other, alpha=-alpha)


@explicit_kernel("reciprocal")
@_opmath("int_to_float")
def reciprocal(self):
    return F.div(1.0, self)


@explicit_kernel("frac")
@_opmath("default")
def frac(self):
    return F.sub(self, F.trunc(self))


@explicit_kernel("remainder.Tensor")
def remainder(self, other):
    """fmod, moved into the sign of `other` (Python's %)."""
    if not isinstance(self, Tensor):              # remainder(2, t): fmod takes no number for self
        self = wrapped_number(self, other)
    r = F.fmod(self, other)
    if not r.dtype.is_signed:
        return r                                  # nothing is negative in uint8
    other_negative = F.lt(other, 0) if isinstance(other, Tensor) else other < 0
    wrong_sign = F.logical_and(F.ne(r, 0), F.ne(F.lt(r, 0), other_negative))
    return F.where(wrong_sign, F.add(r, other), r)


@explicit_kernel("hypot")
@_opmath("default")
def hypot(self, other):
    """m * sqrt(1 + (n / m)**2) with m = max(|a|, |b|): no overflow of the squares."""
    a, b = F.abs(self), F.abs(other)
    big, small = F.maximum(a, b), F.minimum(a, b)
    ratio = F.div(small, F.where(F.eq(big, 0), 1.0, big))
    out = F.mul(big, F.sqrt(F.add(F.mul(ratio, ratio), 1.0)))
    either_inf = F.logical_or(F.isinf(a), F.isinf(b))
    return F.where(either_inf, math.inf, out)     # hypot(inf, nan) is inf, as C's


@explicit_kernel("maximum")
def maximum(self, other):
    return F.where(F.logical_or(F.isnan(self), F.lt(other, self)), self, other)


@explicit_kernel("minimum")
def minimum(self, other):
    return F.where(F.logical_or(F.isnan(self), F.lt(self, other)), self, other)


# ------------------------------------------------------------------ exponentials, logs
@explicit_kernel("exp2")
@_opmath("int_to_float")
def exp2(self):
    return F.pow(2.0, self)


@explicit_kernel("log2")
@_opmath("int_to_float")
def log2(self):
    return F.mul(F.log(self), 1.0 / _LN2)


@explicit_kernel("log10")
@_opmath("int_to_float")
def log10(self):
    return F.mul(F.log(self), 1.0 / math.log(10.0))


# ------------------------------------------------------------------- trigonometric
@explicit_kernel("tan")
@_opmath("int_to_float")
def tan(self):
    return F.div(F.sin(self), F.cos(self))


def _sqrt_one_minus_square(x):
    return F.sqrt(F.mul(F.sub(1.0, x), F.add(x, 1.0)))     # (1-x)(1+x): exact near |x| = 1


@explicit_kernel("asin")
@_opmath("int_to_float")
def asin(self):
    return F.atan2(self, _sqrt_one_minus_square(self))


@explicit_kernel("acos")
@_opmath("int_to_float")
def acos(self):
    return F.atan2(_sqrt_one_minus_square(self), self)


@explicit_kernel("atan")
@_opmath("int_to_float")
def atan(self):
    return F.atan2(self, F.ones_like(self))


# ---------------------------------------------------------------------- hyperbolic
@explicit_kernel("sinh")
@_opmath("int_to_float")
def sinh(self):
    """(e + e / (e + 1)) / 2 with e = expm1(|x|) near 0; exp(|x| - ln 2) - exp(-|x|) / 2 beyond."""
    ax = F.abs(self)
    e = F.expm1(F.clamp(ax, max=1.0))
    small = F.mul(F.add(e, F.div(e, F.add(e, 1.0))), 0.5)
    large = F.sub(F.exp(F.sub(ax, _LN2)), F.mul(F.exp(F.neg(ax)), 0.5))
    magnitude = F.where(F.lt(ax, 1.0), small, large)
    return F.where(F.lt(self, 0), F.neg(magnitude), F.where(F.eq(self, 0), self, magnitude))


@explicit_kernel("cosh")
@_opmath("int_to_float")
def cosh(self):
    ax = F.abs(self)
    return F.add(F.exp(F.sub(ax, _LN2)), F.mul(F.exp(F.neg(ax)), 0.5))


@explicit_kernel("asinh")
@_opmath("int_to_float")
def asinh(self):
    """sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); log(2|x|) for huge |x|."""
    ax = F.abs(self)
    capped = F.clamp(ax, max=_LARGE)
    sq = F.mul(capped, capped)
    near = F.log1p(F.add(capped, F.div(sq, F.add(F.sqrt(F.add(sq, 1.0)), 1.0))))
    far = F.add(F.log(ax), _LN2)
    magnitude = F.where(F.lt(ax, _LARGE), near, far)
    return F.where(F.lt(self, 0), F.neg(magnitude), F.where(F.eq(self, 0), self, magnitude))


@explicit_kernel("acosh")
@_opmath("int_to_float")
def acosh(self):
    """log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1); log(2x) for huge x."""
    t = F.sub(F.clamp(self, max=_LARGE), 1.0)
    near = F.log1p(F.add(t, F.sqrt(F.mul(t, F.add(t, 2.0)))))
    far = F.add(F.log(self), _LN2)
    return F.where(F.lt(self, _LARGE), near, far)


@explicit_kernel("atanh")
@_opmath("int_to_float")
def atanh(self):
    return F.mul(F.log1p(F.div(F.mul(self, 2.0), F.sub(1.0, self))), 0.5)


# ------------------------------------------------------------------------- rounding
@explicit_kernel("ceil")
def ceil(self):
    return F.neg(F.floor(F.neg(self))) if _is_float(self) else F.clone(self)


@explicit_kernel("trunc")
def trunc(self):
    return F.where(F.lt(self, 0), F.ceil(self), F.floor(self)) if _is_float(self) else F.clone(self)


# ------------------------------------------------------------------- classification
@explicit_kernel("isnan")
def isnan(self):
    return F.ne(self, self) if _is_float(self) else F.zeros_like(self, dtype=_dt.bool)


@explicit_kernel("isinf")
def isinf(self):
    return F.eq(F.abs(self), math.inf) if _is_float(self) else F.zeros_like(self, dtype=_dt.bool)


@explicit_kernel("isfinite")
def isfinite(self):
    """x - x is 0 for finite x, NaN for inf and NaN."""
    return F.eq(F.sub(self, self), 0) if _is_float(self) else F.ones_like(self, dtype=_dt.bool)


# -------------------------------------------------------------------- comparisons
@explicit_kernel("ne.Tensor")
def ne(self, other):
    return F.eq(F.eq(self, other), False)


@explicit_kernel("gt.Tensor")
def gt(self, other):
    return F.lt(other if isinstance(other, Tensor) else wrapped_number(other, self), self)


@explicit_kernel("ge.Tensor")
def ge(self, other):
    return F.le(other if isinstance(other, Tensor) else wrapped_number(other, self), self)


# ------------------------------------------------------------------ logical, bitwise
def _truth(x):
    return F.ne(x, 0)


@explicit_kernel("logical_not")
def logical_not(self):
    return F.eq(self, 0)


@explicit_kernel("logical_and")
def logical_and(self, other):
    return F.bitwise_and(_truth(self), _truth(other))


@explicit_kernel("logical_or")
def logical_or(self, other):
    return F.bitwise_or(_truth(self), _truth(other))


@explicit_kernel("logical_xor")
def logical_xor(self, other):
    return F.ne(_truth(self), _truth(other))


_ALL_ONES = {_dt.bool: True, _dt.uint8: 255}


@explicit_kernel("bitwise_not")
def bitwise_not(self):
    return F.bitwise_xor(self, _ALL_ONES.get(self.dtype, -1))


# ---------------------------------------------------------------------- linear algebra
@explicit_kernel("mm")
def mm(self, mat2):
    return F.select(F.bmm(F.unsqueeze(self, 0), F.unsqueeze(mat2, 0)), 0, 0)
