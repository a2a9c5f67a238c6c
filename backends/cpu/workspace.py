"""The scratch the cpu kernels allocate and free inside one call, declared per op (`Backend.workspace`).

A numpy kernel's temporaries never become storages, so `ember.memory` cannot see them by watching
allocations; a meta run predicting cpu asks this table instead. Each function reads only its arguments'
shapes and dtypes (meta arrays or numpy arrays alike) and returns the kernel's *workspace*: its peak of
live bytes inside the call less the bytes of the outputs it returns. The tracker allocates that much
before the kernel's outputs and frees it once they exist, so the predicted peak of the call is its real
one. Each function follows its kernel's order of allocations step by step (named after the kernel's
locals), in the kernel's steady state: the ops that switch to numba loops after a process's first calls
(plugin.py's NUMBA_KERNELS) are declared for the loops, which keep no scratch but the one listed here.

Only kernels with scratch worth counting are listed: whole-array temporaries (float32 copies of
float16/bfloat16 operands, im2col columns, index arithmetic). `python -m ember.memory audit` measures
every op's real scratch on its conformance samples and compares it with this table.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .array_kernels import philox
from .array_kernels.context import SCRATCH_BLOCK
from .array_kernels.linalg import transposed_product_pays
from .workspace_common import F32, LOW_PRECISION, _acc_size, _lowp, _numel
from .workspace_conv import convolution, convolution_backward, max_pool2d_with_indices_backward


# ------------------------------------------------------------------------------------ products
def matmul(a, b) -> int:
    """mm, bmm: float16/bfloat16 operands multiplied as float32 copies, the product rounded once."""
    if not _lowp(a):
        return 0
    out = _numel(a) // a.shape[-1] * b.shape[-1]
    a32, b32, r32, r16 = F32 * _numel(a), F32 * _numel(b), F32 * out, a.dtype.itemsize * out
    return max(a32 + b32 + r32, r32 + r16) - r16


def linear(x, w, b=None) -> int:
    """Low precision: float32 copies of x and w, the float32 product, then with a bias the rounded
    product, its float32 copy, the bias's and their sum alive together. Float32/64 over a few rows
    (linalg.transposed_product_pays): the transposed product, copied into the result. Otherwise the bias
    added in place over the rows: numpy's ufunc buffers the broadcast operand, up to `np.getbufsize()`
    elements (the transposed product's transient, freed before, covers it)."""
    features = w.shape[0] if len(w.shape) == 2 else 1
    rows = _numel(x) // x.shape[-1] if x.shape else 1
    out = rows * features
    if _lowp(x):
        x32, w32, r32, r16 = F32 * _numel(x), F32 * _numel(w), F32 * out, x.dtype.itemsize * out
        peak = x32 + w32 + r32
        if b is not None:
            peak = max(peak, r32 + r16, r16 + 2 * r32 + F32 * _numel(b))
        return peak - r16
    if (len(x.shape) >= 2 and len(w.shape) == 2 and x.flags.c_contiguous and w.flags.c_contiguous
            and x.dtype is w.dtype and transposed_product_pays(rows, features, x.dtype.itemsize)):
        return out * x.dtype.itemsize
    if b is not None and len(x.shape) >= 2 and b.dtype is x.dtype:
        return min(out, np.getbufsize()) * x.dtype.itemsize
    return 0


def linear_backward(x, g, w, output_mask) -> int:
    """Low precision: float32 copies of g (and of w and x where a gradient reads them) alive throughout;
    each gradient computed in float32, then rounded (its float32 result freed after). The operands a
    gradient does not read may be absent (None)."""
    if not _lowp(g):
        return 0
    lp = g.dtype.itemsize
    features = g.shape[-1] if g.shape else 1
    rows = _numel(g) // features if features else 0
    gi_n = _numel(x) if output_mask[0] and x is not None else rows * w.shape[-1] if output_mask[0] else 0
    gw_n = _numel(w) if output_mask[1] and w is not None else features * x.shape[-1] if output_mask[1] else 0
    gb_n = features if output_mask[2] else 0
    base = F32 * (_numel(g) + (_numel(w) if output_mask[0] else 0) + (_numel(x) if output_mask[1] else 0))
    peak = max(base + (F32 + lp) * gi_n,
               base + lp * gi_n + (F32 + lp) * gw_n,
               base + lp * (gi_n + gw_n) + (F32 + lp) * gb_n)
    return peak - lp * (gi_n + gw_n + gb_n)


# ------------------------------------------------------------------------------------ activations
def _float32_copies(*arrays) -> int:
    """Bytes of the contiguous float32 copies the numba GELU makes of non-float32 (or strided) inputs."""
    return sum(0 if a.dtype.name == "float32" and a.flags.c_contiguous else F32 * _numel(a) for a in arrays)


def _gelu_loops(a) -> bool:
    """Whether the numba GELU loops (gelu_numba.py) serve `a`: float32 and float16/bfloat16 (computed in float32)."""
    return a.dtype.name in ("float32",) + tuple(LOW_PRECISION)


def gelu(a, approximate="none") -> int:
    """The numba loops: the float32 copy of a non-float32 (or strided) input and, for float16/bfloat16, the
    float32 result before rounding; exact, also the block of exponents (tanh works in its result's buffer).
    Float64: numpy in place into the output."""
    n = _numel(a)
    if not _gelu_loops(a):
        return 0
    exponents = F32 * min(n, SCRATCH_BLOCK) if approximate == "none" else 0
    return _float32_copies(a) + exponents + (F32 * n if _lowp(a) else 0)


def gelu_backward(g, a, approximate="none") -> int:
    """The numba loops (a gradient of the input's shape): float32 copies of other operands and the float32 result
    before rounding; exact, also two blocks of exponents. Otherwise numpy: the tanh derivative's two scratch
    blocks (`flat_blocks_with_scratch`), or the exact one's CDF block."""
    n = _numel(a)
    block = min(n, SCRATCH_BLOCK)
    if _gelu_loops(a) and g.shape == a.shape:
        exponents = 2 * F32 * block if approximate == "none" else 0
        return _float32_copies(a, g) + exponents + (F32 * n if _lowp(a) else 0)
    acc = _acc_size(a)
    low = F32 * (_numel(a) + _numel(g) + n) if _lowp(a) else 0
    if approximate == "tanh":
        return low + 2 * acc * (block if g.shape == a.shape else n) + (0 if g.shape == a.shape else acc * n)
    return low + acc * block


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


# ------------------------------------------------------------------------------------------- losses
def _plain_cross_entropy(x, weight, label_smoothing) -> bool:
    """The kernels' plain path (2-D float32/64 logits, no weight or smoothing; in-range targets assumed)."""
    return len(x.shape) == 2 and not _lowp(x) and weight is None and label_smoothing == 0 and _numel(x) > 0


def _cross_entropy_loops(x) -> bool:
    """Whether cross_entropy_numba.py's loops serve the plain case: logits within one scratch block."""
    return _numel(x) <= SCRATCH_BLOCK


def cross_entropy_indices(x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0) -> int:
    """The plain case (2-D float32/64 logits, in-range class indices, no weight or smoothing): the logits
    less their row maxima, exponentiated a block of rows at a time into one scratch (losses._exp_row_sums),
    and numpy's buffer for the broadcast subtraction; the loops (logits within one block) keep the row
    maxima and the picked log-probabilities (a loss per row, the output itself when unreduced)."""
    if not _plain_cross_entropy(x, weight, label_smoothing):
        return 0
    n, classes = x.shape
    if _cross_entropy_loops(x):
        return (_numel(x) + n + (n if reduction else 0)) * x.dtype.itemsize
    block = min(n, max(1, SCRATCH_BLOCK // max(classes, 1))) * classes
    return (block + min(block, NUMPY_BUFFER)) * x.dtype.itemsize


def cross_entropy_indices_backward(grad, x, lse, target, weight, reduction, ignore_index, label_smoothing) -> int:
    """The plain case: numpy's buffer for the logits less their logsumexp, written into the gradient (none
    for the loops, which write the gradient directly)."""
    if not _plain_cross_entropy(x, weight, label_smoothing) or _cross_entropy_loops(x):
        return 0
    return min(_numel(x), NUMPY_BUFFER) * x.dtype.itemsize


# ------------------------------------------------------------------------------------------ attention
def _attention_sizes(q, k):
    """(elements of the scores, of their row statistics, bytes of one compute-dtype element)."""
    rows = _numel(q) // q.shape[-1]
    return rows * k.shape[-2], rows, _acc_size(q)


def _causal_mask(q, k, acc: int) -> int:
    """The (L, S) mask added to the scores: numpy's tri as bools, where's 0/-inf of the compute dtype."""
    return q.shape[-2] * k.shape[-2] * (1 + acc)


def _attention_loops(q, k, v, scale, g=None) -> bool:
    """Whether attention_numba.py's loops serve the call (float32/float64 operands of one dtype, q's batch dims
    in k and v, no empty operand, a positive scale, an output gradient for the backward)."""
    arrays = (q, k, v) if g is None else (q, k, v, g)
    return (q.dtype.name in ("float32", "float64") and all(a.dtype == q.dtype for a in arrays) and len(q.shape) >= 2
            and all(tuple(a.shape[:-2]) == tuple(q.shape[:-2]) for a in (k, v)) and min(map(_numel, (q, k, v))) > 0
            and scale > 0)


def sdpa_fused(q, k, v, is_causal=False, scale=1.0) -> int:
    """The loops (float32/float64): the scores, then the row maxima and the ones the row sums are a product
    with; the sums become the logsumexp output. Otherwise the numpy kernel: the scores (their softmax in
    place) and, at the end, the row maxima beside the row sums (which become the logsumexp output) and the
    output; float16/bfloat16 q, k, v in float32 throughout, and the output's float32 product beside its
    rounding."""
    n, rows, acc = _attention_sizes(q, k)
    out = rows * v.shape[-1]
    if _attention_loops(q, k, v, scale):
        return n * acc + rows * acc + max(0, k.shape[-2] * acc - out * acc)
    lowp = _lowp(q)
    copies = F32 * (_numel(q) + _numel(k) + _numel(v)) if lowp else 0
    out_bytes = out * q.dtype.itemsize
    end = copies + n * acc + 2 * rows * acc + out_bytes + (F32 * out if lowp else 0)
    causal = copies + n * acc + _causal_mask(q, k, acc) if is_causal else 0
    return max(end, causal) - out_bytes - rows * acc


def sdpa_fused_backward(g, gl, q, k, v, lse, is_causal, scale, output_mask) -> int:
    """The loops (float32/float64): the weights, and dS beside them for q's or k's gradient. Otherwise the
    numpy kernel: the weights recomputed in the scores' buffer, dP beside them (A dP in place), the row sums
    of A dP; float16/bfloat16 q, k and the gradient in float32 throughout (v while dP is computed), and each
    gradient's float32 product beside its rounding."""
    n, rows, acc = _attention_sizes(q, k)
    if g is not None and _attention_loops(q, k, v, scale, g) and lse.dtype == q.dtype \
            and (gl is None or gl.dtype == q.dtype):
        return n * acc * (2 if output_mask[0] or output_mask[1] else 1)
    lowp = _lowp(q)
    size = q.dtype.itemsize
    copies = F32 * (_numel(q) + _numel(k) + (_numel(g) if g is not None else 0)) if lowp else 0
    grads = [(_numel(t), wanted) for t, wanted in zip((q, k, v), output_mask)]
    outputs = sum(numel * size for numel, wanted in grads if wanted)
    held = sum(numel * (size + (F32 if lowp else 0)) for numel, wanted in grads if wanted)   # at the end
    moments = [copies + n * acc + (_causal_mask(q, k, acc) if is_causal else 0)]
    if output_mask[0] or output_mask[1]:
        dv = grads[2][0] * (size + (F32 if lowp else 0)) if output_mask[2] else 0
        v32 = F32 * _numel(v) if lowp and g is not None else 0
        moments.append(copies + 2 * n * acc + dv + v32)
        moments.append(copies + 2 * n * acc + rows * acc + held)
    else:
        moments.append(copies + n * acc + held)
    return max(moments) - outputs


# ------------------------------------------------------------------------------------- indexing
#: numpy's ufunc and indexing buffer, in elements (numpy.getbufsize())
NUMPY_BUFFER = 8192


def ufunc_buffers(*args) -> int:
    """A binary (or where's ternary) ufunc over operands of one dtype (a bool condition beside them): numpy
    buffers each operand broadcast to the result's shape, NUMPY_BUFFER elements (or the result's size) of
    its dtype. Operands of several dtypes, or float16/bfloat16 ones, take the kernels' casting path, which
    is not declared."""
    arrays = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype")]
    names = {a.dtype.name for a in arrays if a.dtype.name != "bool"}
    if len(names) > 1 or names & LOW_PRECISION:
        return 0
    shape = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    n = math.prod(shape)
    return sum(min(n, NUMPY_BUFFER) * a.dtype.itemsize for a in arrays if a.shape and tuple(a.shape) != shape)


def gather(a, dim, index, sparse_grad=False) -> int:
    """take_along_axis indexes every dim with an intp array: numpy buffers the index arrays of all but
    one, NUMPY_BUFFER elements (or the index's size) each."""
    ndim = max(len(a.shape), len(index.shape), 1)
    return (ndim - 1) * min(_numel(index), NUMPY_BUFFER) * 8


# ------------------------------------------------------------------------------------ softmax
def _softmax_sizes(x, dim, dtype):
    """(elements, one per row along dim, bytes of a compute-dtype element, of the result's element, of the
    input's compute-dtype copy (0: used as it is), whether the kernel goes a block of rows at a time,
    how many rows a block holds)."""
    from ember.core.numpy_interop import to_numpy_dtype

    out = to_numpy_dtype(dtype) if dtype is not None else x.dtype
    acc = F32 if out.name in LOW_PRECISION else out.itemsize
    n_all = _numel(x)
    n = x.shape[dim] if x.shape else 1
    rows = n_all // n if n else 0
    copy = n_all * acc if x.dtype.name != (np.dtype("float32").name if out.name in LOW_PRECISION else out.name) \
        else 0
    # the kernel's test on its compute-dtype array: a copy made by astype keeps a C-contiguous input's layout
    by_rows = bool(x.shape) and dim % len(x.shape) == len(x.shape) - 1 and x.flags.c_contiguous
    block_rows = min(max(1, SCRATCH_BLOCK // n), rows) if n else 0
    return n_all, rows, acc, out.itemsize, copy, by_rows, block_rows


def _broadcast_buffer(elements: int, inner: int, acc: int) -> int:
    """numpy's buffer for the in-place update of `elements` by one value per row (rows of `inner`): the
    broadcast operand, NUMPY_BUFFER elements (or fewer), where a row is shorter than the buffer."""
    return min(elements, NUMPY_BUFFER) * acc if 1 < inner < NUMPY_BUFFER else 0


def _softmax_peak(sizes: tuple, transient: int) -> int:
    """Block by block: the input's copy and the compute-dtype result alive with the transient beside them.
    Over the whole array the copy is freed after the maxima are subtracted (numpy buffering them), before
    the transient. Then, for another result dtype, the compute-dtype result beside the rounded one. Less
    the result."""
    n_all, rows, acc, out_bytes, copy, by_rows, _ = sizes
    result, computed = n_all * out_bytes, n_all * acc
    if by_rows:
        during = copy + computed + transient
    else:
        during = max(copy + computed + rows * acc + min(n_all, NUMPY_BUFFER) * acc, computed + transient)
    return max(during, computed + result if computed != result else 0) - result


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


# ------------------------------------------------------------------------------------ recurrent
_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def rnn_layer(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, mode, reverse=False) -> int:
    """The input projection of every step (T, B, gates x H), then per step the state projection and the
    gates (two of (B, gates x H) at the peak, inside the in-place sigmoids) and the new state (B, H); GRU's
    step holds more: its reset and update gates, the candidate and the state's update (16 (B, H) in all,
    as the audit measures it)."""
    T, B = x.shape[:2]
    H = w_ih.shape[0] // _GATES[mode]
    acc = _acc_size(x)
    gh = _GATES[mode] * H
    step = 16 * H if mode == "GRU" else 2 * gh + H
    return (T * B * gh + B * step) * acc + (F32 * (_numel(x) + _numel(w_ih) + _numel(w_hh)) if _lowp(x) else 0)


def rnn_layer_backward(g_out, g_hy, g_cy, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, output, work, mode, reverse,
                       output_mask) -> int:
    """The state each step started from (T, B, H), the gradient of each step's input projection (T, B,
    gates x H; GRU: of its state projection too) and three (B, H) step temporaries (the state and cell
    gradients and one product)."""
    T, B = x.shape[:2]
    H = w_ih.shape[0] // _GATES[mode]
    acc = _acc_size(x)
    gh = _GATES[mode] * H
    return (T * B * (H + gh * (2 if mode == "GRU" else 1)) + 3 * B * H) * acc


# ---------------------------------------------------------------------------------------- random
def _philox_loop(words: int) -> bool:
    """Whether a draw of `words` Philox words takes the numba loop (loaded, and the draw big enough for it)."""
    loop = philox.BLOCK_FUNCTIONS.get("numpy")
    return loop is not None and loop.loaded is not None and -(-words // 4) >= loop.min_blocks


def dropout_noise(x, p, generator=None) -> int:
    """The Philox draw of the uniforms (its words, their shifted and converted copies, the scaled uniforms
    and their cast) and the keep mask, as `python -m ember.memory audit` measures them: with the numba
    Philox loop 2 bytes an element per byte of the dtype, with numpy's rounds 3.5 (float16/bfloat16 draw
    float32: 15 and 18 bytes an element)."""
    n = _numel(x)
    loop = _philox_loop(n * (2 if x.dtype.itemsize == 8 else 1))
    if _lowp(x):
        return (15 if loop else 18) * n
    return (4 if loop else 7) * x.dtype.itemsize * n // 2


# ------------------------------------------------------------------------------ low-precision selects
def _bool_mask(a, *rest) -> int:
    """float16/bfloat16 relu and threshold_backward select through a bool mask of the input's size (the
    float32/64 kernels compute in place or through bit masks, without it)."""
    return _numel(a) if _lowp(a) else 0


def _threshold_backward(g, x, threshold) -> int:
    return _bool_mask(x) if _lowp(g) or g.shape != x.shape else 0


WORKSPACE: dict[str, Callable[..., int]] = {
    "mm": matmul,
    "bmm": matmul,
    "linear": linear,
    "linear_backward": linear_backward,
    "convolution": convolution,
    "convolution_backward": convolution_backward,
    "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
    "gelu": gelu,
    "gelu_backward": gelu_backward,
    "native_layer_norm": native_layer_norm,
    "native_layer_norm_backward": native_layer_norm_backward,
    "_cross_entropy_indices": cross_entropy_indices,
    "_cross_entropy_indices_backward": cross_entropy_indices_backward,
    "_scaled_dot_product_attention_fused": sdpa_fused,
    "_scaled_dot_product_attention_fused_backward": sdpa_fused_backward,
    "gather": gather,
    "_rnn_layer": rnn_layer,
    "_rnn_layer_backward": rnn_layer_backward,
    "_dropout_noise": dropout_noise,
    **{name: ufunc_buffers for name in ("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor_mode", "maximum",
                                        "minimum", "where.self", "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor",
                                        "gt.Tensor", "ge.Tensor")},
    "relu": _bool_mask,
    "threshold_backward": _threshold_backward,
    "softmax.int": softmax,
    "log_softmax.int": log_softmax,
}
