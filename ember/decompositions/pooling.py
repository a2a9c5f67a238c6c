"""Pooling on ember ops: sliding windows (as_strided), amax/argmax/sum, col2im backward.

Max pooling pads with -inf (the dtype's minimum for integers), reduces each window with
amax and argmax, and turns the argmax into PyTorch's index (the flat position in the
unpadded H x W plane) through an index map read with the same windows. Its backward
sends `grad` to the positions whose map entry equals the saved index, one strided add per
kernel offset (`fold`). Average pooling divides window sums by PyTorch's divisor map
(separable: a product of per-dimension window counts). Adaptive average pooling averages
one spatial dimension at a time (a reshape and mean, or one slice mean per window).
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.frontend import dtype as _dt

from . import decomposition, explicit_kernel
from .convolution import fold, windows, zero_pad


def _tup(v, n, default=None):
    if isinstance(v, (list, tuple)):
        if len(v) == 0:
            return default
        return tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


def pool_out(n, k, s, p, d, ceil) -> int:
    """PyTorch's pooling_output_shape."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd=2):
    kernel = _tup(kernel_size, nd)
    stride = _tup(stride, nd, kernel)
    padding = _tup(padding, nd)
    dilation = _tup(dilation, nd)
    spatial = tuple(x.shape[-nd:])
    out = tuple(pool_out(spatial[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode) for i in range(nd))
    # windows of a ceil_mode output may run past the right padding: pad a little more there
    extra = tuple(max(0, (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - spatial[i] - 2 * padding[i])
                  for i in range(nd))
    return kernel, stride, padding, dilation, out, extra


def _lowest(dtype):
    if dtype.is_floating_point:
        return float("-inf")
    if dtype is _dt.bool:
        return False
    return {"uint8": 0, "int8": -2 ** 7, "int16": -2 ** 15, "int32": -2 ** 31}.get(dtype.name, -2 ** 63)


def _index_map(spatial, padding, extra, device):
    """(Hp, Wp) int64: the flat index (h * W + w) of each padded position, -1 in the padding."""
    H, W = spatial
    rows = F.sub(F.arange(H + 2 * padding[0] + extra[0], device=device), padding[0])
    cols = F.sub(F.arange(W + 2 * padding[1] + extra[1], device=device), padding[1])
    flat = F.add(F.mul(F.unsqueeze(rows, 1), W), F.unsqueeze(cols, 0))
    inside = F.logical_and(F.unsqueeze(F.logical_and(F.ge(rows, 0), F.lt(rows, H)), 1),
                           F.unsqueeze(F.logical_and(F.ge(cols, 0), F.lt(cols, W)), 0))
    return F.where(inside, flat, -1)


def _batched(x, nd=2):
    return (F.unsqueeze(x, 0), True) if x.dim() == nd + 1 else (x, False)


def _map_windows(spatial, padding, extra, kernel, stride, dilation, out, device):
    """(*out, KK) int64: the flat input index read by each window element (-1: padding)."""
    m = F.reshape(_index_map(spatial, padding, extra, device), (1, 1) + tuple(
        spatial[i] + 2 * padding[i] + extra[i] for i in range(2)))
    w = windows(m, kernel, stride, dilation, out)
    return F.reshape(w, tuple(out) + (math.prod(kernel),))


@explicit_kernel("max_pool2d_with_indices")
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    x, unbatched = _batched(self)
    kernel, stride, padding, dilation, out, extra = _geometry(x, kernel_size, stride, padding, dilation, ceil_mode)
    N, C = x.shape[0], x.shape[1]
    KK = math.prod(kernel)
    xp = zero_pad(x, padding, extra, _lowest(x.dtype))
    win = F.reshape(windows(xp, kernel, stride, dilation, out), (N, C) + out + (KK,))
    values = F.amax(win, [-1])
    arg = F.argmax(win, -1, True)
    if x.dtype.is_floating_point:            # PyTorch's kernel lets the last NaN of a window win
        last_nan = F.amax(F.where(F.isnan(win), F.arange(KK, device=x.device), -1), [-1], True)
        arg = F.where(F.ge(last_nan, 0), last_nan, arg)
    maps = _map_windows(tuple(x.shape[2:]), padding, extra, kernel, stride, dilation, out, x.device)
    onehot = F.eq(arg, F.arange(KK, device=x.device))
    indices = F.sum(F.where(onehot, maps, 0), [-1])
    if unbatched:
        return F.squeeze(values, [0]), F.squeeze(indices, [0])
    return values, indices


def max_pool2d_backward(grad, self_shape, indices, kernel_size, stride, padding, dilation, ceil_mode):
    """The gradient goes to the input position each output's saved index names."""
    unbatched = len(self_shape) == 3
    shape = (1,) + tuple(self_shape) if unbatched else tuple(self_shape)
    if unbatched:
        grad, indices = F.unsqueeze(grad, 0), F.unsqueeze(indices, 0)

    class _S:                                   # the geometry helper only reads .shape
        pass
    probe = _S()
    probe.shape = shape
    kernel, stride, padding, dilation, out, extra = _geometry(probe, kernel_size, stride, padding, dilation, ceil_mode)
    maps = _map_windows(shape[2:], padding, extra, kernel, stride, dilation, out, grad.device)   # (*out, KK)
    hit = F.eq(F.unsqueeze(indices, -1), maps)                                                  # (N, C, *out, KK)
    cols = F.where(hit, F.unsqueeze(grad, -1), 0.0)
    cols = F.reshape(F._to_copy(cols, dtype=grad.dtype), tuple(cols.shape[:-1]) + kernel)
    padded = shape[:2] + tuple(shape[2 + i] + 2 * padding[i] + extra[i] for i in range(2))
    buf = fold(cols, padded, stride, dilation)
    for i in range(2):
        buf = F.slice(buf, 2 + i, padding[i], padding[i] + shape[2 + i], 1)
    return F.squeeze(buf, [0]) if unbatched else buf


@decomposition("max_pool2d")
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


@decomposition("max_pool1d")
def max_pool1d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    k = _tup(kernel_size, 1)
    s = _tup(stride, 1, k)
    out = F.max_pool2d_with_indices(F.unsqueeze(self, -2), (1,) + k, (1,) + s, (0,) + _tup(padding, 1),
                                    (1,) + _tup(dilation, 1), ceil_mode)[0]
    return F.squeeze(out, [-2])


# ------------------------------------------------------------------------------ average
def _window_counts(n, k, s, p, out, include_pad, device, dtype):
    """Per output position along one dim: the number of elements PyTorch divides by."""
    start = F.sub(F.mul(F.arange(out, device=device), s), p)
    end = F.minimum(F.add(start, k), F.full((), n + p, dtype=_dt.int64, device=device))
    if include_pad:
        count = F.sub(end, start)
    else:
        count = F.sub(F.minimum(end, F.full((), n, dtype=_dt.int64, device=device)),
                      F.maximum(start, F.zeros((), dtype=_dt.int64, device=device)))
    return F._to_copy(count, dtype=dtype)


def _avg_divisor(shape, kernel, stride, padding, out, count_include_pad, divisor_override, device, dtype):
    if divisor_override is not None:
        return divisor_override
    ch = _window_counts(shape[-2], kernel[0], stride[0], padding[0], out[0], count_include_pad, device, dtype)
    cw = _window_counts(shape[-1], kernel[1], stride[1], padding[1], out[1], count_include_pad, device, dtype)
    return F.mul(F.unsqueeze(ch, 1), F.unsqueeze(cw, 0))


def _opmath(x):
    return F._to_copy(x, dtype=_dt.float32) if x.dtype in (_dt.float16, _dt.bfloat16) else x


@explicit_kernel("avg_pool2d")
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    x, unbatched = _batched(self)
    kernel, stride, padding, _, out, extra = _geometry(x, kernel_size, stride, padding, 1, ceil_mode)
    xf = _opmath(x)
    xp = zero_pad(xf, padding, extra)
    total = F.sum(windows(xp, kernel, stride, (1, 1), out), [-2, -1])
    div = _avg_divisor(tuple(x.shape), kernel, stride, padding, out, count_include_pad, divisor_override, x.device,
                       xf.dtype if xf.dtype.is_floating_point else _dt.int64)
    res = F.div(total, div) if xf.dtype.is_floating_point else F.div(total, div, rounding_mode="trunc")
    res = F._to_copy(res, dtype=self.dtype)
    return F.squeeze(res, [0]) if unbatched else res


def avg_pool2d_backward(grad, self_shape, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    unbatched = len(self_shape) == 3
    shape = (1,) + tuple(self_shape) if unbatched else tuple(self_shape)
    if unbatched:
        grad = F.unsqueeze(grad, 0)

    class _S:
        pass
    probe = _S()
    probe.shape = shape
    kernel, stride, padding, _, out, extra = _geometry(probe, kernel_size, stride, padding, 1, ceil_mode)
    div = _avg_divisor(shape, kernel, stride, padding, out, count_include_pad, divisor_override, grad.device,
                       grad.dtype)
    g = F.div(grad, div)
    cols = F.expand(F.reshape(g, tuple(g.shape) + (1, 1)), tuple(g.shape) + kernel)
    padded = shape[:2] + tuple(shape[2 + i] + 2 * padding[i] + extra[i] for i in range(2))
    buf = fold(cols, padded, stride, (1, 1))
    for i in range(2):
        buf = F.slice(buf, 2 + i, padding[i], padding[i] + shape[2 + i], 1)
    return F.squeeze(buf, [0]) if unbatched else buf


@decomposition("avg_pool1d")
def avg_pool1d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    k = _tup(kernel_size, 1)
    s = _tup(stride, 1, k)
    out = F.avg_pool2d(F.unsqueeze(self, -2), (1,) + k, (1,) + s, (0,) + _tup(padding, 1), ceil_mode,
                       count_include_pad, None)
    return F.squeeze(out, [-2])


def _adaptive_dim(x, d, out):
    """Average pooling along dim `d` to `out` windows [floor(i*n/out), ceil((i+1)*n/out)): a reshape
    and mean when `out` divides the size, else one slice mean per window, joined."""
    n = x.shape[d]
    if out == n:
        return x
    shape = list(x.shape)
    if out and n % out == 0:
        return F.mean(F.reshape(x, shape[:d] + [out, n // out] + shape[d + 1:]), [d + 1])
    if out == 0:
        return F.zeros(shape[:d] + [0] + shape[d + 1:], dtype=x.dtype, device=x.device)
    parts = [F.mean(F.slice(x, d, (i * n) // out, -((-(i + 1) * n) // out), 1), [d], True) for i in range(out)]
    return F.cat(parts, d) if len(parts) > 1 else parts[0]


def _adaptive(self, output_size, nd):
    x = _opmath(self)
    sizes = _tup(output_size, nd)
    for i, s in enumerate(sizes):
        x = _adaptive_dim(x, x.dim() - nd + i, self.shape[-nd + i] if s is None else s)
    return F._to_copy(F.contiguous(x), dtype=self.dtype)


@decomposition("adaptive_avg_pool2d")
def adaptive_avg_pool2d(self, output_size):
    return F._adaptive_avg_pool2d(self, output_size)


@decomposition("_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(self, output_size):
    return _adaptive(self, output_size, 2)


@decomposition("adaptive_avg_pool1d")
def adaptive_avg_pool1d(self, output_size):
    return _adaptive(self, output_size, 1)
