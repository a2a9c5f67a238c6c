"""GELU (exact and tanh, forward and backward) in float32 as numba-compiled loops around one numpy exp.

The eager kernels (array_kernels/activations.py) take the normal CDF from scipy.special.ndtr, which
computes each float32 element through its float64 routine: about 13 ns an element here, where a
transformer's MLP calls GELU on millions per step. numba's own math.erf and math.exp are libm's scalar
calls, not much faster. So the work is split where each tool is fast:

  1. a numba loop (vectorised by LLVM: only arithmetic; the polynomial as fused multiply-adds) computes,
     per element, t = 1 / (1 + z/2) for z = |x| / sqrt 2 and the exponent -z^2 + P(t);
  2. numpy's SIMD exp exponentiates those in place (for the backward, also -z^2, in the same call);
  3. a second numba loop combines: erfc(z) = t exp(-z^2 + P(t)), the CDF is erfc(z) / 2 for x < 0 and
     1 - erfc(z) / 2 otherwise (no cancellation in the tail), and GELU = x CDF; the backward's
     derivative adds x exp(-x^2 / 2) / sqrt(2 pi).

P is the Chebyshev fit of erfc from Press et al., Numerical Recipes (2nd ed., section 6.2), whose
relative error is below 1.2e-7 for every z >= 0; computed in float32 the result is within 4e-7 of the
exact GELU absolutely and 2e-5 relatively over the whole float32 range (torch's float32 GELU rounds
1 + erf to 0 for x below about -5.5, so its relative error there is total). Float32, float16 and
bfloat16 inputs (the last two computed in float32 and rounded once) take this path; float64 and
grad_outputs that broadcast return NotImplemented, which sends the call to the eager kernel.

The tanh GELU takes the same split with no scratch at all: a loop writes the exponent -2 z,
z = sqrt(2/pi) (x + k x^3), into the result's buffer, numpy exponentiates it there, and a second loop
finishes x / (1 + exp(-2 z)) (the backward: its derivative times the gradient). Each loop does the
eager kernel's float32 operations in the eager kernel's order (no fused multiply-add: numba compiles
without fastmath), so both give the same bits, in two passes over memory and one exp where the numpy
kernel makes eight (thirteen for the backward).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ember.core import dtype as _dt
from ember.core.numpy_interop import to_numpy_dtype

from .array_kernels.context import SCRATCH_BLOCK

__all__ = ["KERNELS"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")
#: the exact GELU's polynomial as fused multiply-adds (half the instructions, and each step rounded once)
_POLYNOMIAL = dict(_JIT, fastmath={"contract"})
_F32 = np.dtype(np.float32)
_SERVED = frozenset(to_numpy_dtype(d) for d in (_dt.float32, _dt.float16, _dt.bfloat16))

# erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), P(t) = sum c_k t^k (Numerical Recipes' erfcc)
_C0, _C1, _C2, _C3, _C4 = -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806
_C5, _C6, _C7, _C8, _C9 = 0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277
_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
# the tanh GELU's constants as array_kernels/activations.py multiplies by them (each rounded to float32 there)
_GELU_K = 0.044715
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_TANH_EXPONENT = -2.0 * _SQRT_2_PI
_TANH_SLOPE_K, _TANH_SLOPE = 3.0 * _GELU_K, 2.0 * _SQRT_2_PI


@njit(**_POLYNOMIAL)
def _erfc_terms(v):
    """(t, -z^2 + P(t), -z^2) for one element, z = |v| / sqrt 2."""
    f = np.float32
    z = abs(v) * f(_SQRT1_2)
    t = f(1.0) / (f(1.0) + f(0.5) * z)
    p = f(_C9)
    p = p * t + f(_C8)
    p = p * t + f(_C7)
    p = p * t + f(_C6)
    p = p * t + f(_C5)
    p = p * t + f(_C4)
    p = p * t + f(_C3)
    p = p * t + f(_C2)
    p = p * t + f(_C1)
    p = p * t + f(_C0)
    return t, p - z * z, -z * z


@njit(**_POLYNOMIAL)
def _exponents(x, t, arg):
    """t and the exponent -z^2 + P(t) per element. (A loop of its own, not a flag of the backward's: a
    store under a condition keeps LLVM from vectorising.)"""
    for i in range(x.size):
        t[i], arg[i], _ = _erfc_terms(x[i])


@njit(**_POLYNOMIAL)
def _exponents_and_square(x, t, arg, square):
    """_exponents, and -z^2 = -x^2 / 2 per element, for the backward's normal density."""
    for i in range(x.size):
        t[i], arg[i], square[i] = _erfc_terms(x[i])


