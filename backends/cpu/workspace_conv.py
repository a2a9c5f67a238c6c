"""The scratch of the cpu convolution and pooling kernels (array_kernels/nn_layers.py), declared per op for
`Backend.workspace`: workspace.py's table lists these beside the other kernels' (its docstring says what a
declaration is: the peak of live bytes inside the call less the outputs' bytes)."""
from __future__ import annotations

import math

from .array_kernels.nn_layers import _tup, positions_innermost_pays     # the kernels' own reading of the arguments
from .workspace_common import F32, _acc_size, _lowp, _numel


# --------------------------------------------------------------------------------- convolution
def _moved_copy(shape, size: int) -> int:
    """Bytes of `ascontiguousarray(moveaxis(x, 1, -1))` for an (N, C, *spatial) array: none when that is
    already contiguous (one channel, or a single position)."""
    n, c, spatial = shape[0], shape[1], math.prod(shape[2:])
    return 0 if c == 1 or spatial == 1 or n * c * spatial == 0 else n * c * spatial * size


def _columns_copy(n, c, out_positions, kernel, stride, size) -> int:
    """Bytes of im2col's columns (G, N*L, KK*Cg): a copy, except for a 1x1 kernel at stride 1 (then a view
    of the channels-last input)."""
    kk = math.prod(kernel)
    if kk == 1 and all(s == 1 for s in stride):
        return 0
    return n * out_positions * kk * c * size


def _is_view(shape, order) -> bool:
    """Whether reshaping a C-contiguous array of `shape`, transposed by `order`, is a view: its axes of
    more than one element keep their order."""
    kept = [axis for axis in order if shape[axis] != 1]
    return kept == sorted(kept)


