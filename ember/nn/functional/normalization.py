"""torch.nn.functional's normalizations: batch_norm, instance_norm, layer_norm, group_norm, rms_norm."""
from __future__ import annotations

import math

from ember._generated import functions as _F
from ember.core.errors import ShapeError


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalization; in training mode the running statistics are updated in place."""
    if training:
        size = list(input.shape)
        if math.prod(size[:1] + size[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    return _F.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalization of each (sample, channel) plane: batch norm of the input seen as one sample of N * C
    channels (the running statistics, if any, are updated with the batch average)."""
    size = list(input.shape)
    if use_input_stats and math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    n, c = size[0], size[1]
    x = _F.reshape(input, [1, n * c] + size[2:])
    rep = (lambda t: None if t is None else _F.reshape(_F.expand(_F.unsqueeze(t, 0), [n, c]), [n * c]))
    rm, rv = rep(running_mean), rep(running_var)
    if rm is not None:
        rm, rv = _F.contiguous(_F.clone(rm)), _F.contiguous(_F.clone(rv))
    out = _F.batch_norm(x, rep(weight), rep(bias), rm, rv, use_input_stats, momentum, eps, False)
    if running_mean is not None and use_input_stats:
        with _no_grad():
            running_mean.copy_(_F.mean(_F.reshape(rm, [n, c]), [0]))
            running_var.copy_(_F.mean(_F.reshape(rv, [n, c]), [0]))
    return _F.reshape(out, size)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalization over the trailing `normalized_shape` dims (torch's math path).

    Computed in the input's opmath type (float32 for float16/bfloat16), weight included, then cast
    to the input's dtype; `eps=None` is the machine epsilon of that opmath type, as in PyTorch.
    """
    from ember.core.errors import ArgumentTypeError, ShapeError
    from ember.core import dtype as _dt
    from ember.frontend.tensor import Tensor

    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"rms_norm(): argument 'input' must be Tensor, not {type(input).__name__}")
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    ns = [int(n) for n in normalized_shape]
    shape = list(input.shape)
    if not ns:
        raise ShapeError("rms_norm(): Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                         f"least one element, but got normalized_shape = {ns}")
    if weight is not None and list(weight.shape) != ns:
        raise ShapeError(f"rms_norm(): Expected weight to be of same shape as normalized_shape, but got weight of "
                         f"shape {list(weight.shape)} and normalized_shape = {ns}")
    if len(shape) < len(ns) or shape[len(shape) - len(ns):] != ns:
        raise ShapeError(f"rms_norm(): Given normalized_shape={ns}, expected input with shape "
                         f"[*, {', '.join(map(str, ns))}], but got input of size{shape}")
    if not input.dtype.is_floating_point:
        raise ArgumentTypeError(f"rms_norm(): expected a floating-point input, got {input.dtype}")
    opmath = _dt.float32 if input.dtype in (_dt.float16, _dt.bfloat16) else input.dtype
    if eps is None:
        eps = _machine_eps(opmath)
    x = input.to(opmath)
    dims = list(range(-len(ns), 0))
    out = x * _F.rsqrt(_F.mean(x * x, dims, True) + eps)
    if weight is not None:
        out = out * weight
    return out.to(input.dtype)


def _machine_eps(dtype) -> float:
    """Machine epsilon of a floating ember dtype."""
    from ember.core import dtype as _dt

    return {_dt.float64: 2.220446049250313e-16, _dt.float32: 1.1920928955078125e-07,
            _dt.float16: 0.0009765625, _dt.bfloat16: 0.0078125}[dtype]


def _no_grad():
    from ember.frontend.autograd.grad_mode import no_grad

    return no_grad()


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalization over the trailing `normalized_shape` dims."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    return _F.layer_norm(input, list(normalized_shape), weight, bias, eps, True)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization over `num_groups` groups of channels."""
    if hasattr(input, "dim") and input.dim() < 2:
        raise ShapeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    return _F.group_norm(input, num_groups, weight, bias, eps, True)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """Each element divided by (k + alpha * the mean of the squares of `size` neighbouring channels) ** beta
    (torch's formula: average pooling of the padded squares over the channel dimension)."""
    from .padding import pad
    from .pooling import avg_pool2d, avg_pool3d

    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = _F.unsqueeze(_F.mul(input, input), 1)
    if dim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = _F.squeeze(avg_pool2d(div, (size, 1), stride=1), 1)
    else:
        sizes = tuple(input.shape)
        div = _F.reshape(div, (sizes[0], 1, sizes[1], sizes[2], -1))
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = _F.reshape(_F.squeeze(avg_pool3d(div, (size, 1, 1), stride=1), 1), sizes)
    div = _F.pow(_F.add(_F.mul(div, alpha), k), beta)
    return _F.div(input, div)
