"""torch.nn.functional's convolutions: conv1d/2d/3d and conv_transpose1d/2d/3d."""
from __future__ import annotations

from ember._generated import functions as _F


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution over a (N, C, L) or (C, L) input; `padding` may be "same" or "valid"."""
    return _F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution over a (N, C, H, W) or (C, H, W) input; `padding` may be "same" or "valid"."""
    return _F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution over a (N, C, D, H, W) or (C, D, H, W) input; `padding` may be "same" or "valid"."""
    return _F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-d transposed convolution ("deconvolution"); weight is (C_in, C_out / groups, k)."""
    return _F.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-d transposed convolution ("deconvolution"); weight is (C_in, C_out / groups, kH, kW)."""
    return _F.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-d transposed convolution ("deconvolution"); weight is (C_in, C_out / groups, kD, kH, kW)."""
    return _F.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)
