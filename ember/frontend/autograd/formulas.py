"""Helpers callable from the registry's autograd formulas (like PyTorch's FunctionsManual).

Formulas are expressions over ember ops and these helpers; everything here goes through
the dispatcher, so with create_graph=True the backward pass is itself differentiable.
Gradients need not match the input's shape or dtype: the engine sums broadcast
dimensions and casts.
"""
from __future__ import annotations

import itertools
import math

from ember._generated import functions as F
from ember.decompositions import fused_losses
from ember.dispatcher.state import STATE

from .linalg_formulas import (cholesky_backward, cholesky_solve_backward, det_backward, inv_backward,  # noqa: F401
                              slogdet_backward, solve_backward, solve_triangular_backward)  # (the linalg ops')
from .slice_pieces import SlicePieces


def maybe_multiply(grad, alpha):
    return grad if alpha == 1 else F.mul(grad, alpha)


def div_backward_self(grad, other, rounding_mode):
    if rounding_mode is not None:
        return F.zeros_like(grad)
    return F.div(grad, other)


def div_backward_other(grad, self, other, rounding_mode):
    if rounding_mode is not None:
        return F.zeros_like(grad)
    return F.neg(F.div(F.mul(grad, self), F.mul(other, other)))


def pow_backward_self(grad, self, exponent):
    """d/dself self**e = e * self**(e-1), defined as 0 where e == 0."""
    if not hasattr(exponent, "dtype"):
        if exponent == 0:
            return F.zeros_like(grad)
        return F.mul(grad, F.mul(F.pow(self, exponent - 1), exponent))
    grad_self = F.mul(grad, F.mul(F.pow(self, F.sub(exponent, 1)), exponent))
    return F.where(F.eq(exponent, 0), 0.0, grad_self)


def pow_backward_exponent(grad, self, exponent, result):
    """d/de self**e = self**e * log(self), defined as 0 where self == 0 and e >= 0."""
    if not hasattr(self, "dtype"):           # a Python number raised to a tensor power
        if self > 0:
            return F.mul(grad, F.mul(result, math.log(self)))
        log_self = float("-inf") if self == 0 else float("nan")
        out = F.mul(grad, F.mul(result, log_self))
        return F.where(F.ge(exponent, 0), 0.0, out) if self == 0 else out
    cond = F.where(F.eq(self, 0), F.ge(exponent, 0), False)
    return F.where(cond, 0.0, F.mul(grad, F.mul(result, F.log(self))))


def minmax_backward_self(grad, self, other, is_max: bool):
    """maximum/minimum: the winner gets the gradient, ties split it in half (as PyTorch)."""
    wins = F.gt(self, other) if is_max else F.lt(self, other)
    tie = F.eq(self, other)
    return F.where(wins, grad, F.where(tie, F.div(grad, 2), 0.0))


def _clamp_mask(self, min, max):
    mask = None
    if min is not None:
        mask = F.ge(self, min)
    if max is not None:
        upper = F.le(self, max)
        mask = upper if mask is None else F.where(mask, upper, False)
    return mask


def clamp_backward(grad, self, min, max):
    return F.where(_clamp_mask(self, min, max), grad, 0.0)


def clamp_backward_min(grad, self, min, max):
    below = F.lt(self, min)
    if max is not None:
        below = F.where(F.le(min, max), below, False)
    return F.where(below, grad, 0.0)


def clamp_backward_max(grad, self, min, max):
    above = F.gt(self, max)
    if min is not None:
        above = F.where(F.le(min, max), above, True)
    return F.where(above, grad, 0.0)


def _unsqueeze_dims(grad, dims, ndim: int):
    for d in sorted(d % ndim for d in dims):
        grad = F.unsqueeze(grad, d)
    return grad


def _norm_dims(dim, ndim: int):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        return (dim % max(ndim, 1),)
    return tuple(d % max(ndim, 1) for d in dim)


def sum_backward(grad, shape, dim, keepdim):
    ndim = len(shape)
    if not keepdim and ndim:
        grad = _unsqueeze_dims(grad, _norm_dims(dim, ndim), ndim)
    return F.expand(grad, tuple(shape))


