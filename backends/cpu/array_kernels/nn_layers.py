"""Native kernels of the hot nn layers against the array-module API (numpy and cupy).

Convolution is im2col times the weight as one batched matmul over groups; the columns are one copy of a
strided window view, of a channels-last copy of the input (runs of a position's channels) or, where a row
of windows is the longer run (a CNN's first layers: one or three channels), of the input itself
(`positions_innermost_pays`); transposed convolution multiplies first and adds
the columns back with one strided slice add per kernel offset (col2im). convolution_backward
builds its gradients from the same pieces, and max pooling's backward puts each gradient at
its index. Max pooling compares the windows one kernel offset at a time; average pooling
reduces window views. (The normalization layers' kernels are in normalization.py.)
float16/bfloat16 compute in float32 and round once, like PyTorch's opmath. The other backward
passes are the registry formulas (ember ops), which call these kernels again.
"""
from __future__ import annotations

import itertools
import math

from .context import ArrayModule


def _tup(v, n, default=None):
    """An int or list argument as an `n`-tuple of ints (a 1-element list repeated; `default` for [])."""
    if isinstance(v, (list, tuple)):
        if len(v) == 0:
            return default
        return tuple(int(x) for x in v) * n if len(v) == 1 else tuple(int(x) for x in v)
    return (int(v),) * n


def _windows(am: ArrayModule, x, kernel, stride, dilation, out):
    """(N, C, *out, *kernel) read-only window view of a C-contiguous (N, C, *spatial) array."""
    nd = len(kernel)
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) + \
        tuple(st[2 + i] * dilation[i] for i in range(nd))
    return am.xp.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)


def _pad_spatial(am: ArrayModule, x, before, after, value=0):
    """`x` padded with `value` before/after each spatial dim (C-contiguous: a copy only if needed)."""
    if not any(before) and not any(after):
        return am.xp.ascontiguousarray(x)
    shape = x.shape[:2] + tuple(n + b + a for n, b, a in zip(x.shape[2:], before, after))
    out = am.xp.full(shape, value, dtype=x.dtype)          # (numpy's pad is several times slower on small maps)
    out[(slice(None), slice(None)) + tuple(slice(b, b + n) for n, b in zip(x.shape[2:], before))] = x
    return out


