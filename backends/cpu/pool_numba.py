"""2-D max pooling (values and indices) as a numba loop, for the cpu backend's float32/float64 calls.

The eager kernel (array_kernels/nn_layers.py) compares the windows' values one kernel offset at a time
over strided views of the input; on a small CNN's feature maps each of those numpy calls costs more
than the arithmetic, and the whole op about 6x torch's. This loop visits each window once. It picks
what the eager kernel picks (the first maximum, or the last NaN of a window with NaN as the value), so
plugin.py switches to it after a process's first calls without changing a result.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

from .array_kernels.context import ArrayModule
from .array_kernels.nn_layers import _geometry, _lowest, _pad_spatial

__all__ = ["KERNELS"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _max_pool_loop(kh: int, kw: int):
    """The loop over planes x[p] (padded, (P, Hp, Wp)): values[p, i, j] and the flat index into the unpadded
    (H, width) plane of each window's maximum. `kh`, `kw` None: the kernel size is an argument; numbers: it
    is compiled in (the window loops unrolled: about 3x faster on a 2x2 pool)."""
    fixed = kh is not None

    def loop(x, kernel_h, kernel_w, sh, sw, dh, dw, ph, pw, width, values, indices):
        planes, oh, ow = values.shape
        rows, cols = (kh, kw) if fixed else (kernel_h, kernel_w)
        for p in range(planes):
            for i in range(oh):
                for j in range(ow):
                    h0, w0 = i * sh, j * sw
                    best = x[p, h0, w0]
                    bh, bw = 0, 0
                    for a in range(rows):
                        for b in range(cols):
                            v = x[p, h0 + a * dh, w0 + b * dw]
                            if v > best or v != v:
                                best = v
                                bh, bw = a, b
                    values[p, i, j] = best
                    indices[p, i, j] = (h0 + bh * dh - ph) * width + (w0 + bw * dw - pw)
    return njit(cache=True, nogil=True)(loop)


#: (kh, kw) -> its loop with the kernel size compiled in, for the commonest pools; None: any other size
_LOOPS = {(2, 2): _max_pool_loop(2, 2), (3, 3): _max_pool_loop(3, 3), None: _max_pool_loop(None, None)}


def max_pool2d_with_indices(specs, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The eager kernel's values and indices; NotImplemented for a call the loop does not take."""
    if x.dtype not in _FLOATS or x.ndim not in (3, 4) or to_numpy_dtype(specs[0][1]) != x.dtype:
        return NotImplemented
    unbatched = x.ndim == 3
    x4 = x[None] if unbatched else x
    kernel, stride, padding, dilation, out, extra = _geometry(x4.shape, kernel_size, stride, padding, dilation,
                                                              ceil_mode)
    padded = _pad_spatial(_NUMPY, x4, padding, (padding[0] + extra[0], padding[1] + extra[1]),
                          _lowest(_NUMPY, x4.dtype))
    planes = x4.shape[0] * x4.shape[1]
    values = np.empty((planes,) + out, x.dtype)
    indices = np.empty((planes,) + out, np.int64)
    loop = _LOOPS.get(kernel, _LOOPS[None])
    loop(padded.reshape((planes,) + padded.shape[2:]), kernel[0], kernel[1], stride[0], stride[1], dilation[0],
         dilation[1], padding[0], padding[1], x4.shape[3], values, indices)
    shape = x4.shape[:2] + out
    values, indices = values.reshape(shape), indices.reshape(shape)
    return (values[0], indices[0]) if unbatched else (values, indices)


_NUMPY = ArrayModule(np, to_numpy_dtype)          # what _pad_spatial and _lowest read

KERNELS = {"max_pool2d_with_indices": max_pool2d_with_indices}