def amax_backward(grad, self, result, dim, keepdim):
    """The gradient of amax/amin, shared evenly among the elements equal to the result."""
    ndim = self.dim()
    if not keepdim and ndim:
        dims = _norm_dims(dim, ndim)
        grad = _unsqueeze_dims(grad, dims, ndim)
        result = _unsqueeze_dims(result, dims, ndim)
    mask = F.eq(self, result)
    count = F.sum(mask, _norm_dims(dim, ndim) if ndim else None, keepdim=True)
    return F.where(mask, F.div(grad, count), 0.0)


def value_selecting_backward(grad, dim, indices, shape, keepdim):
    """max.dim/min.dim: the gradient goes to the selected index only."""
    ndim = len(shape)
    if ndim == 0:
        return grad
    d = dim % ndim
    if not keepdim:
        grad = F.unsqueeze(grad, d)
        indices = F.unsqueeze(indices, d)
    positions = F.arange(shape[d], device=grad.device)
    view = [1] * ndim
    view[d] = shape[d]
    mask = F.eq(F.reshape(positions, view), indices)
    return F.where(mask, grad, 0.0)


def linear_grads(input, grad, weight, bias_shape, grad_input_mask):
    """linear's three gradients through one linear_backward call. A bias with leading dims of its own
    (not the usual (out_features,) or 0-d) gets `grad` itself, which the engine sums to its shape."""
    if bias_shape is None or len(bias_shape) <= 1:           # no bias gradient, or the usual bias
        return F.linear_backward(input, grad, weight, grad_input_mask)
    gi, gw, _ = F.linear_backward(input, grad, weight, [grad_input_mask[0], grad_input_mask[1], False])
    return gi, gw, grad


def cross_entropy_indices_backward(grad, grad_logsumexp, self, logsumexp, target, weight, reduction, ignore_index,
                                   label_smoothing):
    """The gradient of _cross_entropy_indices for `self`, from the logits and logsumexp it saved: the loss's
    through one fused op in a plain backward (with create_graph, through the ember ops of a log_softmax of
    `self`, so that the graph reaches `self`), plus the softmax times a gradient arriving at the logsumexp."""
    cdim = 1 if self.dim() >= 2 else 0
    out = None
    if grad is not None:
        if STATE.grad_enabled:
            out = fused_losses.cross_entropy_of_log_probs_backward(
                grad, F.log_softmax(self, cdim), target, weight, reduction, ignore_index, label_smoothing)
        else:
            out = F._cross_entropy_indices_backward(grad, self, logsumexp, target, weight, reduction, ignore_index,
                                                    label_smoothing)
    if grad_logsumexp is not None:
        g = F.mul(F.unsqueeze(grad_logsumexp, cdim), F.softmax(self, cdim, dtype=grad_logsumexp.dtype))
        g = F._to_copy(g, dtype=self.dtype) if g.dtype is not self.dtype else g
        out = g if out is None else F.add(out, g)
    return out


def softmax_backward(grad, result, dim):
    """torch's one op (a backend's one kernel; its decomposition under create_graph), in the result's dtype:
    the engine casts to the input's."""
    return F._softmax_backward_data(grad, result, dim, result.dtype)


def log_softmax_backward(grad, result, dim):
    return F._log_softmax_backward_data(grad, result, dim, result.dtype)


def invert_permutation(dims):
    ndim = len(dims)
    inverse = [0] * ndim
    for i, d in enumerate(dims):
        inverse[d % ndim] = i
    return inverse


def slice_backward(grad, shape, dim, start, end, step):
    if grad.requires_grad:                       # differentiable (a double backward): out of place
        return F.slice_scatter(F.zeros(tuple(shape), dtype=grad.dtype, device=grad.device), grad, dim, start, end,
                               step)
    # the engine's own: the window and its gradient, made whole (once, for all of a split's parts) when needed
    return SlicePieces(tuple(shape), dim, start, end, step, grad)


def select_backward(grad, shape, dim, index):
    zeros = F.zeros(tuple(shape), dtype=grad.dtype, device=grad.device)
    if grad.requires_grad:
        return F.select_scatter(zeros, grad, dim, index)
    F.copy_(F.select(zeros, dim, index), grad)
    return zeros


def _extent(shape, strides) -> int:
    return sum((n - 1) * st for n, st in zip(shape, strides))