def _forward(x_shape, w_shape, stride, padding, dilation, groups, size, out_size, acc_copies: int,
             contiguous: bool = True, w_contiguous: bool = True):
    """(peak live bytes, output bytes) of nn_layers.convolution's direct (non-transposed) path; `size` the
    compute dtype's bytes, `out_size` the result's, `acc_copies` the bytes of float32 copies of low-precision
    operands alive throughout; `w_contiguous`: whether the (compute-dtype) weight reshapes as a view."""
    n, c = x_shape[:2]
    nd = len(w_shape) - 2
    kernel, o = w_shape[2:], w_shape[0]
    padded = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
    out = tuple((padded[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd))
    positions = math.prod(out)
    pad = n * c * math.prod(padded) * size if any(padding) or not contiguous else 0
    cg, kk = c // groups, math.prod(kernel)
    res = n * positions * o * size
    if positions_innermost_pays(cg, kernel, stride, out):
        # the columns copied from the padded input itself; the weight reshaped, a view of a contiguous one
        last, last_alive = 0, 0
        cols = n * positions * kk * c * size
        wk = 0 if w_contiguous else o * cg * kk * size
        channels_first = 0 if _is_view((groups, o // groups, n, positions), (2, 0, 1, 3)) else res
    else:
        last = _moved_copy((n, c) + padded, size)
        cols = _columns_copy(n, c, positions, kernel, stride, size)
        if not cols:
            cols, last_alive = 0, last              # the columns view keeps the channels-last copy alive
        else:
            last_alive = 0
        wk = 0 if kk == 1 or cg == 1 else o * cg * kk * size
        channels_first = 0 if _is_view((groups, n, positions, o // groups), (1, 0, 3, 2)) else res   # (N, O, *out)
    result = n * positions * o * out_size
    base = acc_copies + pad + last_alive
    if channels_first:
        peaks = [base + last + cols, base + cols + wk + res, base + cols + res + channels_first]
        if out_size != size:            # rounded to the low-precision dtype while the float32 result lives
            peaks.append(base + cols + channels_first + result)
    else:
        peaks = [base + last + cols, base + cols + wk + res]
        if out_size != size:
            peaks.append(base + cols + res + result)
    return max(peaks), result


def _transposed_input_gradient(g_shape, w_shape, x_shape, stride, padding, dilation, groups, size, out_size,
                               acc_copies: int, output_padding=None):
    """(peak, output bytes) of the input gradient as a transposed convolution (nn_layers._col2im_transposed):
    g channels-last and the weight rearranged, their product's columns, then the zeroed output they are
    added into, then the cropped channels-first result."""
    n, o = g_shape[:2]
    cg, kernel = w_shape[1], w_shape[2:]
    kk, positions = math.prod(kernel), math.prod(g_shape[2:])
    nd = len(kernel)
    rows = 0 if _moved_copy(g_shape, 1) == 0 and groups == 1 else n * o * positions * size
    wm = w_shape[0] * cg * kk * size
    cols = groups * n * positions * kk * cg * size
    full = []
    for i in range(nd):
        opad = output_padding[i] if output_padding is not None else \
            x_shape[2 + i] - ((g_shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
        full.append((g_shape[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + opad)
    res = n * math.prod(full) * groups * cg * size
    cropped = math.prod(f - 2 * p for f, p in zip(full, padding))
    result = n * groups * cg * cropped * out_size
    if groups * cg == 1 and not any(padding) and out_size == size:      # channels-first already: the result
        return max(acc_copies + rows + wm + cols, acc_copies + cols + res), res
    return max(acc_copies + rows + wm + cols, acc_copies + cols + res, acc_copies + res + result), result


def convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups) -> int:
    """The direct convolution: im2col columns times the weight, per group (nn_layers.convolution); the
    transposed one: the product's columns added into a zeroed output, cropped (and the bias added) in a copy."""
    nd = len(w.shape) - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    size = _acc_size(x)
    acc = F32 * (_numel(x) + _numel(w)) if _lowp(x) else 0
    if transposed:
        peak, result = _transposed_input_gradient(x.shape, w.shape, x.shape, stride, padding, dilation, int(groups),
                                                  size, size if b is not None else x.dtype.itemsize, acc,
                                                  _tup(output_padding, nd))
        if b is not None:                   # res + bias in the compute dtype, then cast (or copied) to the result
            out = result // size * x.dtype.itemsize
            peak = max(peak, acc + result + out)
            result = out
        return peak - result
    peak, result = _forward(x.shape, w.shape, stride, padding, dilation, int(groups), size, x.dtype.itemsize, acc,
                            x.flags.c_contiguous, w.flags.c_contiguous or _lowp(x))
    return peak - result


def convolution_backward(g, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                         output_mask) -> int:
    """The input gradient as a transposed convolution, then the weight gradient as one product of g with
    the input's columns (both computed in float32 for low precision), then the bias gradient (g summed over the
    batch, then per plane)."""
    if transposed:
        return 0
    nd = len(w.shape) - 2
    stride, padding, dilation = _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd)
    groups = int(groups)
    size, lp = _acc_size(g), g.dtype.itemsize
    low = _lowp(g)
    outputs, peaks = 0, [0]
    if output_mask[0]:
        acc = F32 * (_numel(g) + _numel(w)) if low else 0
        peak, gi = _transposed_input_gradient(g.shape, w.shape, x.shape, stride, padding, dilation, groups, size, lp,
                                              acc)
        peaks.append(peak)
        outputs += gi
    if output_mask[1]:
        n, c = x.shape[:2]
        kernel = w.shape[2:]
        padded = tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
        positions = math.prod(g.shape[2:])
        x32 = F32 * _numel(x) if low else 0
        if any(padding) or (not low and not x.flags.c_contiguous):
            pad = n * c * math.prod(padded) * size
            peaks.append(outputs + x32 + pad)          # the float32 copy while the padded one is filled
        else:
            pad = x32                                  # the padded input is the float32 copy itself
        g32 = F32 * _numel(g) if low else 0
        lhs = 0 if n == 1 else _numel(g) * size
        prod = _numel(w) * size
        bg = w.shape[1]
        if positions_innermost_pays(bg, kernel, stride, g.shape[2:]):  # the product in the weight's order
            last, cols, copy = 0, positions * math.prod(kernel) * n * c * size, 0
        else:
            last = _moved_copy((n, c) + padded, size)
            cols = _columns_copy(n, c, positions, kernel, stride, size)
            copy = 0 if math.prod(kernel) == 1 or bg == 1 else prod    # the product rearranged as the weight
        gw = _numel(w) * lp
        base = outputs + pad + g32 + lhs
        peaks += [base + last + cols, base + cols + (last if not cols else 0) + prod, base + prod + copy]
        if low:
            peaks.append(outputs + pad + (copy or prod) + gw)
        outputs += gw
    if output_mask[2]:                      # g summed over the batch into planes, then each plane summed
        o = w.shape[0]
        gb = o * lp
        planes = o * math.prod(g.shape[2:]) * size
        if low:                             # g's float32 copy, its planes, their float32 sums, the result
            peaks += [outputs + F32 * _numel(g) + planes, outputs + planes + F32 * o, outputs + F32 * o + gb]
        else:
            peaks.append(outputs + planes + gb)
        outputs += gb
    return max(peaks) - outputs


# ------------------------------------------------------------------------------------- pooling
def max_pool2d_with_indices_backward(g, x, kernel_size, stride, padding, dilation, ceil_mode, indices) -> int:
    """Each plane's base offset and the flat int64 targets (indices + base) the gradient is scattered to;
    low precision: the gradient's float32 copy and the float32 result before its rounding."""
    planes = math.prod(x.shape[:-2])
    scratch = 8 * planes + 8 * _numel(indices)
    if _lowp(g):
        scratch += F32 * _numel(g) + F32 * _numel(x)
    return scratch
