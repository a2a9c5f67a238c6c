"""Native kernels of the normalization layers against the array-module API (numpy and cupy): layer norm and
batch norm, forward and backward. Statistics take one pass per axis set; batch norm's backward sums each
channel's gradient and gradient times normalised input once (products with ones on numpy) and writes the
input gradient over the normalised input's buffer. float16/bfloat16 compute in float32 and round once.
"""
from __future__ import annotations

import math

from .context import ArrayModule, column_sums, row_sums


def _mean(am: ArrayModule, a, axes: tuple):
    """a.mean(axis=axes, keepdims=True) of a float32/64 array, bit for bit, without its scratch: numpy's mean
    divides by the count as float64 into a float32 result through casting buffers (16 bytes per row);
    the division in the array's own dtype rounds the same (for +, -, *, / rounding to float64 first and
    then to float32 gives the float32-rounded result) while the count is exact in that dtype."""
    count = math.prod(a.shape[i] for i in axes)
    if not am.is_numpy or (a.dtype == am.f32 and count >= 1 << 24):
        return a.mean(axis=axes, keepdims=True)
    total = am.add_reduce(a, axis=axes, keepdims=True)
    total /= a.dtype.type(count)
    return total


def native_layer_norm(am: ArrayModule, specs, x, normalized_shape, w, b, eps):
    """(output, mean, rstd) over the trailing `normalized_shape` dims."""
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    acc = am.compute_of[dt]
    xa = x.astype(acc, copy=False)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    if x.size == 0:
        stat = xp.zeros(specs[1][0], dtype=dt)
        return xp.empty(x.shape, dtype=dt), stat, stat.copy()
    mean = _mean(am, xa, axes)
    out = xa - mean                     # centred, then normalised, scaled and shifted in place
    squares = out * out
    rstd = 1.0 / xp.sqrt(_mean(am, squares, axes) + acc.type(eps))
    del squares
    out *= rstd
    if w is not None:
        out *= w.astype(acc, copy=False)
    if b is not None:
        out += b.astype(acc, copy=False)
    return (xp.ascontiguousarray(out, dtype=dt), mean.astype(am.native_of[specs[1][1]]),
            rstd.astype(am.native_of[specs[2][1]]))


def native_layer_norm_backward(am: ArrayModule, specs, g, x, normalized_shape, mean, rstd, w, b, output_mask):
    """The decomposition's formulas in one pass over numpy (no dispatch per step): with
    xhat = (x - mean) * rstd, grad input = rstd (g' - mean(g') - xhat mean(g' xhat)) for
    g' = g * weight; grad weight = sum(g xhat) and grad bias = sum(g) over the outer dims."""
    xp = am.xp
    native_of = am.native_of
    axis = x.ndim - len(normalized_shape)
    dims, outer = tuple(range(axis, x.ndim)), tuple(range(axis))
    if x.size == 0:
        return tuple(None if s is None else xp.zeros(s[0], dtype=native_of[s[1]]) for s in specs)
    acc = am.compute_of[x.dtype]
    stat = x.shape[:axis] + (1,) * len(dims)
    ga = g.astype(acc, copy=False)
    rs = rstd.astype(acc, copy=False).reshape(stat)
    xhat = x.astype(acc) - mean.astype(acc, copy=False).reshape(stat)
    xhat *= rs
    out = [None, None, None]
    if specs[0] is not None:
        gw_in = ga * w.astype(acc, copy=False) if w is not None else ga
        gi = gw_in - _mean(am, gw_in, dims)
        gi -= xhat * _mean(am, gw_in * xhat, dims)
        gi *= rs
        out[0] = xp.ascontiguousarray(gi, dtype=native_of[specs[0][1]])
    if specs[1] is not None:
        prod = ga * xhat
        out[1] = xp.ascontiguousarray(prod.sum(axis=outer) if outer else prod, dtype=native_of[specs[1][1]])
    if specs[2] is not None:
        out[2] = xp.ascontiguousarray(ga.sum(axis=outer) if outer else ga, dtype=native_of[specs[2][1]])
    return tuple(out)