def as_strided_backward(grad, self_shape, self_stride, self_offset, size, stride, storage_offset):
    """The window's gradient summed into the storage positions it reads, read back as `self`.

    The window may overlap itself (sliding windows, stride-0 dimensions): stride-0
    dimensions are summed first, and the dimensions that would still overlap are looped
    over, so each scatter writes a non-overlapping window and the parts are added. `self`
    may be any view of its storage; an expanded one shares each position's gradient among
    the elements reading it (as PyTorch does).
    """
    size, stride = tuple(size), tuple(stride)
    self_shape, self_stride = tuple(self_shape), tuple(self_stride)
    offset = self_offset if storage_offset is None else storage_offset
    if any(n == 0 for n in size) or any(n == 0 for n in self_shape):
        return F.zeros(self_shape, dtype=grad.dtype, device=grad.device)
    broadcast = [d for d in range(len(size)) if stride[d] == 0 and size[d] != 1]
    if broadcast:
        grad = F.sum(grad, broadcast)
        keep = [d for d in range(len(size)) if d not in broadcast]
        size, stride = tuple(size[d] for d in keep), tuple(stride[d] for d in keep)
    low = min(self_offset, offset)
    length = max(self_offset + _extent(self_shape, self_stride), offset + _extent(size, stride)) - low + 1
    scatter, loop, reach = [], [], 0
    for d in sorted(range(len(size)), key=lambda d: (stride[d], -size[d])):
        if size[d] == 1 or stride[d] > reach:
            scatter.append(d)
            reach += (size[d] - 1) * stride[d]
        else:
            loop.append(d)
    scatter.sort()
    loop.sort(reverse=True)           # select the last dimensions first: earlier indices stay valid
    sub_size = tuple(size[d] for d in scatter)
    sub_stride = tuple(stride[d] for d in scatter)
    total = None
    for index in itertools.product(*(range(size[d]) for d in loop)):
        part, at = grad, offset - low
        for d, i in zip(loop, index):
            part = F.select(part, d, i)
            at += i * stride[d]
        zeros = F.zeros((length,), dtype=grad.dtype, device=grad.device)
        part = F.as_strided_scatter(zeros, part, sub_size, sub_stride, at)
        total = part if total is None else F.add(total, part)
    out = F.as_strided(total, self_shape, self_stride, self_offset - low)
    shared = 1                # an expanded `self` reads each position this many times (PyTorch divides)
    for n, st in zip(self_shape, self_stride):
        if st == 0:
            shared *= n
    return out if shared == 1 else F.div(out, shared)


def contiguous_grad(grad):
    """`grad` as a contiguous tensor starting at offset 0 (as_strided windows index it)."""
    grad = F.contiguous(grad)
    return grad if grad.storage_offset() == 0 else F.clone(grad)


def cat_backward(grad, dim, shapes):
    """Split the gradient of cat into the pieces of its inputs (given by shape)."""
    ndim = len(shapes[0]) if shapes else 0
    d = dim % max(len(tuple(grad.shape)), 1)
    grads, offset = [], 0
    for shape in shapes:
        if len(shape) == 1 and shape[0] == 0 and ndim != 1:
            grads.append(F.zeros(tuple(shape), dtype=grad.dtype, device=grad.device))
            continue
        n = shape[d]
        grads.append(F.slice(grad, d, offset, offset + n, 1))
        offset += n
    return grads


def to_backward(grad, dtype, device):
    return F._to_copy(grad, dtype=dtype, device=device)


# ---- sorting, scans and extra reductions (ops-shapeops)
def sort_backward(grad, dim, indices, shape):
    """sort/topk: grad[..., j, ...] goes to position indices[..., j, ...] of `self`.

    One scatter_add into zeros of self's shape (indices is a permutation along `dim`): O(n).
    """
    if len(shape) == 0:
        return grad
    return F.scatter_add(F.zeros(tuple(shape), dtype=grad.dtype, device=grad.device), dim, indices, grad)


def cumsum_backward(grad, dim):
    """The reversed cumulative sum of the gradient."""
    if grad.dim() == 0:
        return grad
    return F.flip(F.cumsum(F.flip(grad, [dim]), dim), [dim])


def _reduced_dims(dim, ndim: int):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)
    return tuple(d % ndim for d in dim)


