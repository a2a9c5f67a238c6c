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
from .workspace_common import F32, LOW_PRECISION, NUMPY_BUFFER, _acc_size, _lowp, _numel
from .workspace_conv import convolution, convolution_backward, max_pool2d_with_indices_backward
from .workspace_norm import (log_softmax, log_softmax_backward_data, native_batch_norm, native_batch_norm_backward,
                             native_layer_norm, native_layer_norm_backward, softmax, softmax_backward_data)


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
    "native_batch_norm": native_batch_norm,
    "native_batch_norm_backward": native_batch_norm_backward,
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
    "_softmax_backward_data": softmax_backward_data,
    "_log_softmax_backward_data": log_softmax_backward_data,
}
