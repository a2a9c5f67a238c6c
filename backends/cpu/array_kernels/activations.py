"""erf (a primitive) and native kernels of the activations, against the array-module API.

erf and the exact GELU's normal CDF come from scipy.special's ufuncs (cupyx.scipy.special's on cupy):
`ndtr(x)`, the CDF itself, is 0.5 (1 + erf(x / sqrt 2)) without the cancellation of 1 + erf for very
negative x. Every kernel computes in the opmath dtype (float32 for float16/bfloat16) and rounds once.
(The cpu backend runs float32 exact GELU through numba-compiled loops instead: ember_cpu.gelu_numba.)
"""
from __future__ import annotations

import math

from .context import ArrayModule, flat_blocks_with_scratch, quiet
from .special import _special

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _square(xp, x):
    """x * x in a new array (an array for 0-d inputs too, so that it can be updated in place)."""
    return xp.multiply(x, x, out=xp.empty_like(x))


def _gelu_tanh_exp(xp, x, x2=None):
    """exp(-2 z), z = sqrt(2/pi) (x + k x^3), in a new buffer (or in `x2` = x * x, overwritten).

    The tanh GELU 0.5 x (1 + tanh z) is x / (1 + exp(-2 z)), since 1 + tanh z = 2 / (1 + exp(-2 z)):
    one exp instead of a tanh (numpy's float32 tanh is about twice its exp here), and no cancellation
    in 1 + tanh z where tanh z is near -1."""
    e = _square(xp, x) if x2 is None else x2
    e *= _GELU_K
    e += 1.0
    e *= x
    e *= -2.0 * _SQRT_2_PI
    with quiet(xp, over="ignore"):       # exp(-2 z) overflows to inf for very negative z, as wanted
        xp.exp(e, out=e)
    return e


def _compute(am: ArrayModule, a, dt):
    """`a` in the compute dtype of result dtype `dt` (float32 for float16/bfloat16; no copy when it has it)."""
    return a.astype(am.f32 if dt in am.lowp else dt, copy=False)


def erf(am: ArrayModule, spec, a):
    dt = am.native_of[spec[1]]
    return am.xp.asarray(_special(am).erf(_compute(am, a, dt))).astype(dt, copy=False)


def normal_pdf_times_x(xp, x):
    """x * exp(-x^2 / 2) / sqrt(2 pi) in a new buffer: the exact GELU's slope beyond its CDF."""
    d = _square(xp, x)
    d *= -0.5
    xp.exp(d, out=d)
    d *= x
    d *= _INV_SQRT_2PI
    return d


def _gelu_tanh_derivative(xp, x, d, slope, e) -> None:
    """d = the tanh GELU's derivative at x; `slope` and `e` are scratch of x's shape.

    With s = 1 / (1 + e), the logistic of 2 z: 1 + t = 2 s and 1 - t^2 = 4 s (1 - s), so
    d = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3k x^2) = s + 2 sqrt(2/pi) x (1 + 3k x^2) s (1 - s)
    (1 - s, not the exact e s: e is inf where z is very negative, and inf * 0 would be NaN)."""
    xp.multiply(x, x, out=slope)
    e[...] = slope
    _gelu_tanh_exp(xp, x, e)
    slope *= 3.0 * _GELU_K
    slope += 1.0
    slope *= x
    slope *= 2.0 * _SQRT_2_PI
    xp.add(e, 1.0, out=d)
    xp.reciprocal(d, out=d)                           # s
    xp.subtract(1.0, d, out=e)                        # 1 - s
    e *= d
    e *= slope
    d += e


def _add_normal_cdf(am: ArrayModule, d, x) -> None:
    """d += ndtr(x), the CDF computed a block at a time into one small scratch (`flat_blocks_with_scratch`), not into
    a buffer the size of x."""
    ndtr = _special(am).ndtr
    if am.scratch_block is None or d.shape != x.shape:
        d += ndtr(x)
        return
    for (dd, xx), (cdf,) in flat_blocks_with_scratch(am, (d, x), 1, d.dtype):
        dd += ndtr(xx, out=cdf)


def gelu(am: ArrayModule, spec, a, approximate="none"):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    if approximate == "tanh":
        out = _gelu_tanh_exp(xp, x)                   # x / (1 + exp(-2 z)), in one buffer
        out += 1.0
        xp.divide(x, out, out=out)
    else:
        out = xp.asarray(_special(am).ndtr(x))       # the normal CDF, in x's dtype
        out *= x
    return xp.asarray(out).astype(dt, copy=False)