def _keep(t, dim, ndim: int, keepdim: bool):
    """A reduction's output with the reduced dimensions restored as size 1."""
    return t if keepdim or not ndim else _unsqueeze_dims(t, _reduced_dims(dim, ndim), ndim)


def logsumexp_backward(grad, self, result, dim, keepdim):
    ndim = self.dim()
    return F.mul(_keep(grad, dim, ndim, keepdim), F.exp(F.sub(self, _keep(result, dim, ndim, keepdim))))


def var_backward(grad, self, dim, correction, keepdim):
    """(2 / (N - correction)) * grad * (self - mean)."""
    ndim = self.dim()
    dims = _reduced_dims(dim, ndim) if ndim else ()
    n = 1
    for d in dims:
        n *= self.shape[d]
    dof = n - (1 if correction is None else correction)
    scale = 2.0 / dof if dof > 0 else math.inf
    centred = F.sub(self, F.mean(self, dims if ndim else None, True))
    return F.mul(F.mul(_keep(grad, dim, ndim, keepdim), scale), centred)


def std_backward(result, grad, self, dim, correction, keepdim):
    """var_backward of grad / (2 std), defined as 0 where std is 0."""
    half = F.where(F.eq(result, 0), 0.0, F.div(grad, F.mul(result, 2)))
    return var_backward(half, self, dim, correction, keepdim)


def norm_backward(grad, self, p, result, dim, keepdim):
    """PyTorch's norm_backward: 0, 1, 2, +-inf and general p; 0 where the norm is 0."""
    p = 2 if p is None else p
    ndim = self.dim()
    grad = _keep(grad, dim, ndim, keepdim)
    result = _keep(result, dim, ndim, keepdim)
    if p == 0:
        return F.zeros_like(self)
    if p == 1:
        return F.mul(F.sign(self), grad)
    if p == 2:
        return F.mul(self, F.where(F.eq(result, 0), 0.0, F.div(grad, result)))
    if p in (math.inf, -math.inf):
        mask = F.eq(F.abs(self), result)
        count = F.sum(mask, _reduced_dims(dim, ndim) if ndim else None, keepdim=True)
        return F.mul(F.sign(self), F.where(mask, F.div(grad, count), 0.0))
    if p < 1:
        scaled = F.where(F.eq(self, 0), 0.0, F.mul(F.sign(self), F.pow(F.abs(self), p - 1)))
    elif p < 2:
        scaled = F.mul(F.sign(self), F.pow(F.abs(self), p - 1))
    else:
        scaled = F.mul(self, F.pow(F.abs(self), p - 2))
    scale = F.where(F.eq(result, 0), 0.0, F.div(grad, F.pow(result, p - 1)))
    return F.mul(scaled, scale)


def diagonal_backward(grad, shape, offset, dim1, dim2):
    """The gradient written into the diagonal of zeros of `self`'s shape."""
    from ember.dispatcher.operator import ALL_OPS
    from ember.core.layout import contiguous_strides
    from ember.shape_rules.shape_ops import diagonal_window

    shape = tuple(shape)
    size, stride, at = diagonal_window(ALL_OPS["diagonal"], shape, contiguous_strides(shape), 0, offset, dim1, dim2)
    zeros = F.zeros(shape, dtype=grad.dtype, device=grad.device)
    return F.as_strided_scatter(zeros, grad, size, stride, at)
def unfold_backward(grad, shape, dimension, size, step):
    """Tensor.unfold's gradient: each window's gradient added back at the positions it viewed (windows
    overlap when step < size, so an index_add, not a scatter)."""
    shape = tuple(shape)
    if not shape:
        return F.reshape(grad, ())
    d = dimension % len(shape)
    windows = grad.shape[d]
    moved = F.movedim(grad, -1, d + 1)                              # (..., windows, size, ...)
    flat = F.reshape(moved, tuple(shape[:d]) + (windows * size,) + tuple(shape[d + 1:]))
    starts = F.mul(F.arange(windows, device=grad.device), step)
    index = F.reshape(F.add(F.unsqueeze(starts, 1), F.arange(size, device=grad.device)), (-1,))
    return F.index_add(F.zeros(shape, dtype=grad.dtype, device=grad.device), d, index, flat)


