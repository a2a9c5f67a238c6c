"""Convolution as im2col + batched matmul, on ember ops only (every backend runs it).

A convolution reads sliding windows of its zero-padded input: an `as_strided` view of shape
(N, C, *out, *kernel) over the contiguous padded input (no copy until the reshape feeding
`bmm`). Groups are one more batch dimension of that `bmm`. A transposed convolution scatters
instead: the product of input and weight gives one column per (input position, kernel
offset), and `fold` adds the columns into the output with one strided slice add per kernel
offset (col2im), so no flip, zero insertion or scatter primitive is needed.

Backward (the registry formulas call `conv_backward_*` through formulas.nn_backward):
the input gradient of a convolution is the transposed convolution of `grad` with the same
weight (and vice versa); the weight gradient is a matmul of `grad` with the windows.
"""
from __future__ import annotations

import itertools
import math

from ember._generated import functions as F
from ember.core.type_promotion import promote_types
from ember.shape_rules.nn_layers import same_padding

from . import decomposition, explicit_kernel


# ------------------------------------------------------------------------ window helpers
def contiguous_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def windows(x, kernel, stride, dilation, out):
    """The sliding windows of `x` (N, C, *spatial): a view (N, C, *out, *kernel).

    `x` is made contiguous first; window `o` along a spatial dim starts at o * stride and
    its kernel offset k reads o * stride + k * dilation.
    """
    x = F.contiguous(x)
    st = contiguous_strides(tuple(x.shape))
    nd = len(kernel)
    size = tuple(x.shape[:2]) + tuple(out) + tuple(kernel)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd)) + \
        tuple(st[2 + i] * dilation[i] for i in range(nd))
    return F.as_strided(x, size, strides, x.storage_offset())


def fold(cols, size, stride, dilation):
    """col2im: the sum of `cols` (N, C, *out, *kernel) into a zero tensor of shape `size`
    (N, C, *spatial), column (o, k) landing at o * stride + k * dilation.

    One strided window add per kernel offset; each window is non-overlapping, so every
    step is an `as_strided_scatter` (differentiable, any backend).
    """
    nd = len(stride)
    kernel = tuple(cols.shape[-nd:])
    out = tuple(cols.shape[2:2 + nd])
    size = tuple(size)
    st = contiguous_strides(size)
    win_size = size[:2] + out
    win_stride = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nd))
    buf = F.zeros(size, dtype=cols.dtype, device=cols.device)
    if any(n == 0 for n in win_size):
        return F.add(buf, F.sum(cols))          # nothing lands; still a function of `cols` (autograd)
    for k in itertools.product(*(range(n) for n in kernel)):
        part = cols
        for i in reversed(range(nd)):
            part = F.select(part, 2 + nd + i, k[i])
        offset = sum(k[i] * dilation[i] * st[2 + i] for i in range(nd))
        cur = F.as_strided(buf, win_size, win_stride, offset)
        buf = F.as_strided_scatter(buf, F.add(cur, part), win_size, win_stride, offset)
    return buf


def zero_pad(x, padding, extra=None, value=0):
    """`x` padded by `padding[i]` on both sides of spatial dim i (plus `extra[i]` after)."""
    nd = len(padding)
    extra = extra or (0,) * nd
    if not any(padding) and not any(extra):
        return x
    pads = []
    for i in reversed(range(nd)):
        pads += [padding[i], padding[i] + extra[i]]
    return F.constant_pad_nd(x, pads, value)


def _tup(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v) * n if len(v) == 1 else tuple(v)
    return (v,) * n


# ------------------------------------------------------------------------------ forward
def _grouped_product(a, b_windows, groups, L, KK):
    """sum over (n, l) of a[n, g*Ag + i, l] * windows[n, g*Bg + j, l, k] -> (G, Ag, Bg*KK)."""
    N = a.shape[0]
    A = a.shape[1] // groups
    B = b_windows.shape[1] // groups
    lhs = F.reshape(F.permute(F.reshape(a, (N, groups, A, L)), (1, 2, 0, 3)), (groups, A, N * L))
    rhs = F.reshape(b_windows, (N, groups, B, L, KK))
    rhs = F.reshape(F.permute(rhs, (1, 0, 3, 2, 4)), (groups, N * L, B * KK))
    return F.bmm(lhs, rhs)


def conv_forward(x, weight, bias, stride, padding, dilation, groups):
    nd = weight.dim() - 2
    N, C = x.shape[0], x.shape[1]
    O = weight.shape[0]
    kernel = tuple(weight.shape[2:])
    xp = zero_pad(x, padding)
    out = tuple((xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd))
    L, KK = math.prod(out), math.prod(kernel)
    Cg, Og = C // groups, O // groups
    win = windows(xp, kernel, stride, dilation, out)                        # (N, C, *out, *kernel)
    cols = F.reshape(win, (N, groups, Cg, L, KK))
    cols = F.reshape(F.permute(cols, (1, 0, 3, 2, 4)), (groups, N * L, Cg * KK))
    wm = F.transpose(F.reshape(weight, (groups, Og, Cg * KK)), 1, 2)         # (G, Cg*KK, Og)
    res = F.bmm(cols, wm)                                                    # (G, N*L, Og)
    res = F.permute(F.reshape(res, (groups, N, L, Og)), (1, 0, 3, 2))        # (N, G, Og, L)
    if bias is not None:
        res = F.add(res, F.reshape(bias, (1, groups, Og, 1)))
    return F.reshape(F.contiguous(res), (N, O) + out)


