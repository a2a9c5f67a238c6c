"""The fused attention's softmax passes as numba loops, for the cpu backend's float32/float64 calls.

The numpy kernels (array_kernels/attention.py) compute softmax(q k^T scale [+ causal -inf]) in seven
whole-array passes over the scores: the scaling, the mask, the row maxima (numpy's max along a short
last axis is several times slower than an elementwise pass), the subtraction, exp, the row sums, the
division; the backward as many again. Here the matrix products stay numpy's (BLAS), exp stays numpy's
(SIMD; numba's would be libm's scalar call), the row sums of the weights are a product with a vector of
ones (BLAS), and the rest is fused into loops over rows:

  forward:  one loop scales each row, masks the keys after the query's position and subtracts the
            row's maximum; numpy exponentiates in place; one loop divides by the row sums;
  backward: one loop rebuilds the scores less the saved logsumexp (numpy exponentiates them into the
            weights A); after dP = G V^T, one loop computes dS = A dP - A (rowsum(A dP) - GL), the row
            sum in float64 (its terms reordered so that LLVM vectorises it).

Every elementwise step is the numpy kernel's float operation in its order; the row sums are summed in
another order, so results are within float32's rounding of the numpy kernel's, not its bits: plugin.py
serves the calls from these loops from a process's first call. float16/bfloat16 (computed in float32 by
the numpy kernel), batch dims that differ between q, k and v, empty sizes and a missing output gradient
return NotImplemented, which sends the call to the numpy kernel.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["KERNELS"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")
_SUMS = dict(_JIT, fastmath={"reassoc"})        # only the float64 row sums may be reordered (vectorised)
_FLOATS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


@njit(**_JIT)
def _keys(r, queries, keys, causal):
    """How many leading keys row `r` of the scores (query r % queries) attends to."""
    return min(r % queries + 1, keys) if causal else keys


@njit(**_JIT)
def _scaled_less_row_max(s, scale, queries, causal, top):
    """s = s scale - the row's maximum of that (-inf after the query's position when causal); top = the maximum.

    For scale > 0 the maximum of the scaled row is its maximum scaled, bit for bit (rounding is monotonic),
    so the loop takes the maximum of the row as it is. It skips a NaN, unlike numpy's max; the row's output
    and logsumexp are NaN all the same (the NaN reaches the row's sum)."""
    rows, keys = s.shape
    for r in range(rows):
        n = _keys(r, queries, keys, causal)
        row = s[r]
        m = s.dtype.type(-np.inf)                   # (a float64 -inf would take the loop to float64)
        for j in range(n):
            v = row[j]
            m = v if v > m else m
        m = m * scale
        for j in range(n):
            row[j] = row[j] * scale - m
        for j in range(n, keys):
            row[j] = -np.inf
        top[r] = m


@njit(**_JIT)
def _divide_rows(s, total):
    for r in range(s.shape[0]):
        t = total[r]
        for j in range(s.shape[1]):
            s[r, j] = s[r, j] / t


@njit(**_JIT)
def _scaled_less_lse(s, scale, queries, causal, lse):
    """s = s scale - lse (-inf after the query's position when causal): exp of it is the weights A."""
    rows, keys = s.shape
    for r in range(rows):
        n = _keys(r, queries, keys, causal)
        for j in range(n):
            s[r, j] = s[r, j] * scale - lse[r]
        for j in range(n, keys):
            s[r, j] = -np.inf


@njit(**_SUMS)
def _row_dot(a, b):
    total = 0.0
    for j in range(a.size):
        total += np.float64(a[j] * b[j])
    return total


@njit(**_JIT)
def _softmax_backward(ds, a, gl):
    """ds = A dP - A c, c = rowsum(A dP) - GL (gl empty: no logsumexp gradient), from ds = dP in."""
    with_gl = gl.size > 0
    for r in range(ds.shape[0]):
        centre = ds.dtype.type(_row_dot(ds[r], a[r]))
        if with_gl:
            centre = centre - gl[r]
        for j in range(ds.shape[1]):
            ds[r, j] = ds[r, j] * a[r, j] - a[r, j] * centre


def _serves(dt, *arrays) -> bool:
    q, k = arrays[0], arrays[1]
    return (dt in _FLOATS and all(a.dtype == dt for a in arrays) and q.ndim >= 2
            and all(a.shape[:-2] == q.shape[:-2] for a in arrays[1:3]) and q.size > 0 and k.size > 0)


def sdpa_fused(specs, q, k, v, is_causal=False, scale=1.0):
    dt = to_numpy_dtype(specs[0][1])
    if not _serves(dt, q, k, v) or v.size == 0 or not scale > 0:
        return NotImplemented
    queries, keys = q.shape[-2], k.shape[-2]
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    rows = s.reshape(-1, keys)
    top = np.empty(rows.shape[0], dt)
    _scaled_less_row_max(rows, dt.type(scale), queries, is_causal, top)
    np.exp(s, out=s)
    total = np.matmul(rows, np.ones(keys, dt))          # the row sums as one BLAS product
    _divide_rows(rows, total)
    out = np.matmul(s, v)
    lse = np.log(total, out=total)
    lse += top
    return np.ascontiguousarray(out), lse.reshape(s.shape[:-1])


def sdpa_fused_backward(specs, g, gl, q, k, v, lse, is_causal, scale, output_mask):
    dt = q.dtype
    if g is None or not _serves(dt, q, k, v, g) or lse.dtype != dt or (gl is not None and gl.dtype != dt):
        return NotImplemented
    queries, keys = q.shape[-2], k.shape[-2]
    scale = dt.type(scale)
    a = np.matmul(q, np.swapaxes(k, -1, -2))
    weights = a.reshape(-1, keys)
    _scaled_less_lse(weights, scale, queries, is_causal, np.ascontiguousarray(lse).reshape(-1))
    np.exp(a, out=a)
    out = [None, None, None]
    if specs[2] is not None:
        out[2] = np.ascontiguousarray(np.matmul(np.swapaxes(a, -1, -2), g))
    if specs[0] is not None or specs[1] is not None:
        ds = np.matmul(g, np.swapaxes(v, -1, -2))
        grad_lse = np.empty(0, dt) if gl is None else np.ascontiguousarray(gl).reshape(-1)
        _softmax_backward(ds.reshape(-1, keys), weights, grad_lse)
        if specs[0] is not None:
            dq = np.matmul(ds, k)
            dq *= scale
            out[0] = np.ascontiguousarray(dq)
        if specs[1] is not None:
            dk = np.matmul(np.swapaxes(ds, -1, -2), q)
            dk *= scale
            out[1] = np.ascontiguousarray(dk)
    return tuple(out)


KERNELS = {"_scaled_dot_product_attention_fused": sdpa_fused,
           "_scaled_dot_product_attention_fused_backward": sdpa_fused_backward}