def native_batch_norm(am: ArrayModule, specs, x, w, b, running_mean, running_var, training, momentum, eps):
    """(output, saved mean, saved invstd) over the batch and spatial dims: training normalises with
    the batch statistics and updates the running ones (the variance unbiased); eval uses the
    running ones and saves empty statistics. The centred input is normalised, scaled and shifted in
    place (the squares for the variance its only other array of the input's size); the statistics are
    per-channel sums (`_channel_sums`)."""
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    acc = am.compute_of[dt]
    xa = x.astype(acc, copy=False)
    view = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        n = x.size // max(x.shape[1], 1)
        mean = _channel_sums(am, xa) / n
        out = xp.subtract(xa, mean.reshape(view))
        var = _channel_sums(am, xp.multiply(out, out)) / n
        invstd = 1.0 / xp.sqrt(var + acc.type(eps))
        if running_mean is not None:
            running_mean[...] = (running_mean * (1 - momentum) + mean * momentum).astype(running_mean.dtype)
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var * float("inf")
            running_var[...] = (running_var * (1 - momentum) + unbiased * momentum).astype(running_var.dtype)
        save_mean, save_invstd = mean, invstd
    else:
        mean = running_mean.astype(acc, copy=False)
        invstd = 1.0 / xp.sqrt(running_var.astype(acc, copy=False) + acc.type(eps))
        out = xp.subtract(xa, mean.reshape(view))
        save_mean = save_invstd = xp.zeros((0,), dtype=acc)
    xa = None
    out *= invstd.reshape(view)
    if w is not None:
        out *= w.astype(acc, copy=False).reshape(view)
    if b is not None:
        out += b.astype(acc, copy=False).reshape(view)
    return (xp.ascontiguousarray(out, dtype=dt), xp.ascontiguousarray(save_mean, dtype=am.native_of[specs[1][1]]),
            xp.ascontiguousarray(save_invstd, dtype=am.native_of[specs[2][1]]))


def _channel_sums(am: ArrayModule, a):
    """The sums over every dim but the second (the channels) of a C-contiguous (N, C, *spatial) float array:
    on numpy two products with ones (a row of each (n, c) plane, then down the batch)."""
    N, C = a.shape[:2]
    if not am.is_numpy or not a.flags.c_contiguous or not a.size:
        return a.sum(axis=(0,) + tuple(range(2, a.ndim)))
    per_plane = a.reshape(N, C) if a.ndim == 2 else row_sums(am, a.reshape(N * C, -1)).reshape(N, C)
    return column_sums(am, per_plane)


def native_batch_norm_backward(am: ArrayModule, specs, g, x, w, running_mean, running_var, save_mean, save_invstd,
                               train, eps, output_mask):
    """(grad input, grad weight, grad bias) where `specs` has one: the decomposition's formulas
    (ember/decompositions/nn_backward.py) with the normalised input xhat made once, per channel the sums of g
    and of g * xhat, and the input gradient invstd * w * (g - mean(g) - xhat * mean(g * xhat)) written over
    the product's buffer (eval: g * invstd * w)."""
    xp = am.xp
    acc = am.compute_of[x.dtype]
    ga, xa = g.astype(acc, copy=False), x.astype(acc, copy=False)
    ga = ga if ga.flags.c_contiguous else xp.ascontiguousarray(ga)
    view = (1, -1) + (1,) * (x.ndim - 2)
    count = x.size // max(x.shape[1], 1)
    if train:
        mean, invstd = save_mean.astype(acc, copy=False), save_invstd.astype(acc, copy=False)
    else:
        mean = running_mean.astype(acc, copy=False)
        invstd = 1.0 / xp.sqrt(running_var.astype(acc, copy=False) + acc.type(eps))
    scale = invstd if w is None else invstd * w.astype(acc, copy=False)
    sum_g = _channel_sums(am, ga) if specs[2] is not None or (train and specs[0] is not None) else None
    xhat = prod = sum_gx = None
    if specs[1] is not None or (train and specs[0] is not None):
        xhat = xp.subtract(xa, mean.reshape(view))
        xhat *= invstd.reshape(view)
        prod = xp.multiply(ga, xhat)
        sum_gx = _channel_sums(am, prod)
    gi = None
    if specs[0] is not None:
        if train:
            gi = prod                                       # the product's buffer, rewritten
            xp.multiply(xhat, (sum_gx / count).reshape(view), out=gi)
            xp.subtract(ga, gi, out=gi)
            gi -= (sum_g / count).reshape(view)
            gi *= scale.reshape(view)
        else:
            gi = ga * scale.reshape(view)
        gi = xp.ascontiguousarray(gi, dtype=am.native_of[specs[0][1]])
    xhat = prod = None
    gw = None if specs[1] is None else xp.ascontiguousarray(sum_gx, dtype=am.native_of[specs[1][1]])
    gb = None if specs[2] is None else xp.ascontiguousarray(sum_g, dtype=am.native_of[specs[2][1]])
    return gi, gw, gb


KERNELS = {"native_layer_norm": native_layer_norm, "native_layer_norm_backward": native_layer_norm_backward,
           "native_batch_norm": native_batch_norm, "native_batch_norm_backward": native_batch_norm_backward}
