"""relu and its backward (threshold_backward) as numba loops, for the cpu backend's float32/float64 calls.

numpy has no relu: the eager kernels take `maximum(0, a)` (which keeps -0.0 and NaN as torch does) and a
bit mask for the backward, and numpy's float maximum loop runs several times slower than a plain
elementwise loop (on a conv layer's output, about 17 us where an add takes 4). These loops compare each
element once and give the same bits: relu keeps a NaN and -0.0 and writes +0.0 below zero; the backward
passes the gradient where `not x <= threshold` (a NaN passes it) and writes +0.0 elsewhere. plugin.py
switches to them after a process's first calls; a call they do not take (another dtype, a
non-contiguous array, a broadcast gradient, a relu of fewer than RELU_LOOP_MIN elements) returns
NotImplemented and the eager kernel runs it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["KERNELS"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ZEROS = {dtype: dtype.type(0) for dtype in _FLOATS}
_JIT = dict(cache=True, nogil=True)
#: relu over fewer elements is quicker through numpy's maximum (the eager kernel, the same bits) than through a
#: call into the loop: 0.8 against 1.5 us at 4 elements, even at about 1500 (one core of an AMD EPYC)
RELU_LOOP_MIN = 1536


@njit(**_JIT)
def _relu(x, zero, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = zero if v < zero else v


@njit(**_JIT)
def _threshold_backward(g, x, threshold, zero, out):
    for i in range(x.shape[0]):
        out[i] = zero if x[i] <= threshold else g[i]


def _takes(*arrays) -> bool:
    dtype = arrays[0].dtype
    return dtype in _FLOATS and all(a.dtype == dtype and a.flags.c_contiguous for a in arrays)


def relu(spec, a):
    zero = _ZEROS.get(a.dtype)
    if zero is None or a.size < RELU_LOOP_MIN or not a.flags.c_contiguous or to_numpy_dtype(spec[1]) != a.dtype:
        return NotImplemented
    out = np.empty(a.shape, a.dtype)
    _relu(a.reshape(-1), zero, out.reshape(-1))
    return out


def threshold_backward(spec, g, x, threshold):
    if not _takes(g, x) or g.shape != x.shape or to_numpy_dtype(spec[1]) != g.dtype:
        return NotImplemented
    out = np.empty(g.shape, g.dtype)
    _threshold_backward(g.reshape(-1), x.reshape(-1), g.dtype.type(threshold), _ZEROS[g.dtype], out.reshape(-1))
    return out


KERNELS = {"relu": relu, "threshold_backward": threshold_backward}
