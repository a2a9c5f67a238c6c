"""Pooling on ember ops, for any number of spatial dims: sliding windows (as_strided),
amax/argmax/sum, col2im backward.

Max pooling pads with -inf (the dtype's minimum for integers), reduces each window with
amax and argmax, and turns the argmax into PyTorch's index (the flat position in the
unpadded spatial volume) through an index map read with the same windows. Its backward
(`max_pool{2,3}d_with_indices_backward`) sends `grad` to the positions whose map entry
equals the saved index, one strided add per kernel offset (`fold`). Average pooling divides
window sums by PyTorch's divisor map (separable: a product of per-dimension window counts).
Adaptive average pooling averages one spatial dimension at a time (a reshape and mean, or one
slice mean per window); its backward spreads each output's gradient evenly over its window.
The backward ops are registry ops (composite: differentiated through, so double backward works).
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.shape_rules.nn_layers import is_global_pool

from . import as_opmath, decomposition, explicit_kernel
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


def _geometry(shape, kernel_size, stride, padding, dilation, ceil_mode, nd):
    kernel = _tup(kernel_size, nd)
    stride = _tup(stride, nd, kernel)
    padding = _tup(padding, nd)
    dilation = _tup(dilation, nd)
    spatial = tuple(shape[-nd:])
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
    """(*padded spatial) int64: the flat index (row-major in `spatial`) of each padded position,
    -1 in the padding."""
    nd = len(spatial)
    flat, inside = None, None
    for i in range(nd):
        coord = F.sub(F.arange(spatial[i] + 2 * padding[i] + extra[i], device=device), padding[i])
        coord = F.reshape(coord, (1,) * i + (-1,) + (1,) * (nd - 1 - i))
        ok = F.logical_and(F.ge(coord, 0), F.lt(coord, spatial[i]))
        flat = coord if flat is None else F.add(F.mul(flat, spatial[i]), coord)
        inside = ok if inside is None else F.logical_and(inside, ok)
    return F.where(inside, flat, -1)


def _batched(x, nd):
    return (F.unsqueeze(x, 0), True) if x.dim() == nd + 1 else (x, False)


def _map_windows(spatial, padding, extra, kernel, stride, dilation, out, device):
    """(*out, KK) int64: the flat input index read by each window element (-1: padding)."""
    nd = len(spatial)
    m = F.reshape(_index_map(spatial, padding, extra, device), (1, 1) + tuple(
        spatial[i] + 2 * padding[i] + extra[i] for i in range(nd)))
    w = windows(m, kernel, stride, dilation, out)
    return F.reshape(w, tuple(out) + (math.prod(kernel),))


def _unpad(buf, shape, padding):
    """The unpadded (N, C, *spatial) region of a padded col2im buffer."""
    for i in range(len(padding)):
        buf = F.slice(buf, 2 + i, padding[i], padding[i] + shape[2 + i], 1)
    return buf


def max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, nd):
    x, unbatched = _batched(self, nd)
    kernel, stride, padding, dilation, out, extra = _geometry(tuple(x.shape), kernel_size, stride, padding,
                                                              dilation, ceil_mode, nd)
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


def max_pool_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices, nd):
    """The gradient goes to the input position each output's saved index names."""
    unbatched = self.dim() == nd + 1
    shape = ((1,) if unbatched else ()) + tuple(self.shape)
    if unbatched:
        grad, indices = F.unsqueeze(grad, 0), F.unsqueeze(indices, 0)
    kernel, stride, padding, dilation, out, extra = _geometry(shape, kernel_size, stride, padding, dilation,
                                                              ceil_mode, nd)
    maps = _map_windows(shape[2:], padding, extra, kernel, stride, dilation, out, grad.device)  # (*out, KK)
    hit = F.eq(F.unsqueeze(indices, -1), maps)                                                 # (N, C, *out, KK)
    cols = F.where(hit, F.unsqueeze(grad, -1), 0.0)
    cols = F.reshape(F._to_copy(cols, dtype=grad.dtype), tuple(cols.shape[:-1]) + kernel)
    padded = shape[:2] + tuple(shape[2 + i] + 2 * padding[i] + extra[i] for i in range(nd))
    buf = F.contiguous(_unpad(fold(cols, padded, stride, dilation), shape, padding))
    return F.squeeze(buf, [0]) if unbatched else buf


