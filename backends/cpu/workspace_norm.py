"""The scratch of the cpu normalization and softmax kernels (array_kernels/normalization.py, reductions.py and the
layer-norm loops of norm_numba.py), declared per op for `Backend.workspace`: workspace.py's table lists these
beside the other kernels' (its docstring says what a declaration is: the peak of live bytes inside the call
less the outputs' bytes)."""
from __future__ import annotations

import math

from ember.core.numpy_interop import to_numpy_dtype

from .array_kernels.context import SCRATCH_BLOCK
from .workspace_common import F32, LOW_PRECISION, NUMPY_BUFFER, _acc_size, _lowp, _numel


# ------------------------------------------------------------------------------------- normalization
def _eager_layer_norm(x, normalized_shape, w, b, eps) -> int:
    """x less its mean, the squares' transient for the variance, then the normalisation in place; the
    statistics before their cast (low precision: x's float32 copy and the float32 result too)."""
    n = _numel(x)
    rows = n // max(1, math.prod(normalized_shape)) if n else 0
    acc, out_size = _acc_size(x), x.dtype.itemsize
    lx = F32 * n if _lowp(x) else 0
    stats = rows * acc
    during_variance = lx + stats + 2 * n * acc
    at_end = lx + 2 * stats + n * acc + (n * out_size if _lowp(x) else 0) + 2 * stats
    outputs = n * out_size + 2 * stats
    return max(during_variance, at_end) - outputs


def _eager_layer_norm_backward(g, x, normalized_shape, mean, rstd, w, b, output_mask) -> int:
    """xhat from a float32/64 copy of x; for the input gradient g*w, g*w less its mean, and one product at a
    time; for the weight's, g*xhat before its sum (low precision: g's float32 copy and the float32 input
    gradient before rounding). Each of those steps broadcasts a statistic or the weight over x, for which
    numpy buffers NUMPY_BUFFER elements."""
    n = _numel(x)
    acc, lp = _acc_size(x), x.dtype.itemsize
    low = _lowp(x)
    features = math.prod(normalized_shape)
    ga = F32 * n if low else 0
    xhat = n * acc + min(n, NUMPY_BUFFER) * acc      # (with the buffer of the broadcast op running at each peak)
    peaks = [ga + n * acc + xhat]
    outputs = 0
    gw_in = n * acc if output_mask[0] and w is not None else 0
    gi_acc = 0
    if output_mask[0]:
        gi_acc = n * acc if low else 0
        peaks.append(ga + xhat + gw_in + n * acc + n * acc)
        outputs += n * lp
        peaks.append(ga + xhat + gw_in + gi_acc + outputs)
    outer = n > features
    if output_mask[1]:
        peaks.append(ga + xhat + gw_in + gi_acc + outputs + n * acc)
        outputs += features * lp if outer else n * lp
    if output_mask[2]:
        outputs += features * lp
    return max(peaks) - outputs


def _layer_norm_loops(x, normalized_shape) -> bool:
    """Whether norm_numba.py's loops serve layer norm over `x` (plugin.py's NUMBA_KERNELS, from the first call)."""
    return _numel(x) > 0 and math.prod(normalized_shape) > 0 and x.dtype.name in ("float32", "float64") + tuple(
        LOW_PRECISION)


def _compute_copy(a) -> int:
    """Bytes of the contiguous copy in the compute dtype the layer-norm loops make of `a` (0: used as it is)."""
    return 0 if a is None or (not _lowp(a) and a.flags.c_contiguous) else _acc_size(a) * _numel(a)


def native_layer_norm(x, normalized_shape, w, b, eps) -> int:
    """The loops (one row at a time): contiguous compute-dtype copies of the operands where needed, and for
    float16/bfloat16 the float32 result and statistics before rounding."""
    if not _layer_norm_loops(x, normalized_shape):
        return _eager_layer_norm(x, normalized_shape, w, b, eps)
    rows = _numel(x) // math.prod(normalized_shape)
    lowp = F32 * (_numel(x) + 2 * rows) if _lowp(x) else 0      # the float32 result and statistics
    return _compute_copy(x) + _compute_copy(w) + _compute_copy(b) + lowp