def gelu_backward(am: ArrayModule, spec, g, a, approximate="none"):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x, g = _compute(am, a, dt), _compute(am, g, dt)
    if approximate == "tanh":
        d = xp.empty_like(x)                          # (an array for 0-d inputs too)
        alike = g.shape == d.shape
        for (db, xb, *gb), (slope, e) in flat_blocks_with_scratch(am, (d, x, g) if alike else (d, x), 2, x.dtype):
            _gelu_tanh_derivative(xp, xb, db, slope, e)
            if gb:
                db *= gb[0]                           # the result, in place
        if not alike:
            d = d * g                                 # grad_output broadcasts over self
        return d.astype(dt, copy=False)
    d = normal_pdf_times_x(xp, x)
    _add_normal_cdf(am, d, x)
    if g.shape == d.shape:
        d *= g
    else:
        d = d * g
    return xp.asarray(d).astype(dt, copy=False)


def silu(am: ArrayModule, spec, a):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    return xp.asarray(x / (1.0 + xp.exp(-x))).astype(dt, copy=False)


def silu_backward(am: ArrayModule, spec, g, a):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x, g = _compute(am, a, dt), _compute(am, g, dt)
    s = 1.0 / (1.0 + xp.exp(-x))
    return xp.asarray(g * s * (1.0 + x * (1.0 - s))).astype(dt, copy=False)


def leaky_relu(am: ArrayModule, spec, a, negative_slope=0.01):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    return xp.asarray(xp.where(x > 0, x, x * negative_slope)).astype(dt, copy=False)


def softplus(am: ArrayModule, spec, a, beta=1, threshold=20):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    bx = x * beta
    soft = xp.log1p(xp.exp(xp.minimum(bx, threshold))) / beta      # exp of large values is never taken
    return xp.asarray(xp.where(bx > threshold, x, soft)).astype(dt, copy=False)


def elu(am: ArrayModule, spec, a, alpha=1, scale=1, input_scale=1):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    negative = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    return xp.asarray(xp.where(x > 0, x * scale, negative)).astype(dt, copy=False)


def hardtanh(am: ArrayModule, spec, a, min_val=-1, max_val=1):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt) if dt.kind == "f" or dt in am.lowp else a
    return xp.asarray(xp.minimum(xp.maximum(x, min_val), max_val)).astype(dt, copy=False)


def mish(am: ArrayModule, spec, a):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    soft = xp.where(x > 20, x, xp.log1p(xp.exp(xp.minimum(x, 20))))
    return xp.asarray(x * xp.tanh(soft)).astype(dt, copy=False)


def hardsigmoid(am: ArrayModule, spec, a):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    return xp.asarray(xp.clip(x + 3.0, 0.0, 6.0) / 6.0).astype(dt, copy=False)


def hardswish(am: ArrayModule, spec, a):
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = _compute(am, a, dt)
    return xp.asarray(x * xp.clip(x + 3.0, 0.0, 6.0) / 6.0).astype(dt, copy=False)


def threshold_backward(am: ArrayModule, spec, g, x, threshold):
    """g where `not x <= threshold`, else 0 (`not x <= threshold` rather than `x > threshold`: a NaN
    passes the gradient, as in torch).

    On numpy, a float32/64 gradient of x's shape is selected by a bit mask (its bits where kept,
    +0.0's where not): numpy's float `where` loop is not vectorised, and this is about 2.5x faster
    on a layer.
    """
    xp = am.xp
    dt = am.native_of[spec[1]]
    ints = am.float_bits.get(dt)
    if ints is not None and g.dtype == dt and g.shape == x.shape:
        mask = xp.less_equal(x, threshold).view(am.int8)         # 1 where the gradient is zeroed
        mask -= 1                                                 # there 0, elsewhere all bits set
        out = xp.empty(g.shape, dt)
        xp.bitwise_and(g.view(ints), mask, out=out.view(ints))    # the int8 mask widens in the loop
        return out
    return xp.asarray(xp.where(x <= threshold, xp.zeros((), dt), g.astype(dt, copy=False)))


KERNELS = {"erf": erf, "gelu": gelu, "gelu_backward": gelu_backward, "threshold_backward": threshold_backward,
           "silu": silu, "silu_backward": silu_backward, "leaky_relu": leaky_relu, "softplus": softplus,
           "elu": elu, "hardtanh": hardtanh, "mish": mish, "hardsigmoid": hardsigmoid, "hardswish": hardswish}
