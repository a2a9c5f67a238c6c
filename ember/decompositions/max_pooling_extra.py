"""Adaptive and fractional max pooling on ember ops (composite: autograd differentiates through them).

Both find each window's maximum the way PyTorch's kernels scan it: the first maximum in row-major
order, except that a NaN wins (the last NaN of the window). The positions are found on the input's
values alone (no gradient); the values are then gathered from the input at those flat positions, so
the gradient is a scatter-add into the chosen positions, as PyTorch's backward, and the gradient of
that gradient is a gather (double backward works).

Adaptive windows along a dimension of size n are [floor(i*n/out), ceil((i+1)*n/out)); max is separable,
so the argmax is found one dimension at a time, last dimension first, each window padded to the longest
one with -inf. Fractional windows have a fixed size and start at torch's pseudo-random sequence per
plane (`generate_intervals`): start_i = int((i + u) * alpha) - int(u * alpha) with alpha =
(n - k) / (out - 1), the last one n - k, computed in the input's dtype, so the same samples give the
same windows as torch's.
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt

from . import decomposition
from .pooling import _batched, _tup, _window

_NEG_INF = float("-inf")


def first_max_last_nan(v):
    """(..., 1) int64: per row of `v` (last dim) the index of its first maximum, or of its last NaN."""
    k = v.shape[-1]
    arg = F.argmax(v, -1, True)
    if not v.dtype.is_floating_point:
        return arg
    last_nan = F.amax(F.where(F.isnan(v), F.arange(k, device=v.device), -1), [-1], True)
    return F.where(F.ge(last_nan, 0), last_nan, arg)


def _gather_values(x, flat, nd: int):
    """x's values (with autograd) at the flat per-plane positions `flat` (N, C, *out)."""
    lead = tuple(x.shape[:-nd])
    planes = F.reshape(x, lead + (math.prod(x.shape[-nd:]),))
    picked = F.gather(planes, -1, F.reshape(flat, lead + (math.prod(flat.shape[len(lead):]),)))   # no -1: lead may hold a 0
    return F.reshape(picked, tuple(flat.shape))


def _unbatch(values, indices, unbatched: bool):
    """(values, indices), the batch dimension `_batched` added removed again."""
    return (F.squeeze(values, [0]), F.squeeze(indices, [0])) if unbatched else (values, indices)


# ------------------------------------------------------------------------------------- adaptive
def _adaptive_positions(n: int, out: int, device):
    """(positions (out, K), valid (out, K)) of the adaptive windows along a dimension of size n."""
    longest = max((hi - lo for lo, hi in (_window(i, n, out) for i in range(out))), default=0)
    i = F.arange(out, device=device)
    start = F.div(F.mul(i, n), out, rounding_mode="floor")
    end = F.neg(F.div(F.mul(F.add(i, 1), -n), out, rounding_mode="floor"))
    pos = F.add(F.unsqueeze(start, 1), F.arange(longest, device=device))
    valid = F.lt(pos, F.unsqueeze(end, 1))
    return F.where(valid, pos, F.unsqueeze(start, 1)), valid


def _adaptive_argmax_dim(values, carried, inner: int, d: int, out: int):
    """Reduce dim `d` of `values` to `out` adaptive windows: the window maxima and, per output, the flat
    index: the position along d times `inner` (the input's size after d), plus the flat index `carried`
    holds there for the dimensions after d (None when d is the last)."""
    n = values.shape[d]
    pos, valid = _adaptive_positions(n, out, values.device)
    k = pos.shape[1]
    shape = list(values.shape)
    win = F.reshape(F.index_select(values, d, F.reshape(pos, (-1,))), shape[:d] + [out, k] + shape[d + 1:])
    rank = len(shape) + 1
    win = F.permute(win, list(range(d + 1)) + list(range(d + 2, rank)) + [d + 1])     # (..., out, ..., K)
    trailing = (1,) * (len(shape) - d - 1)
    mask = F.reshape(valid, (out,) + trailing + (k,))
    win = F.where(mask, win, F.full((), _NEG_INF, dtype=values.dtype, device=values.device))
    arg = first_max_last_nan(win)
    best = F.squeeze(F.gather(win, -1, arg), [-1])
    at = F.squeeze(F.gather(F.expand(F.reshape(pos, (out,) + trailing + (k,)), tuple(win.shape)), -1, arg), [-1])
    if carried is None:
        return best, at
    return best, F.add(F.mul(at, inner), F.gather(carried, d, at))