@njit(**_JIT)
def _forward(x, t, e):
    """t = x CDF(x), from t and e = exp(-z^2 + P(t)). The result overwrites t through the same argument:
    given as two arrays that overlap, LLVM's runtime check would send the loop to its scalar version."""
    f = np.float32
    for i in range(x.size):
        tail = f(0.5) * t[i] * e[i]                 # P(Z > |x|) = erfc(z) / 2
        v = x[i]
        t[i] = v * (tail if v < 0 else f(1.0) - tail)


@njit(**_JIT)
def _backward(x, g, t, e, gauss):
    """t = g (CDF(x) + x pdf(x)), gauss = exp(-x^2 / 2) (in place in t, as the forward)."""
    f = np.float32
    for i in range(x.size):
        tail = f(0.5) * t[i] * e[i]
        v = x[i]
        cdf = tail if v < 0 else f(1.0) - tail
        t[i] = g[i] * (cdf + v * gauss[i] * f(_INV_SQRT_2PI))


@njit(**_JIT)
def _tanh_exponent(x, out):
    """out = -2 z = -2 sqrt(2/pi) (1 + k x^2) x, in the eager kernel's order of float32 operations."""
    f = np.float32
    for i in range(x.size):
        v = x[i]
        out[i] = ((v * v * f(_GELU_K) + f(1.0)) * v) * f(_TANH_EXPONENT)


@njit(**_JIT)
def _tanh_forward(x, e):
    """e = x / (1 + e), e = exp(-2 z) in, the tanh GELU out."""
    f = np.float32
    for i in range(x.size):
        e[i] = x[i] / (e[i] + f(1.0))


@njit(**_JIT)
def _tanh_backward(x, g, e):
    """e = g d, e = exp(-2 z) in: with s = 1 / (1 + e), d = s + (1 - s) s 2 sqrt(2/pi) (1 + 3k x^2) x (the
    derivation is the eager kernel's `_gelu_tanh_derivative`)."""
    f = np.float32
    for i in range(x.size):
        v = x[i]
        s = f(1.0) / (e[i] + f(1.0))
        slope = ((v * v * f(_TANH_SLOPE_K) + f(1.0)) * v) * f(_TANH_SLOPE)
        e[i] = (s + ((f(1.0) - s) * s) * slope) * g[i]


def _flat_float32(a):
    return np.ascontiguousarray(a, dtype=_F32).reshape(-1)


#: elements per block: the exponents live in a scratch of this many (two for the backward), not one the
#: size of the input, so the kernels hold at most 512 KiB besides their result whatever the size
BLOCK = SCRATCH_BLOCK


def _blocks(n: int):
    for start in range(0, n, BLOCK):
        yield start, min(n, start + BLOCK)


def _tanh_gelu(dt, a, g=None):
    """The tanh GELU (g None) or its gradient, computed in the result's float32 buffer."""
    x = _flat_float32(a)
    out = np.empty_like(x)
    _tanh_exponent(x, out)
    with np.errstate(over="ignore"):                 # exp(-2 z) is inf for very negative z, as wanted
        np.exp(out, out=out)
    if g is None:
        _tanh_forward(x, out)
    else:
        _tanh_backward(x, _flat_float32(g), out)
    return out.reshape(a.shape).astype(dt, copy=False)


def gelu(spec, a, approximate="none"):
    dt = to_numpy_dtype(spec[1])
    if dt not in _SERVED or approximate not in ("none", "tanh"):
        return NotImplemented
    if approximate == "tanh":
        return _tanh_gelu(dt, a)
    x = _flat_float32(a)
    out = np.empty_like(x)
    scratch = np.empty(min(x.size, BLOCK), _F32)
    for start, stop in _blocks(x.size):
        xs, os_, e = x[start:stop], out[start:stop], scratch[:stop - start]
        _exponents(xs, os_, e)
        np.exp(e, out=e)
        _forward(xs, os_, e)
    return out.reshape(a.shape).astype(dt, copy=False)


def gelu_backward(spec, g, a, approximate="none"):
    dt = to_numpy_dtype(spec[1])
    if dt not in _SERVED or g.shape != a.shape or approximate not in ("none", "tanh"):
        return NotImplemented
    if approximate == "tanh":
        return _tanh_gelu(dt, a, g)
    x, grad = _flat_float32(a), _flat_float32(g)
    out = np.empty_like(x)
    scratch = np.empty((2, min(x.size, BLOCK)), _F32)    # the two exponents, then their exps, in one numpy call
    for start, stop in _blocks(x.size):
        xs, os_, both = x[start:stop], out[start:stop], scratch[:, :stop - start]
        _exponents_and_square(xs, os_, both[0], both[1])
        np.exp(both, out=both)
        _backward(xs, grad[start:stop], os_, both[0], both[1])
    return out.reshape(a.shape).astype(dt, copy=False)


KERNELS = {"gelu": gelu, "gelu_backward": gelu_backward}
