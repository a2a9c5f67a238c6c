"""torch.nn.functional's pooling: max/avg pooling (1-d, 2-d, 3-d) and adaptive average pooling."""
from __future__ import annotations

import math

from ember._generated import functions as _F


def _stride(stride):
    return () if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def _one(v):
    return v[0] if isinstance(v, (list, tuple)) else v


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """2-d max pooling and the flat index (h * W + w) of each maximum in its input plane."""
    return _F.max_pool2d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling; with return_indices=True, (values, indices) as torch returns them."""
    if return_indices:
        return tuple(max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode))
    return _F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """1-d max pooling and the index of each maximum along the input's last dim."""
    k, s = _one(kernel_size), _one(stride) if _stride(stride) != () else None
    values, indices = _F.max_pool2d_with_indices(_F.unsqueeze(input, -2), (1, k), (1, k if s is None else s),
                                                 (0, _one(padding)), (1, _one(dilation)), ceil_mode)
    return _F.squeeze(values, [-2]), _F.squeeze(indices, [-2])


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling; with return_indices=True, (values, indices)."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-d average pooling."""
    return _F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-d average pooling (padding counted or not, or a fixed divisor)."""
    return _F.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool1d(input, output_size):
    """1-d average pooling to `output_size`."""
    return _F.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """2-d average pooling to `output_size` (an int, or a pair whose None entries keep the input size)."""
    if isinstance(output_size, (list, tuple)):
        output_size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    elif output_size is None:
        output_size = list(input.shape[-2:])
    else:
        output_size = [output_size, output_size]
    return _F.adaptive_avg_pool2d(input, output_size)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """3-d max pooling and the flat (d * H * W + h * W + w) index of each maximum in its input volume."""
    return _F.max_pool3d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-d max pooling; with return_indices=True, (values, indices) as torch returns them."""
    if return_indices:
        return tuple(max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode))
    return _F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-d average pooling (padding counted or not, or a fixed divisor)."""
    return _F.avg_pool3d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool3d(input, output_size):
    """3-d average pooling to `output_size` (an int, or a triple whose None entries keep the input size)."""
    if isinstance(output_size, (list, tuple)):
        output_size = [input.shape[-3 + i] if s is None else s for i, s in enumerate(output_size)]
    elif output_size is None:
        output_size = list(input.shape[-3:])
    return _F.adaptive_avg_pool3d(input, output_size)


def _lp_pool(input, norm_type: float, kernel_size, stride, ceil_mode: bool, dims: int):
    """(sum over each window of x^p)^(1/p): average pooling of x^p times the window's size, torch's formula
    (sign(out) * relu(|out|), so a negative average of odd powers stays real)."""
    kernel = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[dims]
    out = pool(_F.pow(input, norm_type), kernel, stride, 0, ceil_mode)
    return _F.pow(_F.mul(_F.mul(_F.sign(out), _F.relu(_F.abs(out))), math.prod(kernel)), 1.0 / norm_type)


def lp_pool1d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
