"""Explicit kernels of the torch.nn.functional activations, and the decompositions of the
gradient ops gelu_backward / silu_backward / threshold_backward (composite, so higher-order gradients work).

float16/bfloat16 inputs are computed in float32 and rounded once, as PyTorch's kernels do.
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.type_promotion import result_type

from . import decomposition, explicit_kernel

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _up(x):
    """x in its computation ("opmath") dtype: float16/bfloat16 compute in float32."""
    return F._to_copy(x, dtype=_dt.float32) if x.dtype in (_dt.float16, _dt.bfloat16) else x


def _down(r, like):
    return r if r.dtype is like.dtype else F._to_copy(r, dtype=like.dtype)


def _promoted(grad_output, self):
    """(grad_output, self) in their common dtype (the backward ops promote), and that dtype's opmath."""
    dtype = result_type(grad_output, self)
    g = grad_output if grad_output.dtype is dtype else F._to_copy(grad_output, dtype=dtype)
    x = self if self.dtype is dtype else F._to_copy(self, dtype=dtype)
    return _up(g), _up(x), x


@explicit_kernel("gelu")
def gelu(self, approximate="none"):
    x = _up(self)
    if approximate == "tanh":
        inner = F.mul(F.add(x, F.mul(F.mul(F.mul(x, x), x), _GELU_K)), _SQRT_2_PI)
        out = F.mul(F.mul(x, 0.5), F.add(F.tanh(inner), 1.0))
    else:
        out = F.mul(F.mul(x, 0.5), F.add(F.erf(F.mul(x, _SQRT1_2)), 1.0))
    return _down(out, self)


@decomposition("gelu_backward")
def gelu_backward(grad_output, self, approximate="none"):
    g, x, like = _promoted(grad_output, self)
    if approximate == "tanh":
        x2 = F.mul(x, x)
        inner = F.mul(F.add(x, F.mul(F.mul(x2, x), _GELU_K)), _SQRT_2_PI)
        t = F.tanh(inner)
        left_d = F.mul(F.add(t, 1.0), 0.5)
        inner_d = F.mul(F.add(F.mul(x2, 3.0 * _GELU_K), 1.0), _SQRT_2_PI)
        right_d = F.mul(F.mul(F.mul(x, 0.5), F.rsub(F.mul(t, t), 1.0)), inner_d)
        d = F.add(left_d, right_d)
    else:
        cdf = F.mul(F.add(F.erf(F.mul(x, _SQRT1_2)), 1.0), 0.5)
        pdf = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), _INV_SQRT_2PI)
        d = F.add(cdf, F.mul(x, pdf))
    return _down(F.mul(g, d), like)


@decomposition("threshold_backward")
def threshold_backward(grad_output, self, threshold):
    dtype = result_type(grad_output, self)
    g = grad_output if grad_output.dtype is dtype else F._to_copy(grad_output, dtype=dtype)
    return F.where(F.le(self, threshold), 0, g)       # a NaN in `self` passes the gradient, as in torch


@explicit_kernel("silu")
def silu(self):
    x = _up(self)
    return _down(F.mul(x, F.sigmoid(x)), self)


@decomposition("silu_backward")
def silu_backward(grad_output, self):
    g, x, like = _promoted(grad_output, self)
    s = F.sigmoid(x)
    return _down(F.mul(F.mul(g, s), F.add(F.mul(x, F.rsub(s, 1.0)), 1.0)), like)


@explicit_kernel("softplus")
def softplus(self, beta=1, threshold=20):
    x = _up(self)
    bx = F.mul(x, beta)
    soft = F.div(F.log1p(F.exp(F.clamp(bx, max=threshold))), beta)    # exp of large values is never taken
    return _down(F.where(F.gt(bx, threshold), x, soft), self)


@explicit_kernel("leaky_relu")
def leaky_relu(self, negative_slope=0.01):
    x = _up(self)
    return _down(F.where(F.gt(x, 0), x, F.mul(x, negative_slope)), self)


@explicit_kernel("elu")
def elu(self, alpha=1, scale=1, input_scale=1):
    x = _up(self)
    negative = F.mul(F.expm1(F.mul(F.clamp(x, max=0.0), input_scale)), alpha * scale)
    return _down(F.where(F.gt(x, 0), F.mul(x, scale), negative), self)


@explicit_kernel("hardtanh")
def hardtanh(self, min_val=-1, max_val=1):
    out = F.clamp(self, min_val, max_val)
    return _down(out, self)


@explicit_kernel("mish")
def mish(self):
    x = _up(self)
    return _down(F.mul(x, F.tanh(F.softplus(x))), self)


@explicit_kernel("hardsigmoid")
def hardsigmoid(self):
    x = _up(self)
    return _down(F.div(F.clamp(F.add(x, 3.0), 0.0, 6.0), 6.0), self)


@explicit_kernel("hardswish")
def hardswish(self):
    x = _up(self)
    return _down(F.div(F.mul(x, F.clamp(F.add(x, 3.0), 0.0, 6.0)), 6.0), self)