def _adaptive_max(self, output_size, nd: int):
    x, unbatched = _batched(self, nd)
    sizes = _tup(output_size, nd)
    if 0 in sizes:                      # nothing to reduce: empty outputs (still connected to the input)
        flat = F.zeros(tuple(x.shape[:-nd]) + sizes, dtype=_dt.int64, device=x.device)
    else:
        best, flat = x.detach(), None
        for j in range(nd - 1, -1, -1):
            d = x.dim() - nd + j
            best, flat = _adaptive_argmax_dim(best, flat, math.prod(x.shape[d + 1:]), d, sizes[j])
    return _unbatch(_gather_values(x, flat, nd), flat, unbatched)


@decomposition("adaptive_max_pool2d")
def adaptive_max_pool2d(self, output_size):
    return _adaptive_max(self, output_size, 2)


@decomposition("adaptive_max_pool3d")
def adaptive_max_pool3d(self, output_size):
    return _adaptive_max(self, output_size, 3)


@decomposition("adaptive_max_pool1d")
def adaptive_max_pool1d(self, output_size):
    values, indices = F.adaptive_max_pool2d(F.unsqueeze(self, -2), [1, _tup(output_size, 1)[0]])
    return F.squeeze(values, [-2]), F.squeeze(indices, [-2])


# ----------------------------------------------------------------------------------- fractional
def fractional_starts(sample, n: int, out: int, k: int):
    """(N, C, out) int64: torch's window starts along a dimension of size n for the samples (N, C) in [0, 1),
    computed in the samples' dtype as torch computes them in the input's scalar type."""
    lead = tuple(sample.shape)
    dev = sample.device
    last = F.full(lead + (min(out, 1),), n - k, dtype=_dt.int64, device=dev)
    if out <= 1:
        return last
    alpha = F.div(F.full((), n - k, dtype=sample.dtype, device=dev), F.full((), out - 1, dtype=sample.dtype, device=dev))
    i = F.arange(out - 1, dtype=sample.dtype, device=dev)
    u = F.unsqueeze(sample, -1)
    start = F.sub(F._to_copy(F.mul(F.add(i, u), alpha), dtype=_dt.int64),
                  F._to_copy(F.mul(u, alpha), dtype=_dt.int64))
    return F.cat([start, last], -1)


def _fractional(self, kernel_size, output_size, random_samples, nd: int):
    x, unbatched = _batched(self, nd)
    N, C = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    kernel, sizes = _tup(kernel_size, nd), _tup(output_size, nd)
    samples = F.slice(random_samples.detach(), 0, 0, N, 1)
    # the samples' order: width then height (2-d); time, height, width (3-d)
    which = (1, 0) if nd == 2 else (0, 1, 2)
    flat = None
    for j in range(nd):
        starts = fractional_starts(F.select(samples, 2, which[j]), spatial[j], sizes[j], kernel[j])
        pos = F.add(F.unsqueeze(starts, -1), F.arange(kernel[j], device=x.device))      # (N, C, out_j, k_j)
        # (N, C, out_0, ..., out_{nd-1}, k_0, ..., k_{nd-1}): this dimension's position at its two axes
        view = [N, C] + [1] * (2 * nd)
        view[2 + j], view[2 + nd + j] = sizes[j], kernel[j]
        pos = F.reshape(pos, view)
        flat = pos if flat is None else F.add(F.mul(flat, spatial[j]), pos)
    full = (N, C) + sizes + kernel
    flat = F.reshape(F.expand(flat, full), (N, C) + sizes + (math.prod(kernel),))
    win = _gather_values(x.detach(), flat, nd)
    chosen = F.squeeze(F.gather(flat, -1, first_max_last_nan(win)), [-1])
    return _unbatch(_gather_values(x, chosen, nd), chosen, unbatched)


@decomposition("fractional_max_pool2d")
def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return _fractional(self, kernel_size, output_size, random_samples, 2)


@decomposition("fractional_max_pool3d")
def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return _fractional(self, kernel_size, output_size, random_samples, 3)