def native_layer_norm_backward(g, x, normalized_shape, mean, rstd, w, b, output_mask) -> int:
    """The loops: compute-dtype copies of g, x, the weight and the statistics where needed, the float32 input
    gradient before rounding (float16/bfloat16), and the float64 sums of the weight's and bias's gradients
    (outputs themselves for a float64 x)."""
    if not _layer_norm_loops(x, normalized_shape) or tuple(g.shape) != tuple(x.shape):
        return _eager_layer_norm_backward(g, x, normalized_shape, mean, rstd, w, b, output_mask)
    sums = 0 if x.dtype.name == "float64" else 8 * math.prod(normalized_shape) * (
        bool(output_mask[1]) + bool(output_mask[2]))
    lowp_gi = F32 * _numel(x) if _lowp(x) and output_mask[0] else 0
    return _compute_copy(g) + _compute_copy(x) + _compute_copy(w) + _compute_copy(mean) + _compute_copy(rstd) \
        + lowp_gi + sums


def native_batch_norm(x, w, b, running_mean, running_var, training, momentum, eps) -> int:
    """The centred input (normalised in place into the result) beside, in training, the squares for the
    variance, in eval numpy's buffer for the broadcast statistics; float16/bfloat16: the float32 copy of x
    before, the float32 result beside the rounded one after."""
    n, acc = _numel(x), _acc_size(x)
    result = n * x.dtype.itemsize
    copy = F32 * n if _lowp(x) else 0
    during = copy + n * acc + (n * acc if training else min(n, NUMPY_BUFFER) * acc)
    in_place = not _lowp(x) and x.flags.c_contiguous          # the centred array is the result itself
    return max(during, n * acc + (0 if in_place else result)) - result


def native_batch_norm_backward(g, x, w, running_mean, running_var, save_mean, save_invstd, train, eps,
                               output_mask) -> int:
    """Compute-dtype copies of x (float16/bfloat16) and g (those, or a strided g); for the weight's gradient or
    a training input gradient the normalised input and its product with g (the product's buffer becomes a
    training input gradient); an eval input gradient of its own; numpy's buffer for the broadcast per-channel
    factors; for float16/bfloat16 the float32 input gradient beside the rounded one."""
    n, acc = _numel(x), _acc_size(x)
    low = _lowp(x)
    copies = (F32 * n if low else 0) + (acc * n if low or not g.flags.c_contiguous else 0)
    full = 2 * n * acc if output_mask[1] or (train and output_mask[0]) else 0
    buffer = min(n, NUMPY_BUFFER) * acc
    result = n * x.dtype.itemsize if output_mask[0] else 0
    peaks = [copies + full]
    if output_mask[0]:
        own = 0 if train else n * acc                  # eval: g times the per-channel factor, a new array
        peaks += [copies + full + own + buffer, copies + full + own + (result if low else 0)]
    return max(peaks) - result