def conv_transpose_forward(x, weight, bias, stride, padding, dilation, output_padding, groups):
    nd = weight.dim() - 2
    N, Cin = x.shape[0], x.shape[1]
    Og = weight.shape[1]
    kernel = tuple(weight.shape[2:])
    inp = tuple(x.shape[2:])
    L, KK = math.prod(inp), math.prod(kernel)
    Cg = Cin // groups
    xs = F.reshape(F.permute(F.reshape(x, (N, groups, Cg, L)), (1, 0, 3, 2)), (groups, N * L, Cg))
    wm = F.reshape(weight, (groups, Cg, Og * KK))
    cols = F.bmm(xs, wm)                                                     # (G, N*L, Og*KK)
    cols = F.permute(F.reshape(cols, (groups, N, L, Og, KK)), (1, 0, 3, 2, 4))
    cols = F.reshape(cols, (N, groups * Og) + inp + kernel)
    full = tuple((inp[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i] for i in range(nd))
    buf = fold(cols, (N, groups * Og) + full, stride, dilation)
    for i in range(nd):
        if padding[i]:
            buf = F.slice(buf, 2 + i, padding[i], full[i] - padding[i], 1)
    if bias is not None:
        buf = F.add(buf, F.reshape(bias, (1, groups * Og) + (1,) * nd))
    return F.contiguous(buf)


@explicit_kernel("convolution")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    nd = weight.dim() - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    output_padding = _tup(output_padding, nd)
    if input.numel() == 0:      # dtypes unchecked (the shape rule): torch's result dtype, computed in it
        dtype = input.dtype if transposed else promote_types(input.dtype, weight.dtype)
        input, weight = F._to_copy(input, dtype=dtype), F._to_copy(weight, dtype=dtype)
        bias = None if bias is None else F._to_copy(bias, dtype=dtype)
    if transposed:
        return conv_transpose_forward(input, weight, bias, stride, padding, dilation, output_padding, groups)
    return conv_forward(input, weight, bias, stride, padding, dilation, groups)


# ----------------------------------------------------------------------------- backward
def conv_backward_input(grad, input_shape, weight, stride, padding, dilation, transposed, output_padding, groups):
    """d convolution / d input: the transposed convolution of `grad` (or the convolution,
    for a transposed forward) with the same weight."""
    nd = weight.dim() - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    if transposed:
        return F.convolution(grad, weight, None, stride, padding, dilation, False, (0,) * nd, groups)
    kernel = tuple(weight.shape[2:])
    gout = tuple(grad.shape[2:])
    opad = tuple(input_shape[2 + i] - ((gout[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
                 for i in range(nd))
    return F.convolution(grad, weight, None, stride, padding, dilation, True, opad, groups)


def conv_backward_weight(grad, input, weight_shape, stride, padding, dilation, transposed, output_padding, groups):
    """d convolution / d weight: a matmul of `grad` with the windows of the padded input
    (for a transposed forward, of the input with the windows of the padded `grad`)."""
    nd = len(weight_shape) - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    kernel = tuple(weight_shape[2:])
    KK = math.prod(kernel)
    if transposed:
        a, b = input, grad
        out = tuple(input.shape[2:])
    else:
        a, b = grad, input
        out = tuple(grad.shape[2:])
    bp = zero_pad(b, padding)
    win = windows(bp, kernel, stride, dilation, out)
    N, L = a.shape[0], math.prod(out)
    prod = _grouped_product(F.reshape(a, (N, a.shape[1], L)), F.reshape(win, (N, b.shape[1], L, KK)), groups, L, KK)
    return F.reshape(prod, tuple(weight_shape))


def conv_backward_bias(grad):
    return F.sum(grad, [0] + list(range(2, grad.dim())))


# ---------------------------------------------------------------------------- wrappers
def _batched(x, nd):
    return (F.unsqueeze(x, 0), True) if x.dim() == nd + 1 else (x, False)


def _conv_nd(nd):
    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        x, unbatched = _batched(input, nd)
        if isinstance(padding, str):
            dil = _tup(dilation, nd)
            if padding == "valid":
                padding = (0,) * nd
            else:                       # "same": the odd zero of each dimension on the right, first
                padding, extra = same_padding(tuple(weight.shape[2:]), dil)
                if any(extra):
                    x = F.constant_pad_nd(x, [p for e in reversed(extra) for p in (0, e)], 0)
        out = F.convolution(x, weight, bias, _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd), False,
                            (0,) * nd, groups)
        return F.squeeze(out, [0]) if unbatched else out
    return conv


def _conv_transpose_nd(nd):
    def conv_t(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        x, unbatched = _batched(input, nd)
        out = F.convolution(x, weight, bias, _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd), True,
                            _tup(output_padding, nd), groups)
        return F.squeeze(out, [0]) if unbatched else out
    return conv_t


_C1, _C2, _T1, _T2 = _conv_nd(1), _conv_nd(2), _conv_transpose_nd(1), _conv_transpose_nd(2)
_C3, _T3 = _conv_nd(3), _conv_transpose_nd(3)


@decomposition("conv1d")
def conv1d(*args):
    return _C1(*args)


@decomposition("conv2d")
def conv2d(*args):
    return _C2(*args)


@decomposition("conv1d.padding")
def conv1d_padding(*args):
    return _C1(*args)


@decomposition("conv2d.padding")
def conv2d_padding(*args):
    return _C2(*args)


@decomposition("conv_transpose1d")
def conv_transpose1d(*args):
    return _T1(*args)


@decomposition("conv_transpose2d.input")
def conv_transpose2d(*args):
    return _T2(*args)


@decomposition("conv3d")
def conv3d(*args):
    return _C3(*args)


@decomposition("conv3d.padding")
def conv3d_padding(*args):
    return _C3(*args)


@decomposition("conv_transpose3d.input")
def conv_transpose3d(*args):
    return _T3(*args)
