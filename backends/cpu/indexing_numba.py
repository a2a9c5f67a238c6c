"""embedding's backward (embedding_dense_backward) as a numba loop, for the cpu backend's float32/float64 calls.

The eager kernel (array_kernels/indexing.py) sums the gradient's rows into the weight's gradient with
numpy's `add.at`, which takes a few microseconds per index row even on its fast path: most of a small
language model's embedding backward. This loop adds the same rows in the same order (row by row, in
the order of the indices), so it gives the same bits, and plugin.py switches to it after a process's
first calls. A call it does not take (another dtype, scale_grad_by_freq, an index outside the table)
returns NotImplemented and the eager kernel runs it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["KERNELS"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True, nogil=True)
def _in_range(indices, count) -> bool:
    for i in range(indices.size):
        if indices[i] < 0 or indices[i] >= count:
            return False
    return True


@njit(cache=True, nogil=True)
def _add_rows(out, indices, grad, padding_idx):
    """out[indices[i]] += grad[i] for each i in order, skipping rows of index padding_idx."""
    for i in range(indices.size):
        row = indices[i]
        if row == padding_idx:
            continue
        for j in range(grad.shape[1]):
            out[row, j] += grad[i, j]


def embedding_dense_backward(spec, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    dt = to_numpy_dtype(spec[1])
    if scale_grad_by_freq or grad.dtype != dt or dt not in _FLOATS or grad.ndim == 0 or indices.dtype.kind not in "iu":
        return NotImplemented
    flat = indices.reshape(-1)
    if not _in_range(flat, num_weights):
        return NotImplemented
    dim = grad.shape[-1]
    out = np.zeros((num_weights, dim), dt)
    _add_rows(out, flat, np.ascontiguousarray(grad).reshape(-1, dim), padding_idx if padding_idx >= 0 else -1)
    return out


KERNELS = {"embedding_dense_backward": embedding_dense_backward}
