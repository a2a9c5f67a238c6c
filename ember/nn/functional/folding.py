"""torch.nn.functional's fold and unfold (the col2im and im2col ops)."""
from __future__ import annotations

from ember._generated import functions as _F


def _pair(v):
    return list(v) if isinstance(v, (list, tuple)) else [v, v]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of an (N, C, H, W) input as columns (N, C * kh * kw, L)."""
    return _F.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums columns of sliding blocks (N, C * kh * kw, L) into an (N, C, *output_size) image."""
    return _F.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))
