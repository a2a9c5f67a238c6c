"""ember.nn.init: in-place parameter initialisers (torch.nn.init's functions and formulas).

Every function fills its tensor under no_grad and returns it. Random draws go through the
tensor's own `uniform_`/`normal_` (Philox), so results are deterministic under
`ember.manual_seed` (the numbers differ from PyTorch's generator).
`orthogonal_` needs a QR factorisation, which ember has no op for: it runs a Householder QR
(numpy's `linalg.qr`) on the host, on a matrix drawn from ember's generator, and copies the
result back to the tensor's device.
"""
from __future__ import annotations

import math
import warnings

from ember._generated import functions as _F
from ember.frontend.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal"]


def _no_grad():
    import ember

    return ember.no_grad()


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (torch.nn.init.calculate_gain's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    with _no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std**2)."""
    with _no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std**2) truncated to [a, b] (inverse-cdf method, as torch)."""
    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    import ember

    with _no_grad():
        lo = norm_cdf((a - mean) / std)
        hi = norm_cdf((b - mean) / std)
        u = ember.empty(tensor.shape, dtype=ember.float64, device=tensor.device)
        u.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        x = _F.erfinv(u).mul_(std * math.sqrt(2.0)).add_(mean).clamp_(min=a, max=b)
        tensor.copy_(x)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    with _no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    with _no_grad():
        return tensor.fill_(1)


def zeros_(tensor: Tensor) -> Tensor:
    with _no_grad():
        return tensor.fill_(0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity."""
    import ember

    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _no_grad():
        tensor.copy_(ember.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D tensor with the Dirac delta (identity convolution)."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with _no_grad():
        tensor.fill_(0)
        for g in range(groups):
            for d in range(min_dim):
                index = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in tensor.shape[2:])
                tensor[index] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan_mode)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """N(0, std**2) with std = gain(nonlinearity, a) / sqrt(fan_mode)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix, as torch: QR of a normal matrix, signs fixed by diag(R).

    The QR (Householder, numpy's LAPACK geqrf) runs on the host in float64: ember has no
    QR op. The normal matrix comes from ember's generator, so the result is deterministic
    under manual_seed.
    """
    import numpy as np

    import ember

    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = ember.empty(rows, cols, dtype=ember.float64).normal_(0, 1, generator=generator)
    a = flattened.numpy()
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    d = np.sign(np.diag(r))
    d[d == 0] = 1
    q = q * d
    if rows < cols:
        q = q.T
    with _no_grad():
        tensor.view_as(tensor).copy_(ember.tensor(np.ascontiguousarray(q) * gain, dtype=tensor.dtype,
                                                  device=tensor.device).reshape(tensor.shape))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D tensor whose columns have `sparsity` of their entries zero, the rest N(0, std**2)."""
    import ember

    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with _no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            row_indices = ember.randperm(rows, generator=generator) if generator is not None else ember.randperm(rows)
            tensor[row_indices[:num_zeros], col_idx] = 0
    return tensor


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    old.__name__ = new.__name__[:-1]
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
