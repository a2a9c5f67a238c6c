"""2-D convolution's input gradient with its col2im as a numba loop, for the cpu backend's float32/float64 calls.

The eager kernel (array_kernels/nn_layers.py) computes the input gradient as a transposed convolution:
one matmul gives every (output position, kernel offset) its input-channel values, which are then added
back into the input's positions with one strided slice add per kernel offset. On a small CNN's feature
maps those adds, over short runs of channels, cost several times the matmul. This loop adds the same
values in the same order (kernel offsets outermost per position pair, as the slice adds), so results are
bit for bit the eager kernel's, and plugin.py switches to it after a process's first calls. The weight
and bias gradients stay the eager kernel's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

from .array_kernels import nn_layers
from .array_kernels.context import ArrayModule

__all__ = ["KERNELS"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True, nogil=True)
def _col2im(cols, sh, sw, dh, dw, res):
    """res[n, i*sh + a*dh, j*sw + b*dw, g, :] += cols[g, n, i, j, a, b, :], kernel offsets outermost (the
    eager kernel's order of additions into each element)."""
    groups, batch, ih, iw, kh, kw, og = cols.shape
    for a in range(kh):
        for b in range(kw):
            for n in range(batch):
                for i in range(ih):
                    h = i * sh + a * dh
                    for j in range(iw):
                        w = j * sw + b * dw
                        for g in range(groups):
                            for c in range(og):
                                res[n, h, w, g, c] += cols[g, n, i, j, a, b, c]


def _transposed(x, w, stride, padding, dilation, output_padding, groups: int):
    """nn_layers._col2im_transposed with the adds in one loop."""
    cols = nn_layers.transposed_columns(_NUMPY, x, w, groups)
    full = nn_layers.col2im_extent(x.shape[2:], w.shape[2:], stride, dilation, output_padding)
    res = np.zeros((x.shape[0],) + full + (groups, w.shape[1]), dtype=cols.dtype)
    _col2im(cols, stride[0], stride[1], dilation[0], dilation[1], res)
    return nn_layers.cropped_channels_first(_NUMPY, res, padding)


def convolution_backward(specs, g, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                         output_mask):
    """The eager kernel's gradients, the input's through the loop; NotImplemented for a call it does not
    take (no input gradient, a transposed or non-2-D convolution, other dtypes)."""
    if specs[0] is None or transposed or w.ndim != 4 or g.dtype not in _FLOATS \
            or not (g.dtype == x.dtype == w.dtype == to_numpy_dtype(specs[0][1])):
        return NotImplemented
    stride, padding, dilation = (nn_layers._tup(v, 2) for v in (stride, padding, dilation))
    opad = nn_layers.input_gradient_output_padding(x.shape, g.shape, w.shape, stride, padding, dilation)
    grad_input = np.ascontiguousarray(_transposed(g, w, stride, padding, dilation, opad, int(groups)))
    rest = (None, None, None)
    if specs[1] is not None or specs[2] is not None:
        rest = nn_layers.convolution_backward(_NUMPY, (None,) + tuple(specs[1:]), g, x, w, bias_sizes, stride,
                                              padding, dilation, transposed, output_padding, groups, output_mask)
    return (grad_input,) + tuple(rest[1:])


_NUMPY = ArrayModule(np, to_numpy_dtype)

KERNELS = {"convolution_backward": convolution_backward}
