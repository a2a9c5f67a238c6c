"""torch.nn.functional activations (and softmax/log_softmax, sigmoid, tanh), signature for signature."""
from __future__ import annotations

import warnings

from ember._generated import functions as _F
from ember.errors import ArgumentListError

__all__ = ["relu", "relu_", "relu6", "gelu", "silu", "softplus", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu",
           "celu", "hardtanh", "hardtanh_", "mish", "hardswish", "hardsigmoid", "sigmoid", "tanh", "softmax",
           "log_softmax", "softmin", "logsigmoid", "softsign", "tanhshrink", "normalize"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def relu(input, inplace: bool = False):
    """max(x, 0) elementwise (in place with inplace=True)."""
    return _F.relu_(input) if inplace else _F.relu(input)


def relu_(input):
    return _F.relu_(input)


def relu6(input, inplace: bool = False):
    """min(max(x, 0), 6): hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def gelu(input, approximate: str = "none"):
    """x * Phi(x); approximate="tanh" uses the tanh approximation."""
    return _F.gelu(input, approximate=approximate)


def silu(input, inplace: bool = False):
    """x * sigmoid(x)."""
    return _F.silu_(input) if inplace else _F.silu(input)


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta * x)) / beta, linear above `threshold`."""
    return _F.softplus(input, beta, threshold)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    return _F.leaky_relu_(input, negative_slope) if inplace else _F.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope: float = 0.01):
    return _F.leaky_relu_(input, negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _F.elu_(input, alpha) if inplace else _F.elu(input, alpha)


def elu_(input, alpha: float = 1.0):
    return _F.elu_(input, alpha)


def selu(input, inplace: bool = False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    fn = _F.elu_ if inplace else _F.elu
    return fn(input, _SELU_ALPHA, _SELU_SCALE)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ArgumentListError("ZeroDivisionError: alpha cannot be 0 for CELU")
    fn = _F.elu_ if inplace else _F.elu
    return fn(input, alpha, 1.0, 1.0 / alpha)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if min_val > max_val:
        raise ArgumentListError("min_val cannot be greater than max_val")
    return _F.hardtanh_(input, min_val, max_val) if inplace else _F.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, True)


def mish(input, inplace: bool = False):
    return _F.mish_(input) if inplace else _F.mish(input)


def hardswish(input, inplace: bool = False):
    return _F.hardswish_(input) if inplace else _F.hardswish(input)


def hardsigmoid(input, inplace: bool = False):
    return _F.hardsigmoid_(input) if inplace else _F.hardsigmoid(input)


def sigmoid(input):
    return _F.sigmoid(input)


def tanh(input):
    return _F.tanh(input)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _F.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """softmax(-input) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _F.softmax(_F.neg(input), dim, dtype=dtype)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x), computed stably."""
    return _F.neg(_F.softplus(_F.neg(input)))


def softsign(input):
    """x / (1 + |x|)."""
    return _F.div(input, _F.add(_F.abs(input), 1))


def tanhshrink(input):
    """x - tanh(x)."""
    return _F.sub(input, _F.tanh(input))


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if p == 2:
        norm = _F.sqrt(_F.sum(_F.mul(input, input), dim, True))
    elif p == float("inf"):
        norm = _F.amax(_F.abs(input), dim, True)
    elif p == 1:
        norm = _F.sum(_F.abs(input), dim, True)
    else:
        norm = _F.pow(_F.sum(_F.pow(_F.abs(input), p), dim, True), 1.0 / p)
    result = _F.div(input, _F.clamp(norm, min=eps))
    return result if out is None else _F.copy_(out, result)
