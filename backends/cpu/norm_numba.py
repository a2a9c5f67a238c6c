"""Layer normalization (forward and backward) as numba loops over rows, for the cpu backend.

The numpy kernels (array_kernels/normalization.py) make a whole-array pass per step: the mean, x less it,
its square, the variance, the scaling, the weight, the bias, and about twice as many for the backward,
each a temporary the size of the input. A transformer normalises a (tokens, features) activation a few
times per block and its features fit in cache, so these loops take one row at a time: the row's
statistics, then its output, in two reads of the row.

Statistics accumulate in float64 (two passes: the mean, then the squares about it, so no cancellation),
with `fastmath={"reassoc"}` on those sums only, which lets LLVM vectorise them (the order of a sum's terms
then differs from numpy's pairwise one: the results are within float32's rounding of the numpy kernel's,
not its bits, so plugin.py serves layer norm from these loops from a process's first call). The output is
centred and scaled in float64 too (a row's float32 mean is itself rounded: a row of values near 1000
would be off by float32's spacing there, as torch's and the numpy kernel's are), then scaled by the weight
and shifted in float32 (float64 for float64 inputs); the gradients are computed in the compute dtype in the
numpy kernel's order of operations, from the saved (rounded) statistics, as torch's are. float16/bfloat16 inputs are computed in float32 and rounded once, as the numpy kernel does.
The weight's and bias's gradients sum over rows in float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ember.core import dtype as _dt
from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["KERNELS"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")
_SUMS = dict(_JIT, fastmath={"reassoc"})        # only the float64 sums may be reordered (vectorised)
_LOW = frozenset(to_numpy_dtype(d) for d in (_dt.float16, _dt.bfloat16))
_FLOATS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


@njit(**_SUMS)
def _row_mean_and_rstd(row, eps):
    """(mean, 1 / sqrt(variance + eps)) of one row, in float64."""
    total = 0.0
    for j in range(row.size):
        total += np.float64(row[j])
    mean = total / row.size
    squares = 0.0
    for j in range(row.size):
        d = np.float64(row[j]) - mean
        squares += d * d
    return mean, 1.0 / math.sqrt(squares / row.size + eps)


@njit(**_JIT)
def _forward(x, w, b, eps, out, mean, rstd):
    """x, out: (rows, n); w, b: (n,) or empty (absent); mean, rstd: (rows,); all in the compute dtype."""
    n = x.shape[1]
    with_w, with_b = w.size > 0, b.size > 0
    for r in range(x.shape[0]):
        m64, s64 = _row_mean_and_rstd(x[r], eps)
        mean[r], rstd[r] = m64, s64
        for j in range(n):
            v = out.dtype.type((np.float64(x[r, j]) - m64) * s64)     # centred about the unrounded mean
            if with_w:
                v = v * w[j]
            if with_b:
                v = v + b[j]
            out[r, j] = v


@njit(**_SUMS)
def _row_sums(g, x, w, m, s):
    """(sum g', sum g' xhat) of one row in float64, g' = g w, xhat = (x - m) s."""
    with_w = w.size > 0
    total = 0.0
    total_xhat = 0.0
    for j in range(x.size):
        gw = g[j] * w[j] if with_w else g[j]
        total += np.float64(gw)
        total_xhat += np.float64(gw * ((x[j] - m) * s))
    return total, total_xhat


@njit(**_JIT)
def _backward(g, x, mean, rstd, w, gi, gw, gb):
    """gi (rows, n) or empty: rstd (g' - mean(g') - xhat mean(g' xhat)); gw, gb (n,) float64 or empty: the sums
    over rows of g xhat and of g."""
    rows, n = x.shape
    with_w, want_gi, want_gw, want_gb = w.size > 0, gi.size > 0, gw.size > 0, gb.size > 0
    for r in range(rows):
        m, s = x.dtype.type(mean[r]), x.dtype.type(rstd[r])
        if want_gi:
            total, total_xhat = _row_sums(g[r], x[r], w, m, s)
            centre, slope = x.dtype.type(total / n), x.dtype.type(total_xhat / n)
            for j in range(n):
                xhat = (x[r, j] - m) * s
                gwj = g[r, j] * w[j] if with_w else g[r, j]
                gi[r, j] = ((gwj - centre) - xhat * slope) * s
        if want_gw:
            for j in range(n):
                gw[j] += np.float64(g[r, j] * ((x[r, j] - m) * s))
        if want_gb:
            for j in range(n):
                gb[j] += np.float64(g[r, j])


def _compute_dtype(x):
    """The dtype the loops compute x's rows in (float32 for float16/bfloat16), None where they do not serve x."""
    if x.dtype in _FLOATS:
        return x.dtype
    return np.dtype(np.float32) if x.dtype in _LOW else None


def _rows(a, acc, n):
    """`a` as contiguous (rows, n) of the compute dtype (a copy only where it is not one already)."""
    return np.ascontiguousarray(a, dtype=acc).reshape(-1, n)


def _vector(a, acc, n):
    return np.empty(0, acc) if a is None else np.ascontiguousarray(a, dtype=acc).reshape(n)


def native_layer_norm(specs, x, normalized_shape, w, b, eps):
    acc = _compute_dtype(x)
    n = math.prod(normalized_shape)
    if acc is None or x.size == 0 or n == 0:
        return NotImplemented
    rows = _rows(x, acc, n)
    out = np.empty(rows.shape, acc)
    mean, rstd = np.empty(rows.shape[0], acc), np.empty(rows.shape[0], acc)
    _forward(rows, _vector(w, acc, n), _vector(b, acc, n), float(eps), out, mean, rstd)
    return tuple(result.reshape(spec[0]).astype(to_numpy_dtype(spec[1]), copy=False)
                 for spec, result in zip(specs, (out, mean, rstd)))


def native_layer_norm_backward(specs, g, x, normalized_shape, mean, rstd, w, b, output_mask):
    acc = _compute_dtype(x)
    n = math.prod(normalized_shape)
    if acc is None or x.size == 0 or n == 0 or g.shape != x.shape:
        return NotImplemented
    rows, grad = _rows(x, acc, n), _rows(g, acc, n)
    gi = np.empty(rows.shape, acc) if specs[0] is not None else np.empty((0, 0), acc)
    gw = np.zeros(n) if specs[1] is not None else np.empty(0)
    gb = np.zeros(n) if specs[2] is not None else np.empty(0)
    _backward(grad, rows, _vector(mean, acc, rows.shape[0]), _vector(rstd, acc, rows.shape[0]),
              _vector(w, acc, n), gi, gw, gb)
    return tuple(None if spec is None else result.reshape(spec[0]).astype(to_numpy_dtype(spec[1]))
                 for spec, result in zip(specs, (gi, gw, gb)))


KERNELS = {"native_layer_norm": native_layer_norm, "native_layer_norm_backward": native_layer_norm_backward}