# ------------------------------------------------------------------------ convolution
def _columns(am: ArrayModule, x, kernel, stride, dilation, out, groups: int):
    """im2col of the padded input `x` (N, C, *spatial): (G, N*L, KK*Cg), each row one output position's
    window with the kernel offsets outermost and the channels innermost. The input is made channels-last
    first (one small copy), so the one copy that gathers the windows moves runs of Cg contiguous values
    (the channels-first order, runs of one kernel row, copies about 6x slower)."""
    xp = am.xp
    N, C = x.shape[:2]
    nd = len(kernel)
    last = xp.ascontiguousarray(xp.moveaxis(x, 1, -1))                          # (N, *spatial, C)
    st = last.strides
    shape = (N,) + tuple(out) + tuple(kernel) + (groups, C // groups)
    strides = ((st[0],) + tuple(st[1 + i] * stride[i] for i in range(nd)) +
               tuple(st[1 + i] * dilation[i] for i in range(nd)) + (st[-1] * (C // groups), st[-1]))
    win = am.xp.lib.stride_tricks.as_strided(last, shape, strides, writeable=False)
    order = (1 + 2 * nd, 0) + tuple(range(1, 1 + 2 * nd)) + (2 + 2 * nd,)
    return win.transpose(order).reshape(groups, N * math.prod(out), math.prod(kernel) * (C // groups))


def _kernel_major(w, groups: int):
    """A weight (O, Cg, *kernel) as (G, Og, KK*Cg), the kernel offsets outermost: `_columns`'s order."""
    O, Cg = w.shape[:2]
    nd = w.ndim - 2
    return w.transpose((0,) + tuple(range(2, 2 + nd)) + (1,)).reshape(groups, O // groups, math.prod(w.shape[2:]) * Cg)


def positions_innermost_pays(cg: int, kernel, stride, out) -> bool:
    """Whether im2col gathers its columns with the output positions innermost (`_position_columns`) rather
    than the channels (`_columns`): where a row of windows (out[-1] values one apart, at stride 1) is a
    longer run to copy than a position's Cg channels, and the kernel has more than one element (a copy
    either way). The first layers of a CNN (one or three channels) are such calls: the channels-last
    gather would copy runs of one value."""
    return math.prod(kernel) > 1 and stride[-1] == 1 and out[-1] > cg


def _position_columns(am: ArrayModule, x, kernel, stride, dilation, out, groups: int):
    """im2col with the output positions innermost: (G, Cg*KK, N*L), row (c, *k) holding each position's
    value at channel c and kernel offset k, in the weight's own (Cg, *kernel) order: one copy of a window
    view of the padded C-contiguous (N, C, *spatial) input itself."""
    N, C = x.shape[:2]
    nd = len(kernel)
    cg = C // groups
    st = x.strides
    shape = (groups, cg) + tuple(kernel) + (N,) + tuple(out)
    strides = ((st[1] * cg, st[1]) + tuple(st[2 + i] * dilation[i] for i in range(nd)) + (st[0],) +
               tuple(st[2 + i] * stride[i] for i in range(nd)))
    win = am.xp.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
    return am.xp.ascontiguousarray(win).reshape(groups, cg * math.prod(kernel), N * math.prod(out))


def transposed_columns(am: ArrayModule, x, w, groups: int):
    """A transposed convolution's product, channels last: one matmul per group gives every (input
    position, kernel offset) its Og output values, as (G, N, *inp, *kernel, Og)."""
    xp = am.xp
    N, Cin = x.shape[:2]
    nd = w.ndim - 2
    Og, kernel = w.shape[1], w.shape[2:]
    Cg = Cin // groups
    inp = x.shape[2:]
    rows = xp.moveaxis(x, 1, -1).reshape((N * math.prod(inp), groups, Cg)).transpose(1, 0, 2)   # (G, N*L, Cg)
    wm = w.reshape((groups, Cg, Og) + kernel)
    wm = wm.transpose((0, 1) + tuple(range(3, 3 + nd)) + (2,)).reshape(groups, Cg, math.prod(kernel) * Og)
    return xp.matmul(rows, wm).reshape((groups, N) + inp + kernel + (Og,))


def col2im_extent(inp, kernel, stride, dilation, output_padding) -> tuple:
    """The spatial size a transposed convolution's columns add into, before the padding is cropped."""
    return tuple((inp[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
                 for i in range(len(inp)))


def cropped_channels_first(am: ArrayModule, res, padding):
    """The channels-last (N, *full, G, Og) sum of the columns cropped by `padding`, as (N, G*Og, *out)."""
    nd = res.ndim - 3
    full = res.shape[1:1 + nd]
    res = res[(slice(None),) + tuple(slice(padding[i], full[i] - padding[i]) for i in range(nd))]
    return am.xp.moveaxis(res.reshape(res.shape[:1 + nd] + (res.shape[-2] * res.shape[-1],)), -1, 1)


def _col2im_transposed(am: ArrayModule, x, w, stride, padding, dilation, output_padding, groups: int):
    """Transposed convolution, channels last: the columns (`transposed_columns`) added into the
    (channels-last) output with one strided slice add per kernel offset (col2im), whose runs are Og
    contiguous values; then cropped by the padding and made channels-first."""
    xp = am.xp
    nd = w.ndim - 2
    kernel, inp = w.shape[2:], x.shape[2:]
    cols = transposed_columns(am, x, w, groups)                                   # (G, N, *inp, *k, Og)
    cols = cols.transpose((1,) + tuple(range(2, 2 + 2 * nd)) + (0, 2 + 2 * nd))   # (N, *inp, *k, G, Og)
    full = col2im_extent(inp, kernel, stride, dilation, output_padding)
    res = xp.zeros((x.shape[0],) + full + (groups, w.shape[1]), dtype=cols.dtype)
    for k in itertools.product(*(range(n) for n in kernel)):
        index = (slice(None),) + tuple(
            slice(k[i] * dilation[i], k[i] * dilation[i] + (inp[i] - 1) * stride[i] + 1, stride[i]) for i in range(nd))
        res[index] += cols[(slice(None),) + (slice(None),) * nd + k]
    return cropped_channels_first(am, res, padding)


def convolution(am: ArrayModule, spec, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    """Convolution (im2col times the weight per group) and transposed convolution (the product's
    columns added back into the output at each kernel offset), both channels-last inside, with the bias
    added last."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    acc = am.compute_of[dt]
    x, w = x.astype(acc, copy=False), w.astype(acc, copy=False)
    nd = w.ndim - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    G = int(groups)
    N = x.shape[0]
    kernel = w.shape[2:]
    if not transposed:
        O = w.shape[0]
        out = tuple(spec[0][2:])
        xp_ = _pad_spatial(am, x, padding, padding)
        L = math.prod(out)
        if positions_innermost_pays(w.shape[1], kernel, stride, out):
            cols = _position_columns(am, xp_, kernel, stride, dilation, out, G)        # (G, Cg*KK, N*L)
            res = xp.matmul(w.reshape(G, O // G, -1), cols)                              # (G, Og, N*L)
            if b is not None:                    # in place, before the one copy that makes channels first
                res += b.astype(acc, copy=False).reshape(G, O // G, 1)
            res = res.reshape(G, O // G, N, L).transpose(2, 0, 1, 3).reshape((N, O) + out)
        else:
            cols = _columns(am, xp_, kernel, stride, dilation, out, G)                 # (G, N*L, KK*Cg)
            res = xp.matmul(cols, _kernel_major(w, G).transpose(0, 2, 1))             # (G, N*L, Og)
            if b is not None:                    # in place, before the one copy that makes channels first
                res += b.astype(acc, copy=False).reshape(G, 1, O // G)
            res = res.reshape(G, N, L, O // G).transpose(1, 0, 3, 2).reshape((N, O) + out)
    else:
        res = _col2im_transposed(am, x, w, stride, padding, dilation, _tup(output_padding, nd), G)
        if b is not None:
            res = res + b.astype(acc, copy=False).reshape((1, -1) + (1,) * nd)
    return xp.ascontiguousarray(res, dtype=dt)


def _grouped_product(am: ArrayModule, a, b, kernel, stride, dilation, groups: int, weight_shape):
    """sum over (n, l) of a[n, g*A + i, l] * windows(b)[n, g*Bg + j, l, k], shaped as the weight (G*A, Bg,
    *kernel): the weight gradient's one batched matmul of one tensor with the windows of the other (`b`
    padded already; `a` has the output positions L)."""
    N = a.shape[0]
    A = a.shape[1] // groups
    spatial = a.shape[2:]
    L = math.prod(spatial)
    lhs = a.reshape(N, groups, A, L).transpose(1, 2, 0, 3).reshape(groups, A, N * L)
    Bg = b.shape[1] // groups
    if positions_innermost_pays(Bg, kernel, stride, spatial):          # the product in the weight's order
        cols = _position_columns(am, b, kernel, stride, dilation, spatial, groups)       # (G, Bg*KK, N*L)
        return am.xp.matmul(lhs, cols.transpose(0, 2, 1)).reshape(weight_shape)
    prod = am.xp.matmul(lhs, _columns(am, b, kernel, stride, dilation, spatial, groups))   # (G, A, KK*Bg)
    nd = len(kernel)
    prod = prod.reshape((groups * A,) + tuple(kernel) + (Bg,))
    return prod.transpose((0, 1 + nd) + tuple(range(1, 1 + nd))).reshape(weight_shape)


def input_gradient_output_padding(x_shape, g_shape, w_shape, stride, padding, dilation) -> tuple:
    """The output padding of the transposed convolution that gives a convolution's input gradient the
    input's size (the rows and columns a stride skipped at the end)."""
    return tuple(x_shape[2 + i] - ((g_shape[2 + i] - 1) * stride[i] - 2 * padding[i]
                                   + dilation[i] * (w_shape[2 + i] - 1) + 1) for i in range(len(w_shape) - 2))


def convolution_backward(am: ArrayModule, specs, g, x, w, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """(grad input, grad weight, grad bias), each where `specs` has one, as the decomposition computes them
    (ember/decompositions/convolution.py) but on arrays: the input gradient is the transposed convolution
    of `g` with the weight (the convolution, for a transposed forward), the weight gradient one batched
    matmul of one tensor with the windows of the other, the bias gradient a sum."""
    xp = am.xp
    nd = w.ndim - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    G = int(groups)
    kernel = w.shape[2:]
    out = [None, None, None]
    if specs[0] is not None:
        if transposed:
            out[0] = convolution(am, specs[0], g, w, None, stride, padding, dilation, False, (0,) * nd, G)
        else:
            opad = input_gradient_output_padding(x.shape, g.shape, w.shape, stride, padding, dilation)
            out[0] = convolution(am, specs[0], g, w, None, stride, padding, dilation, True, opad, G)
    if specs[1] is not None:
        dt = am.native_of[specs[1][1]]
        acc = am.compute_of[dt]
        a, b = (x, g) if transposed else (g, x)
        padded = _pad_spatial(am, b.astype(acc, copy=False), padding, padding)
        prod = _grouped_product(am, a.astype(acc, copy=False), padded, kernel, stride, dilation, G, w.shape)
        out[1] = xp.ascontiguousarray(prod, dtype=dt)
    if specs[2] is not None:
        dt = am.native_of[specs[2][1]]
        # over the batch first (adds of whole planes), then each channel's plane: on small feature maps
        # several times faster than one reduction over (0, *spatial), whose short rows dominate it
        planes = g.astype(am.compute_of[dt], copy=False).sum(axis=0)
        total = planes.sum(axis=tuple(range(1, planes.ndim)))
        out[2] = xp.ascontiguousarray(total, dtype=dt)
    return tuple(out)


# ---------------------------------------------------------------------------- pooling
def _geometry(shape, kernel_size, stride, padding, dilation, ceil_mode):
    """A 2-D pooling's (kernel, stride, padding, dilation, output size, extra padding after) for an
    input of `shape`: `extra` is what ceil_mode's last window reaches past the padded input."""
    kernel = _tup(kernel_size, 2)
    stride = _tup(stride, 2, kernel)
    padding, dilation = _tup(padding, 2), _tup(dilation, 2)
    out = []
    for n, k, s, p, d in zip(shape[-2:], kernel, stride, padding, dilation):
        o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out.append(o)
    extra = tuple(max(0, (out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - shape[-2 + i]
                      - 2 * padding[i]) for i in range(2))
    return kernel, stride, padding, dilation, tuple(out), extra


def _lowest(am: ArrayModule, dt):
    """The padding value max pooling never picks: -inf for floats, the integer dtype's minimum."""
    if dt.kind == "f" or dt in am.lowp:
        return -float("inf")
    return am.xp.iinfo(dt).min


def max_pool2d_with_indices(am: ArrayModule, specs, x, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """The window maxima and their flat indices into each (H, W) plane of the input."""
    xp = am.xp
    unbatched = x.ndim == 3
    x4 = x[None] if unbatched else x
    kernel, stride, padding, dilation, out, extra = _geometry(x4.shape, kernel_size, stride, padding, dilation,
                                                              ceil_mode)
    H, W = x4.shape[-2:]
    xp_ = _pad_spatial(am, x4, padding, (padding[0] + extra[0], padding[1] + extra[1]), _lowest(am, x4.dtype))
    win = _windows(am, xp_, kernel, stride, dilation, out)            # (N, C, *out, kh, kw), a view
    # one pass per kernel offset over strided views (a reduction over a window's few trailing values is
    # several times slower): an offset takes over where it is greater (ties keep the first, as PyTorch's
    # kernel) or NaN (the last NaN of a window wins, its value NaN)
    values = win[..., 0, 0].copy()
    arg = xp.zeros(values.shape, dtype=xp.int64)
    floating = win.dtype.kind == "f" or win.dtype in am.lowp
    for k in range(1, kernel[0] * kernel[1]):
        candidate = win[..., k // kernel[1], k % kernel[1]]
        wins = candidate > values
        if floating:
            wins |= candidate != candidate
        xp.copyto(values, candidate, where=wins)
        arg[wins] = k
    kh, kw = arg // kernel[1], arg % kernel[1]
    oh = xp.arange(out[0]).reshape(-1, 1) * stride[0] - padding[0]
    ow = xp.arange(out[1]).reshape(1, -1) * stride[1] - padding[1]
    indices = (oh + kh * dilation[0]) * W + (ow + kw * dilation[1])
    values = xp.ascontiguousarray(values, dtype=am.native_of[specs[0][1]])
    indices = xp.ascontiguousarray(indices, dtype=xp.int64)
    return (values[0], indices[0]) if unbatched else (values, indices)


def max_pool2d_with_indices_backward(am: ArrayModule, spec, g, x, kernel_size, stride, padding, dilation, ceil_mode,
                                     indices):
    """Each output's gradient to the input position its index names: an assignment where windows cannot
    overlap (no position is picked twice), else accumulated in order (`add.at`)."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    acc = am.compute_of[dt]
    kernel = _tup(kernel_size, 2)
    stride, dilation = _tup(stride, 2, kernel), _tup(dilation, 2)
    H, W = x.shape[-2:]
    planes = math.prod(x.shape[:-2])
    rows = xp.arange(planes, dtype=xp.int64).reshape(-1, 1) * (H * W)
    per_plane = math.prod(indices.shape[-2:])
    target = (indices.reshape(planes, per_plane).astype(xp.int64, copy=False) + rows).reshape(-1)
    values = g.astype(acc, copy=False).reshape(-1)
    res = xp.zeros(planes * H * W, dtype=acc)
    if all(stride[i] >= dilation[i] * (kernel[i] - 1) + 1 for i in range(2)):
        res[target] = values
    else:
        xp.add.at(res, target, values)
    return xp.ascontiguousarray(res.reshape(x.shape), dtype=dt)


def avg_pool2d(am: ArrayModule, spec, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Window sums (in int64 for integers, truncated after the division) over the window counts."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    unbatched = x.ndim == 3
    x4 = x[None] if unbatched else x
    kernel, stride, padding, _, out, extra = _geometry(x4.shape, kernel_size, stride, padding, 1, ceil_mode)
    floating = dt.kind == "f" or dt in am.lowp
    acc = am.compute_of[dt] if floating else xp.dtype("int64")
    xp_ = _pad_spatial(am, x4.astype(acc, copy=False), padding, (padding[0] + extra[0], padding[1] + extra[1]))
    total = _windows(am, xp_, kernel, stride, (1, 1), out).sum(axis=(-2, -1), dtype=acc)
    if divisor_override is not None:
        div = divisor_override
    else:
        counts = []
        for i in range(2):
            n = x4.shape[2 + i]
            start = xp.arange(out[i]) * stride[i] - padding[i]
            end = xp.minimum(start + kernel[i], n + padding[i])
            if not count_include_pad:
                start, end = xp.maximum(start, 0), xp.minimum(end, n)
            counts.append(end - start)
        div = counts[0].reshape(-1, 1) * counts[1].reshape(1, -1)
    res = total / div if floating else xp.trunc(total / div)
    res = xp.ascontiguousarray(res, dtype=dt)
    return res[0] if unbatched else res


KERNELS = {"convolution": convolution, "convolution_backward": convolution_backward,
           "max_pool2d_with_indices": max_pool2d_with_indices,
           "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
           "avg_pool2d": avg_pool2d}