def nn_backward(which: str, *args):
    """The backward helper `which` of the nn layers (convolution, pooling, normalization,
    padding), kept with their kernels in ember/decompositions/nn_backward.py."""
    from ember.decompositions import nn_backward as helpers

    return getattr(helpers, which)(*args)
# ------------------------------------------------------------------ indexing, scatter, gather
def gather_backward(grad, self_shape, dim, index):
    """gather's gradient: the output gradient added back at the gathered positions."""
    zeros = F.zeros(tuple(self_shape), dtype=grad.dtype, device=grad.device)
    return F.scatter_add(zeros, dim, index, grad)


def gather_to_shape(grad, dim, index, shape):
    """grad.gather(dim, index) padded with zeros to `shape` (a scatter's src may be larger
    than its index: the elements beyond the index get no gradient)."""
    from ember.decompositions.indexing import _pad_to

    return _pad_to(F.gather(grad, dim, index), tuple(shape))


def index_select_backward(grad, self_shape, dim, index):
    zeros = F.zeros(tuple(self_shape), dtype=grad.dtype, device=grad.device)
    return F.index_add(zeros, dim, index, grad)


def index_backward(grad, self_shape, indices):
    """index's gradient: index_put with accumulate=True into zeros (duplicates add up)."""
    zeros = F.zeros(tuple(self_shape), dtype=grad.dtype, device=grad.device)
    return F.index_put(zeros, indices, grad, True)


def index_put_backward_self(grad, indices, values, accumulate):
    if accumulate:
        return grad
    return F.index_put(grad, indices, F.zeros_like(values, dtype=grad.dtype), False)


def masked_fill_value_backward(grad, mask):
    return F.sum(F.where(mask, grad, F.zeros((), dtype=grad.dtype, device=grad.device)))


def embedding_double_backward(grad, indices, padding_idx):
    out = F.embedding(grad, indices)
    if padding_idx >= 0:
        out = F.where(F.unsqueeze(F.eq(indices, padding_idx), -1), F.zeros((), dtype=out.dtype, device=out.device),
                      out)
    return out


def masked_scatter_backward(grad, mask, source_shape):
    """masked_scatter's source gradient: the gradient at the masked positions, in order,
    zero-padded to the source's size (shapes only on meta, where no mask values exist)."""
    n = 1
    for k in source_shape:
        n *= k
    if grad.device.type == "meta":
        return F.zeros(tuple(source_shape), dtype=grad.dtype, device=grad.device)
    selected = F.masked_select(grad, mask)
    k = selected.shape[0]
    if k < n:
        selected = F.cat([selected, F.zeros((n - k,), dtype=grad.dtype, device=grad.device)])
    return F.reshape(selected, tuple(source_shape))


def logit_backward(grad, self, eps):
    """grad / (x (1 - x)) (inf at 0 and 1, NaN outside [0, 1]), zero outside [eps, 1 - eps] when eps clamps:
    torch's formula."""
    out = F.div(grad, F.mul(self, F.rsub(self, 1)))
    if eps is None or eps < 0:                      # outside [0, 1] the logit is NaN, and so is its gradient
        return F.where(F.logical_or(F.lt(self, 0), F.gt(self, 1)), math.nan, out)
    return F.where(F.logical_or(F.lt(self, eps), F.gt(self, 1 - eps)), 0, out)


def _kept_self(self, other, maximum: bool):
    """Where fmax (maximum) or fmin kept self: self >= other (<= for fmin), or other NaN."""
    return F.logical_or(F.ge(self, other) if maximum else F.le(self, other), F.isnan(other))


def nan_losing_backward(grad, self, other, maximum: bool):
    """fmax/fmin's gradient for self: grad where self was kept, else 0 (torch's: a tie goes to self whole)."""
    return F.where(_kept_self(self, other, maximum), grad, 0)


def nan_losing_backward_other(grad, self, other, maximum: bool):
    """fmax/fmin's gradient for other: grad where self was not kept."""
    return F.where(_kept_self(self, other, maximum), 0, grad)


def copysign_backward(grad, self, result):
    """d/dself |self| sign(other) = sign(self) sign(result): result / self where self is not 0, else 0."""
    return F.where(F.eq(self, 0), 0, F.mul(grad, F.div(result, self)))
