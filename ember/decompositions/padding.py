"""Padding and upsampling on ember ops.

constant_pad_nd writes the (cropped) input into a filled tensor; its gradient is the
constant pad of `grad` by the negated pads (a crop). Reflection, replication and circular
padding are `cat`s of single-index slices, expanded edges and wrapped slices along each
padded dimension (no flip or gather needed). Upsampling works one spatial dimension at a
time: nearest by an integer factor is an expanded view; other factors, and the two source
rows of linear interpolation (l0 * x[i0] + l1 * x[i1]), gather by index runs (one expanded
single-index slice per run, joined), so inf and NaN stay local as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ember._generated import functions as F
from ember.core import dtype as _dt

from . import decomposition, explicit_kernel


# ------------------------------------------------------------------------------ constant
@explicit_kernel("constant_pad_nd")
def constant_pad_nd(self, pad, value=0):
    pad = list(pad)
    x = self
    nd = self.dim()
    shape = list(self.shape)
    starts = []
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0 or hi < 0:
            x = F.slice(x, d, max(-lo, 0), x.shape[d] - max(-hi, 0), 1)
        shape[d] = self.shape[d] + lo + hi
        starts.append((d, max(lo, 0)))
    out = F.full(tuple(shape), value, dtype=self.dtype, device=self.device)
    view = out
    for d, start in starts:
        view = F.slice(view, d, start, start + x.shape[d], 1)
    F.copy_(view, x)
    return out


def constant_pad_backward(grad, pad):
    return F.constant_pad_nd(grad, [-p for p in pad], 0)


# --------------------------------------------------------------------- reflect / replicate
def _crop(x, d, lo, hi):
    if lo < 0 or hi < 0:
        x = F.slice(x, d, max(-lo, 0), x.shape[d] - max(-hi, 0), 1)
    return x, max(lo, 0), max(hi, 0)


def _reflect_dim(x, d, lo, hi):
    x, lo, hi = _crop(x, d, lo, hi)
    n = x.shape[d]
    left = [F.slice(x, d, i, i + 1, 1) for i in range(lo, 0, -1)]
    right = [F.slice(x, d, n - 2 - i, n - 1 - i, 1) for i in range(hi)]
    return F.cat(left + [x] + right, d) if left or right else x


def _replicate_dim(x, d, lo, hi):
    x, lo, hi = _crop(x, d, lo, hi)
    n = x.shape[d]
    parts = [x]
    if lo:
        size = list(x.shape)
        size[d] = lo
        parts.insert(0, F.expand(F.slice(x, d, 0, 1, 1), size))
    if hi:
        size = list(x.shape)
        size[d] = hi
        parts.append(F.expand(F.slice(x, d, n - 1, n, 1), size))
    return F.cat(parts, d) if len(parts) > 1 else x


def _circular_dim(x, d, lo, hi):
    x, lo, hi = _crop(x, d, lo, hi)
    n = x.shape[d]
    parts = ([F.slice(x, d, n - lo, n, 1)] if lo else []) + [x] + ([F.slice(x, d, 0, hi, 1)] if hi else [])
    return F.cat(parts, d) if len(parts) > 1 else x


_MODES = {"reflect": _reflect_dim, "replicate": _replicate_dim, "circular": _circular_dim}


def _pad_dims(x, pad, fn):
    pad = list(pad)
    for i in range(len(pad) // 2):
        x = fn(x, x.dim() - 1 - i, pad[2 * i], pad[2 * i + 1])
    return F.contiguous(x)


@decomposition("reflection_pad1d")
def reflection_pad1d(self, padding):
    return _pad_dims(self, padding, _reflect_dim)


@decomposition("reflection_pad2d")
def reflection_pad2d(self, padding):
    return _pad_dims(self, padding, _reflect_dim)


@decomposition("replication_pad1d")
def replication_pad1d(self, padding):
    return _pad_dims(self, padding, _replicate_dim)


@decomposition("replication_pad2d")
def replication_pad2d(self, padding):
    return _pad_dims(self, padding, _replicate_dim)


@decomposition("reflection_pad3d")
def reflection_pad3d(self, padding):
    return _pad_dims(self, padding, _reflect_dim)


@decomposition("replication_pad3d")
def replication_pad3d(self, padding):
    return _pad_dims(self, padding, _replicate_dim)


@decomposition("pad")
def pad(self, pad, mode="constant", value=None):
    if mode == "constant":
        return F.constant_pad_nd(self, pad, 0 if value is None else value)
    return _pad_dims(self, pad, _MODES[mode])


# ------------------------------------------------------------------------------ upsampling
def _scale32(in_size, out_size, scale):
    """PyTorch's compute_scales_value<float>: 1 / scale when given (> 0), else in / out."""
    if scale is not None and scale > 0:
        return float(np.float32(1.0 / scale))
    return float(np.float32(in_size) / np.float32(out_size))


