"""Cross entropy with class indices, forward and backward, as the eager kernels compute it (their bits), with
their elementwise numpy calls fused into numba loops.

The eager kernels (array_kernels/losses.py) make about fifteen numpy calls on a classifier's logits, whose
fixed cost is most of the time for a batch of 64 over 10 classes. These keep every numpy call that decides
the bits (the exponentials, the BLAS row sums with a vector of ones, the logarithms, the final sum) and
replace the rest (target checks, row maxima, subtractions, gathers, scaling) by two loops doing the same
IEEE operations in the same order: the same results, bit for bit (tests/test_cpu_numba_kernels.py), so
plugin.py switches to them after a process's first calls, as it does for the optimizer updates. They take
the eager kernels' plain case when its logits fit one scratch block (the eager kernel then exponentiates
them whole too); any other call returns NotImplemented and the eager kernel runs it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

from .array_kernels.context import SCRATCH_BLOCK
from .losses_numba import plain_case

__all__ = ["KERNELS"]

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _shifted(x, target, top, shifted) -> bool:
    """Each row's first maximum (a NaN if the row has one, as numpy's argmax finds it) into `top` and the row
    less it into `shifted`; False when a target is out of range."""
    n, classes = x.shape
    for i in range(n):
        t = target[i]
        if t < 0 or t >= classes:
            return False
        m = x[i, 0]
        for j in range(1, classes):
            v = x[i, j]
            if m == m and (v > m or v != v):
                m = v
        top[i] = m
        for j in range(classes):
            shifted[i, j] = x[i, j] - m
    return True


@njit(**_JIT)
def _picked(x, target, top, log_sum, picked) -> None:
    """The target's log-probability per row, (x - max) - log(sum), and the logsumexp, max + log(sum), written
    over `log_sum`."""
    for i in range(x.shape[0]):
        picked[i] = (x[i, target[i]] - top[i]) - log_sum[i]
        log_sum[i] = top[i] + log_sum[i]


@njit(**_JIT)
def _less_lse(x, target, lse, out) -> bool:
    """out = x less its row's logsumexp; False when a target is out of range."""
    n, classes = x.shape
    for i in range(n):
        t = target[i]
        if t < 0 or t >= classes:
            return False
        for j in range(classes):
            out[i, j] = x[i, j] - lse[i]
    return True


@njit(**_JIT)
def _scaled(out, target, scales) -> None:
    """out *= the row's scale, then the scale taken off at the row's target."""
    for i in range(out.shape[0]):
        s = scales[i if scales.shape[0] > 1 else 0]
        for j in range(out.shape[1]):
            out[i, j] = out[i, j] * s
        out[i, target[i]] = out[i, target[i]] - s


def _plain(x, target, weight, ignore_index, label_smoothing) -> bool:
    """The eager kernels' plain case with the logits exponentiated whole (one scratch block)."""
    return plain_case(x, target, weight, ignore_index, label_smoothing, SCRATCH_BLOCK)


_ONES: dict = {}


def _ones(n: int, dtype) -> np.ndarray:
    """A vector of ones like the one the eager kernel sums rows with (context.row_sums), cached read-only for
    at most 64 class counts, as the kernels' constants are."""
    ones = _ONES.get((n, dtype))
    if ones is None:
        ones = np.ones(n, dtype)
        ones.flags.writeable = False
        if len(_ONES) < 64:
            _ONES[(n, dtype)] = ones
    return ones


def cross_entropy_indices(specs, x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """(loss, logsumexp per row), or NotImplemented."""
    if not _plain(x, target, weight, ignore_index, label_smoothing) or x.dtype != to_numpy_dtype(specs[0][1]):
        return NotImplemented
    n = x.shape[0]
    top = np.empty(n, x.dtype)
    shifted = np.empty_like(x)
    if not _shifted(x, target, top, shifted):
        return NotImplemented                        # the eager kernel names the bad target
    np.exp(shifted, out=shifted)
    log_sum = shifted @ _ones(x.shape[1], x.dtype)
    np.log(log_sum, out=log_sum)
    picked = np.empty(n, x.dtype)
    _picked(x, target, top, log_sum, picked)
    if reduction == 0:
        return np.negative(picked, out=picked), log_sum
    total = -np.add.reduce(picked)
    return np.asarray(total / x.dtype.type(n) if reduction == 1 else total), log_sum


def cross_entropy_indices_backward(spec, grad, x, lse, target, weight, reduction, ignore_index, label_smoothing):
    """d loss / d logits from the logits and the forward's logsumexp, or NotImplemented."""
    if not _plain(x, target, weight, ignore_index, label_smoothing) or grad.dtype != x.dtype \
            or lse.dtype != x.dtype or x.dtype != to_numpy_dtype(spec[1]) or not lse.flags.c_contiguous:
        return NotImplemented
    scale = grad / x.dtype.type(x.shape[0]) if reduction == 1 else grad
    out = np.empty_like(x)
    if not _less_lse(x, target, lse, out):
        return NotImplemented
    np.exp(out, out=out)
    _scaled(out, target, np.ascontiguousarray(scale, dtype=x.dtype).reshape(-1))
    return out


KERNELS = {"_cross_entropy_indices": cross_entropy_indices,
           "_cross_entropy_indices_backward": cross_entropy_indices_backward}
