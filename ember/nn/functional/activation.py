"""torch.nn.functional activations (and softmax/log_softmax, sigmoid, tanh), signature for signature."""
from __future__ import annotations

import warnings

from ember._generated import functions as _F
from ember.core.errors import ArgumentListError, ShapeError
from ember.frontend.bindings_support import number_arg

__all__ = ["relu", "relu_", "relu6", "gelu", "silu", "softplus", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu",
           "celu", "hardtanh", "hardtanh_", "mish", "hardswish", "hardsigmoid", "sigmoid", "tanh", "softmax",
           "log_softmax", "softmin", "logsigmoid", "softsign", "tanhshrink", "normalize", "glu", "prelu", "threshold",
           "softshrink", "hardshrink", "pairwise_distance", "rrelu"]

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
    number_arg(alpha, "celu", "alpha", 2)               # before 1 / alpha: torch's TypeError, not Python's
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
    """input / max(||input||_p along dim, eps), the norm being the norm op's (as torch's input.norm): any p,
    0 (the count of non-zeros) and -inf included, floating-point inputs only."""
    norm = _F.norm(input, p, [dim], True)
    result = _F.div(input, _F.clamp(norm, min=eps))
    return result if out is None else _F.copy_(out, result)


def glu(input, dim: int = -1):
    """a * sigmoid(b), a and b the halves of `input` along `dim`."""
    n = input.shape[dim]
    if n % 2:
        raise ShapeError(f"glu(): Halving dimension must be even, but dimension {dim} is size {n}")
    a = _F.slice(input, dim, 0, n // 2)
    b = _F.slice(input, dim, n // 2, n)
    return _F.mul(a, _F.sigmoid(b))


def prelu(input, weight):
    """x where x > 0, else weight * x; weight has 1 element or one per channel (dim 1)."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() >= 2 else input.shape[0] if input.dim() == 1 else 1
        if weight.numel() != channels:
            raise ShapeError(f"prelu(): Mismatch of parameter numbers and input channel size. Found parameter "
                             f"numbers = {weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = _F.reshape(weight, (channels,) + (1,) * (input.dim() - 2))
    return _F.where(_F.gt(input, 0), input, _F.mul(weight, input))


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """x where x > threshold, else value."""
    out = _F.where(_F.gt(input, threshold), input, value)
    return _F.copy_(input, out) if inplace else out


def softshrink(input, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    shrunk = _F.where(_F.gt(input, lambd), _F.sub(input, lambd), _F.where(_F.lt(input, -lambd),
                                                                          _F.add(input, lambd), 0.0))
    return shrunk


def hardshrink(input, lambd: float = 0.5):
    """x where |x| > lambd, else 0."""
    return _F.where(_F.logical_or(_F.gt(input, lambd), _F.lt(input, -lambd)), input, 0.0)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """||x1 - x2 + eps||_p along the last dimension."""
    d = _F.add(_F.sub(x1, x2), eps)
    dim = -1 if d.dim() else None
    if p == float("inf"):
        out = _F.amax(_F.abs(d), dim if dim is not None else (), keepdim)
    elif p == 2:
        out = _F.sqrt(_F.sum(_F.mul(d, d), dim, keepdim))
    else:
        out = _F.pow(_F.sum(_F.pow(_F.abs(d), p), dim, keepdim), 1.0 / p)
    return out


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """leaky_relu with a random negative slope per element, drawn from U(lower, upper), while training; the mean
    slope (lower + upper) / 2 otherwise."""
    if not training:
        out = _F.where(_F.ge(input, 0), input, _F.mul(input, (lower + upper) / 2))
    else:
        slope = _F.add(_F.mul(_F.rand(tuple(input.shape), dtype=input.dtype, device=input.device), upper - lower), lower)
        out = _F.where(_F.ge(input, 0), input, _F.mul(input, slope))
    return _F.copy_(input, out) if inplace else out