def gather_runs(x, d, idx):
    """`x` indexed along dim `d` by the Python index list `idx`: each run of equal indices is one
    single-index slice expanded to the run's length, and the runs are joined (no gather needed)."""
    parts, start, out = [], 0, len(idx)
    while start < out:
        stop = start
        while stop < out and idx[stop] == idx[start]:
            stop += 1
        size = list(x.shape)
        size[d] = stop - start
        parts.append(F.expand(F.slice(x, d, idx[start], idx[start] + 1, 1), size))
        start = stop
    return F.cat(parts, d) if len(parts) > 1 else F.contiguous(parts[0])


def _nearest_dim(x, d, out, scale):
    """Nearest neighbour along dim `d`: src = min(floor(dst * scale), in - 1) in float32."""
    n = x.shape[d]
    if out == n:
        return x
    s = _scale32(n, out, scale)
    idx = [min(int(np.floor(np.float32(o) * np.float32(s))), n - 1) for o in range(out)] if out != 2 * n else \
        [o >> 1 for o in range(out)]
    if out % n == 0 and idx == [o // (out // n) for o in range(out)]:
        r = out // n
        shape = list(x.shape)
        y = F.unsqueeze(x, d + 1)
        size = shape[:d + 1] + [r] + shape[d + 1:]
        return F.reshape(F.expand(y, size), shape[:d] + [out] + shape[d + 1:])
    return gather_runs(x, d, idx)


def _linear_dim(x, d, out, align_corners, scale):
    """Linear interpolation along dim `d` of `x` (already in opmath): l0 * x[i0] + l1 * x[i1], with
    PyTorch's source index rule computed in the opmath precision (as its cpu kernel does)."""
    n = x.shape[d]
    wide = x.dtype is _dt.float64
    f = np.float64 if wide else np.float32
    if align_corners:
        s = f(n - 1) / f(out - 1) if out > 1 else f(0)
        src = [s * f(o) for o in range(out)]
    else:
        s = f(1.0 / scale) if scale is not None and scale > 0 else f(n) / f(out)
        src = [max(s * (f(o) + f(0.5)) - f(0.5), f(0)) for o in range(out)]
    i0 = [min(int(np.floor(v)), n - 1) for v in src]
    i1 = [min(i + 1, n - 1) for i in i0]
    l1 = np.array([min(max(v - f(i), f(0)), f(1)) for v, i in zip(src, i0)], dtype=f)
    l0 = (f(1) - l1).astype(f)
    view = [1] * x.dim()
    view[d] = out
    t1 = F.reshape(_small_tensor(l1, x), view)
    t0 = F.reshape(_small_tensor(l0, x), view)
    return F.add(F.mul(gather_runs(x, d, i0), t0), F.mul(gather_runs(x, d, i1), t1))


def _small_tensor(values, like):
    """A small constant tensor (interpolation weights) on `like`'s device."""
    from ember.frontend.factories import tensor

    return tensor(values, dtype=like.dtype, device=like.device)


def _bilinear(x, output_size, align_corners, scales):
    opmath = _dt.float64 if x.dtype is _dt.float64 else _dt.float32
    y = F._to_copy(x, dtype=opmath) if x.dtype is not opmath else x
    y = _linear_dim(y, y.dim() - 2, output_size[0], align_corners, scales[0])
    y = _linear_dim(y, y.dim() - 1, output_size[1], align_corners, scales[1])
    return F._to_copy(F.contiguous(y), dtype=x.dtype) if x.dtype is not opmath else F.contiguous(y)


def _vec_sizes(x, output_size, scale_factors, nd):
    if output_size is not None:
        return tuple(output_size), (None,) * nd
    sf = tuple(scale_factors) if len(scale_factors) != 1 else tuple(scale_factors) * nd
    return tuple(int(x.shape[-nd + i] * sf[i]) for i in range(nd)), sf


@decomposition("upsample_nearest2d")
def upsample_nearest2d(self, output_size, scales_h=None, scales_w=None):
    y = _nearest_dim(self, self.dim() - 2, output_size[0], scales_h)
    return F.contiguous(_nearest_dim(y, self.dim() - 1, output_size[1], scales_w))


@decomposition("upsample_nearest2d.vec")
def upsample_nearest2d_vec(input, output_size, scale_factors):
    size, sf = _vec_sizes(input, output_size, scale_factors, 2)
    return F.upsample_nearest2d(input, size, scales_h=sf[0], scales_w=sf[1])


@decomposition("upsample_nearest1d")
def upsample_nearest1d(self, output_size, scales=None):
    return F.contiguous(_nearest_dim(self, self.dim() - 1, list(output_size)[0], scales))


@decomposition("upsample_nearest1d.vec")
def upsample_nearest1d_vec(input, output_size, scale_factors):
    size, sf = _vec_sizes(input, output_size, scale_factors, 1)
    return F.upsample_nearest1d(input, size, scales=sf[0])


@decomposition("upsample_bilinear2d")
def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    return _bilinear(self, tuple(output_size), align_corners, (scales_h, scales_w))


@decomposition("upsample_bilinear2d.vec")
def upsample_bilinear2d_vec(input, output_size, align_corners, scale_factors):
    size, sf = _vec_sizes(input, output_size, scale_factors, 2)
    return F.upsample_bilinear2d(input, size, align_corners, scales_h=sf[0], scales_w=sf[1])