# ------------------------------------------------------------------------------------ softmax
def _softmax_sizes(x, dim, dtype):
    """(elements, one per row along dim, bytes of a compute-dtype element, of the result's element, of the
    input's compute-dtype copy (0: used as it is), whether the kernel goes a block of rows at a time,
    how many rows a block holds)."""
    out = to_numpy_dtype(dtype) if dtype is not None else x.dtype
    low = out.name in LOW_PRECISION
    acc = F32 if low else out.itemsize
    n_all = _numel(x)
    n = x.shape[dim] if x.shape else 1
    rows = n_all // n if n else 0
    copy = n_all * acc if x.dtype.name != ("float32" if low else out.name) else 0
    # the kernel's test on its compute-dtype array: a copy made by astype keeps a C-contiguous input's layout
    by_rows = bool(x.shape) and dim % len(x.shape) == len(x.shape) - 1 and x.flags.c_contiguous
    block_rows = min(max(1, SCRATCH_BLOCK // n), rows) if n else 0
    return n_all, rows, acc, out.itemsize, copy, by_rows, block_rows


def _broadcast_buffer(elements: int, inner: int, acc: int) -> int:
    """numpy's buffer for the in-place update of `elements` by one value per row (rows of `inner`): the
    broadcast operand, NUMPY_BUFFER elements (or fewer), where a row is shorter than the buffer."""
    return min(elements, NUMPY_BUFFER) * acc if 1 < inner < NUMPY_BUFFER else 0


def _result_peak(n_all: int, acc: int, out_bytes: int, during: int, kept_at_end: int = 0) -> int:
    """The peak of a kernel computing its result in one compute-dtype array: `during` bytes beside that array
    while it is computed, then, for another result dtype, the array beside the rounded result (and
    `kept_at_end` bytes still alive); less the result."""
    result, computed = n_all * out_bytes, n_all * acc
    return max(computed + during, kept_at_end + computed + result if computed != result else 0) - result


def _softmax_peak(sizes: tuple, transient: int) -> int:
    """Block by block the input's copy stays alive beside the transient; over the whole array it is freed
    after the maxima are subtracted (numpy buffering them), before the transient."""
    n_all, rows, acc, out_bytes, copy, by_rows, _ = sizes
    during = copy + transient if by_rows else max(copy + rows * acc + min(n_all, NUMPY_BUFFER) * acc, transient)
    return _result_peak(n_all, acc, out_bytes, during)


def softmax(x, dim, dtype=None) -> int:
    """Along the last dim of a C-contiguous input, per block of rows: its maxima, then its sums and numpy's
    buffer for the division by them; elsewhere the kept maxima, then the sums and the buffer. The input's
    compute-dtype copy (float16/bfloat16, another `dtype`) and the float32 result of a low-precision call
    besides."""
    sizes = n_all, rows, acc, _, _, by_rows, block_rows = _softmax_sizes(x, dim, dtype)
    if not n_all or not x.shape:
        return 0
    if by_rows:
        transient = block_rows * acc + _broadcast_buffer(block_rows * x.shape[-1], x.shape[-1], acc)
    else:
        transient = rows * acc + min(n_all, NUMPY_BUFFER) * acc
    return _softmax_peak(sizes, transient)


def log_softmax(x, dim, dtype=None) -> int:
    """Along the last dim of a C-contiguous input: the first block's exponentials (the scratch every block
    reuses), a block's maxima or sums, numpy's buffer for the subtraction of their logarithms; elsewhere
    the exponentials of the whole input beside their sums. The copies as softmax's."""
    sizes = n_all, rows, acc, _, _, by_rows, block_rows = _softmax_sizes(x, dim, dtype)
    if not n_all or not x.shape:
        return 0
    if by_rows:
        n = x.shape[-1]
        transient = block_rows * n * acc + block_rows * acc + _broadcast_buffer(block_rows * n, n, acc)
    else:
        transient = n_all * acc + rows * acc
    return _softmax_peak(sizes, transient)


def _backward_data(g, y, dim, strided_beside_sums: bool) -> int:
    """_softmax_backward_data and _log_softmax_backward_data: one compute-dtype array that becomes the result
    (g * y, or exp(y)), beside it the sums (per block of rows along the last dim of contiguous operands, else
    kept over the whole array) and numpy's buffer for their broadcast (`strided_beside_sums`: another for a
    strided g in the same call); float16/bfloat16: float32 copies of g and y, and the float32 result beside
    the rounded one."""
    n_all, rows, acc, out_bytes, copy, by_rows, block_rows = _softmax_sizes(g, dim, None)
    if not n_all or not g.shape:
        return 0
    n = g.shape[-1]
    if by_rows and y.flags.c_contiguous:
        transient = block_rows * acc + _broadcast_buffer(block_rows * n, n, acc)
    else:
        buffers = 2 if strided_beside_sums and not copy and not g.flags.c_contiguous else 1
        transient = rows * acc + buffers * min(n_all, NUMPY_BUFFER) * acc
    return _result_peak(n_all, acc, out_bytes, 2 * copy + transient, kept_at_end=2 * copy)


def softmax_backward_data(g, y, dim, input_dtype) -> int:
    """g less the sums of g * y, in one call: a strided g is buffered beside the broadcast sums."""
    return _backward_data(g, y, dim, True)


def log_softmax_backward_data(g, y, dim, input_dtype) -> int:
    return _backward_data(g, y, dim, False)