@explicit_kernel("max_pool2d_with_indices")
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, 2)


@explicit_kernel("max_pool3d_with_indices")
def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode, 3)


@decomposition("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return max_pool_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, 2)


@decomposition("max_pool3d_with_indices_backward")
def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return max_pool_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, 3)


@decomposition("max_pool2d")
def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


@decomposition("max_pool3d")
def max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


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
    """The (*out) divisor map: the outer product of per-dimension window counts."""
    if divisor_override is not None:
        return divisor_override
    nd = len(kernel)
    div = None
    for i in range(nd):
        c = _window_counts(shape[-nd + i], kernel[i], stride[i], padding[i], out[i], count_include_pad, device, dtype)
        c = F.reshape(c, (1,) * i + (-1,) + (1,) * (nd - 1 - i))
        div = c if div is None else F.mul(div, c)
    return div


def avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    x, unbatched = _batched(self, nd)
    kernel, stride, padding, _, out, extra = _geometry(tuple(x.shape), kernel_size, stride, padding, 1, ceil_mode,
                                                       nd)
    xf = as_opmath(x)
    xp = zero_pad(xf, padding, extra)
    total = F.sum(windows(xp, kernel, stride, (1,) * nd, out), list(range(-nd, 0)))
    div = _avg_divisor(tuple(x.shape), kernel, stride, padding, out, count_include_pad, divisor_override, x.device,
                       xf.dtype if xf.dtype.is_floating_point else _dt.int64)
    res = F.div(total, div) if xf.dtype.is_floating_point else F.div(total, div, rounding_mode="trunc")
    res = F._to_copy(res, dtype=self.dtype)
    return F.squeeze(res, [0]) if unbatched else res


def avg_pool_backward(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    """Each output's gradient over its divisor, added to every element of its window."""
    unbatched = self.dim() == nd + 1
    shape = ((1,) if unbatched else ()) + tuple(self.shape)
    if unbatched:
        grad = F.unsqueeze(grad, 0)
    kernel, stride, padding, _, out, extra = _geometry(shape, kernel_size, stride, padding, 1, ceil_mode, nd)
    div = _avg_divisor(shape, kernel, stride, padding, out, count_include_pad, divisor_override, grad.device,
                       grad.dtype)
    g = F.div(grad, div)
    cols = F.expand(F.reshape(g, tuple(g.shape) + (1,) * nd), tuple(g.shape) + kernel)
    padded = shape[:2] + tuple(shape[2 + i] + 2 * padding[i] + extra[i] for i in range(nd))
    buf = F.contiguous(_unpad(fold(cols, padded, stride, (1,) * nd), shape, padding))
    return F.squeeze(buf, [0]) if unbatched else buf


@explicit_kernel("avg_pool2d")
def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@explicit_kernel("avg_pool3d")
def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return avg_pool(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


@decomposition("avg_pool2d_backward")
def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return avg_pool_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override, 2)


@decomposition("avg_pool3d_backward")
def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return avg_pool_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override, 3)


@decomposition("avg_pool1d")
def avg_pool1d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    k = _tup(kernel_size, 1)
    s = _tup(stride, 1, k)
    out = F.avg_pool2d(F.unsqueeze(self, -2), (1,) + k, (1,) + s, (0,) + _tup(padding, 1), ceil_mode,
                       count_include_pad, None)
    return F.squeeze(out, [-2])


# ----------------------------------------------------------------------------- adaptive
def _window(i, n, out):
    """[start, end) of adaptive window i of `out` over a dim of size n."""
    return (i * n) // out, -((-(i + 1) * n) // out)


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
    parts = [F.mean(F.slice(x, d, *_window(i, n, out), 1), [d], True) for i in range(out)]
    return F.cat(parts, d) if len(parts) > 1 else parts[0]


