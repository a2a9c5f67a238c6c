"""Cross entropy with class indices (forward and backward) as numba loops, for compiled code on small batches.

The eager kernels (array_kernels/losses.py) make about fifteen numpy calls, whose fixed cost is most of
the time for a classifier's logits (a batch of 64 over 10 classes: about 13 us, where one loop takes 1).
numba calls libm's scalar exp and log, several times slower per element than numpy's vectorised ones,
so these take only the calls numpy's fixed cost dominates: at most SMALL logits, the common case (2-D
float32/float64 logits, int64 targets in range, no weight, no label smoothing, no ignored class); any
other call returns NotImplemented and the eager kernel runs it. The loss and the saved logsumexp are
computed as the eager kernel computes them, `(x[target] - max) - log(sum(exp(x - max)))` and
`max + log(sum(...))` per row; sums are accumulated in float64, so results match the eager kernel's to a
few units in the last place.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["KERNELS", "SMALL", "plain_case"]

SMALL = 16384               # logits per call, at most
_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def _forward(x, target, lse, losses):
    """the logsumexp and loss of each row of `x`, and (True, the losses' sum in float64); (False, 0) when a
    target is out of range (what was written then does not matter)."""
    n, classes = x.shape
    loss_sum = 0.0
    for i in range(n):
        t = target[i]
        if t < 0 or t >= classes:
            return False, 0.0
        top = x[i, 0]
        for j in range(1, classes):
            if x[i, j] > top or x[i, j] != x[i, j]:
                top = x[i, j]
        total = 0.0
        for j in range(classes):
            total += np.exp(x[i, j] - top)
        log_sum = np.log(total)
        lse[i] = top + log_sum
        losses[i] = -((x[i, t] - top) - log_sum)
        loss_sum += losses[i]
    return True, loss_sum


@njit(**_JIT)
def _backward(scales, x, lse, target, out) -> bool:
    """out = softmax * scale, the target's class less scale, per row; False when a target is out of range."""
    n, classes = x.shape
    for i in range(n):
        t = target[i]
        if t < 0 or t >= classes:
            return False
        s = scales[i if scales.shape[0] > 1 else 0]
        for j in range(classes):
            out[i, j] = np.exp(x[i, j] - lse[i]) * s
        out[i, t] -= s
    return True


def plain_case(x, target, weight, ignore_index, label_smoothing, max_size: int) -> bool:
    """The eager kernels' plain case, which the numba loops take: 2-D C-contiguous float32/float64 logits of at
    most `max_size` elements, one integer target per row, no weight, no label smoothing, no ignored class."""
    return (weight is None and label_smoothing == 0 and x.ndim == 2 and target.ndim == 1
            and target.dtype.kind in "iu" and x.dtype.type in (np.float32, np.float64) and 0 < x.size <= max_size
            and x.flags.c_contiguous and target.shape[0] == x.shape[0] and not 0 <= ignore_index < x.shape[1])


def _plain(x, target, weight, ignore_index, label_smoothing) -> bool:
    """plain_case on at most SMALL logits, int64 targets."""
    return target.dtype == np.int64 and plain_case(x, target, weight, ignore_index, label_smoothing, SMALL)


def cross_entropy_indices(specs, x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """(loss, logsumexp per row), or NotImplemented."""
    if not _plain(x, target, weight, ignore_index, label_smoothing) or x.dtype != to_numpy_dtype(specs[0][1]):
        return NotImplemented
    lse = np.empty(x.shape[0], dtype=x.dtype)
    losses = np.empty(x.shape[0], dtype=x.dtype)
    ok, total = _forward(x, target, lse, losses)
    if not ok:
        return NotImplemented                        # the eager kernel names the bad target
    if reduction == 0:
        return losses, lse
    return np.asarray(total / x.shape[0] if reduction == 1 else total, dtype=x.dtype), lse


def cross_entropy_indices_backward(spec, grad, x, lse, target, weight, reduction, ignore_index, label_smoothing):
    """d loss / d logits from the logits and the forward's logsumexp, or NotImplemented."""
    if not _plain(x, target, weight, ignore_index, label_smoothing) or grad.dtype != x.dtype \
            or x.dtype != to_numpy_dtype(spec[1]) or lse.dtype != x.dtype or not lse.flags.c_contiguous:
        return NotImplemented
    scales = grad.reshape(-1) / x.dtype.type(x.shape[0]) if reduction == 1 else grad.reshape(-1)
    out = np.empty_like(x)
    if not _backward(np.ascontiguousarray(scales), x, lse, target, out):
        return NotImplemented
    return out


KERNELS = {"_cross_entropy_indices": cross_entropy_indices,
           "_cross_entropy_indices_backward": cross_entropy_indices_backward}