def _adaptive_dim_backward(g, d, n):
    """The gradient of `_adaptive_dim` along dim `d` (input size n): each window's gradient
    divided by its length, spread over the window (overlapping windows add)."""
    out = g.shape[d]
    if out == n:
        return g
    shape = list(g.shape)
    if out == 0:
        return F.zeros(shape[:d] + [n] + shape[d + 1:], dtype=g.dtype, device=g.device)
    if n % out == 0:
        k = n // out
        spread = F.expand(F.unsqueeze(F.contiguous(F.div(g, k)), d + 1), shape[:d] + [out, k] + shape[d + 1:])
        return F.reshape(spread, shape[:d] + [n] + shape[d + 1:])
    total = None
    for i in range(out):
        lo, hi = _window(i, n, out)
        gi = F.contiguous(F.div(F.slice(g, d, i, i + 1, 1), hi - lo))
        part = F.expand(gi, shape[:d] + [hi - lo] + shape[d + 1:])
        pads = [0, 0] * (g.dim() - 1 - d) + [lo, n - hi]
        part = F.constant_pad_nd(part, pads, 0)
        total = part if total is None else F.add(total, part)
    return total


def _adaptive(self, output_size, nd):
    x = as_opmath(self)
    sizes = _tup(output_size, nd)
    for i, s in enumerate(sizes):
        x = _adaptive_dim(x, x.dim() - nd + i, self.shape[-nd + i] if s is None else s)
    return F._to_copy(F.contiguous(x), dtype=self.dtype)


def _adaptive_backward(grad_output, self, nd):
    g = as_opmath(grad_output)
    for i in range(nd):
        g = _adaptive_dim_backward(g, g.dim() - nd + i, self.shape[-nd + i])
    return F._to_copy(F.contiguous(g), dtype=self.dtype)


@decomposition("adaptive_avg_pool2d")
def adaptive_avg_pool2d(self, output_size):
    if is_global_pool(output_size):             # as torch: the mean over the last two dims
        return F.mean(self, [-2, -1], True)
    return F._adaptive_avg_pool2d(self, output_size)


@decomposition("adaptive_avg_pool3d")
def adaptive_avg_pool3d(self, output_size):
    return F._adaptive_avg_pool3d(self, output_size)


@explicit_kernel("_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(self, output_size):
    return _adaptive(self, output_size, 2)


@explicit_kernel("_adaptive_avg_pool3d")
def _adaptive_avg_pool3d(self, output_size):
    return _adaptive(self, output_size, 3)


@decomposition("_adaptive_avg_pool2d_backward")
def _adaptive_avg_pool2d_backward(grad_output, self):
    return _adaptive_backward(grad_output, self, 2)


@decomposition("_adaptive_avg_pool3d_backward")
def _adaptive_avg_pool3d_backward(grad_output, self):
    return _adaptive_backward(grad_output, self, 3)


@decomposition("adaptive_avg_pool1d")
def adaptive_avg_pool1d(self, output_size):
    return _adaptive(self, output_size, 1)


def max_unpool(self, indices, output_size):
    """Zeros of the output's shape, each value scattered to the position (counted over the output's spatial
    dimensions) its index names; the gradient gathers back from the same positions."""
    nd = len(output_size)
    lead = tuple(self.shape[:-nd])
    rows = lead + (-1,)
    if math.prod(output_size) == 0:     # nowhere to scatter to (torch reads no index): empty, still connected to self
        return F.clone(F.reshape(F.slice(F.reshape(self, rows), -1, 0, 0), lead + tuple(output_size)))
    flat = F.zeros(lead + (math.prod(output_size),), dtype=self.dtype, device=self.device)
    out = F.scatter(flat, -1, F.reshape(indices, rows), F.reshape(self, rows))
    return F.reshape(out, lead + tuple(output_size))


@decomposition("max_unpool2d")
def max_unpool2d(self, indices, output_size):
    return max_unpool(self, indices, _sizes(output_size, 2))


@decomposition("max_unpool3d")
def max_unpool3d(self, indices, output_size, stride, padding):
    return max_unpool(self, indices, _sizes(output_size, 3))


def _sizes(output_size, nd: int) -> tuple:
    """An int[nd] argument as nd ints (one int stands for nd of them)."""
    return tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
