"""Decompositions of the losses (differentiated through): elementwise losses, nll_loss and
cross_entropy; and nll_loss_nd's explicit kernel (its gradient is its own op, in fused_losses.py).

Class-index targets pick their class with `gather` along the class dim (O(batch) memory, and
its backward is a scatter_add into the picked positions); ignore_index entries pick class 0
and are then zeroed with `where`, so an inf or NaN there stays out of the loss and its
gradient. Reductions follow ATen's enum: 0 none, 1 mean, 2 sum.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core.errors import ArgumentValueError, DimensionError
from ember.core import dtype as _dt

from ember.frontend.tensor import holds_data

from . import decomposition, explicit_kernel


def reduce(loss, reduction: int):
    if reduction == 0:
        return loss
    if reduction == 1:
        return F.mean(loss)
    return F.sum(loss)


def _any(mask) -> bool:
    """Whether a bool tensor holds a True (a data-dependent check: reads one number back)."""
    if mask.numel() == 0:
        return False
    count = F.sum(mask)              # computed on meta too: meta allocates what cpu allocates (ember.memory)
    if not holds_data(count):        # meta tensors (and traced fakes) carry no values to check
        return False
    return bool(count.item() > 0)


@decomposition("mse_loss")
def mse_loss(self, target, reduction=1):
    d = F.sub(self, target)
    return reduce(F.mul(d, d), reduction)


@decomposition("l1_loss")
def l1_loss(self, target, reduction=1):
    return reduce(F.abs(F.sub(self, target)), reduction)


@decomposition("smooth_l1_loss")
def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    d = F.abs(F.sub(self, target))
    if beta == 0:
        return reduce(d, reduction)
    loss = F.where(F.lt(d, beta), F.div(F.mul(F.mul(d, d), 0.5), beta), F.sub(d, 0.5 * beta))
    return reduce(loss, reduction)


@decomposition("huber_loss")
def huber_loss(self, target, reduction=1, delta=1.0):
    if self.dtype.is_floating_point and target.dtype is not self.dtype:
        target = F._to_copy(target, dtype=self.dtype)          # PyTorch's huber_loss keeps the input's dtype
    d = F.abs(F.sub(self, target))
    loss = F.where(F.lt(d, delta), F.mul(F.mul(d, d), 0.5), F.mul(F.sub(d, 0.5 * delta), delta))
    return reduce(loss, reduction)


@decomposition("binary_cross_entropy")
def binary_cross_entropy(self, target, weight=None, reduction=1):
    inside = F.logical_and(F.ge(self, 0), F.le(self, 1))
    if _any(F.logical_not(inside)):
        raise ArgumentValueError("binary_cross_entropy(): all elements of input should be between 0 and 1")
    log_x = F.clamp(F.log(self), min=-100.0)
    log_1mx = F.clamp(F.log1p(F.neg(self)), min=-100.0)
    loss = F.sub(F.mul(F.sub(target, 1.0), log_1mx), F.mul(target, log_x))
    if weight is not None:
        loss = F.mul(loss, weight)
    return reduce(loss, reduction)


@decomposition("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=1):
    # (1 - t) * x + w_pos * log(1 + exp(-x)), with log(1 + exp(-x)) = softplus(-x), computed stably
    softplus_neg = F.softplus(F.neg(self))
    if pos_weight is not None:
        log_weight = F.add(F.mul(F.sub(pos_weight, 1.0), target), 1.0)
        softplus_neg = F.mul(log_weight, softplus_neg)
    loss = F.add(F.mul(F.rsub(target, 1.0), self), softplus_neg)
    if weight is not None:
        loss = F.mul(loss, weight)
    return reduce(loss, reduction)


@decomposition("kl_div")
def kl_div(self, target, reduction=1, log_target=False):
    if log_target:
        loss = F.mul(F.exp(target), F.sub(target, self))
    else:
        positive = F.gt(target, 0)
        safe_log = F.log(F.where(positive, target, 1.0))        # xlogy: 0 * log(0) is 0 (and its gradient finite)
        loss = F.sub(F.mul(target, safe_log), F.mul(target, self))
    return reduce(loss, reduction)


def _pick(t, safe, cdim: int):
    """t's entries at the class indices `safe` along `cdim` (gather; the class dim dropped)."""
    return F.squeeze(F.gather(t, cdim, F.unsqueeze(safe, cdim)), cdim)


def _class_weight(weight, safe, valid, dtype):
    """The per-element weight of each target's class (weight[target]; 0 where ignored)."""
    if weight is None:
        return F._to_copy(valid, dtype=dtype)
    w = F.reshape(F.gather(weight, 0, F.reshape(safe, (-1,))), tuple(safe.shape))
    return F.where(valid, w, 0.0)


def _along(t, cdim: int, ndim: int):
    """A 1-D per-class tensor shaped to broadcast along the class dim."""
    shape = [1] * ndim
    shape[cdim] = t.shape[0]
    return F.reshape(t, shape)


def _class_target(self, target, ignore_index):
    """(target as int64 without a stray size-1 dim, class dim, number of classes), range-checked."""
    return class_target_of_shape(tuple(self.shape), target, ignore_index)


def class_target_of_shape(shape, target, ignore_index):
    """_class_target for an input of shape `shape`."""
    ndim = len(shape)
    cdim = 1 if ndim >= 2 else 0
    classes = shape[cdim]
    target = F._to_copy(target, dtype=_dt.int64) if target.dtype is not _dt.int64 else target
    if ndim == 1 and target.dim() == 1:
        target = F.reshape(target, ())
    bad = F.logical_and(F.ne(target, ignore_index), F.logical_or(F.lt(target, 0), F.ge(target, classes)))
    if _any(bad):
        value = int(F.sum(F.where(bad, target, 0)).item()) if F.sum(bad).item() == 1 else "some target"
        raise DimensionError(f"nll_loss(): Target {value} is out of bounds (classes: {classes}).")
    return target, cdim, classes


def _nll(self, target, weight, reduction: int, ignore_index: int):
    """(the reduced nll loss, the not-ignored mask, the per-element class weights)."""
    target, cdim, classes = _class_target(self, target, ignore_index)
    valid = F.ne(target, ignore_index)
    safe = F.where(valid, target, 0)
    picked = F.where(valid, _pick(self, safe, cdim), 0.0)
    w = _class_weight(weight, safe, valid, self.dtype)
    loss = F.neg(F.mul(picked, w))
    if reduction == 0:
        return loss, valid, w
    total = F.sum(loss)
    if reduction == 2:
        return total, valid, w
    return F.div(total, F.sum(w)), valid, w


@explicit_kernel("nll_loss_nd")
def nll_loss_nd(self, target, weight=None, reduction=1, ignore_index=-100):
    return _nll(self, target, weight, reduction, ignore_index)[0]


@decomposition("nll_loss")
def nll_loss(self, target, weight=None, reduction=1, ignore_index=-100):
    return nll_loss_nd(self, target, weight, reduction, ignore_index)


@decomposition("cross_entropy_loss")
def cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    return cross_entropy_of_log_probs(F.log_softmax(self, 1 if self.dim() >= 2 else 0), target, weight, reduction,
                                      ignore_index, label_smoothing)


def cross_entropy_of_log_probs(logp, target, weight, reduction: int, ignore_index: int, label_smoothing: float):
    """cross_entropy_loss given log_softmax(self) along the class dim."""
    ndim = logp.dim()
    cdim = 1 if ndim >= 2 else 0
    classes = logp.shape[cdim]
    if target.dtype.is_floating_point:                      # class probabilities
        if label_smoothing > 0:
            target = F.add(F.mul(target, 1.0 - label_smoothing), label_smoothing / classes)
        if weight is not None:
            logp = F.mul(logp, _along(weight, cdim, ndim))
        loss = F.neg(F.sum(F.mul(logp, target), cdim))
        if reduction == 0:
            return loss
        total = F.sum(loss)
        if reduction == 2:
            return total
        return F.div(total, logp.numel() // classes) if logp.numel() else F.mul(total, float("nan"))
    nll, valid, w = _nll(logp, target, weight, reduction, ignore_index)
    if label_smoothing == 0:
        return nll
    weighted = logp if weight is None else F.mul(logp, _along(weight, cdim, ndim))
    smooth = F.where(valid, F.neg(F.sum(weighted, cdim)), 0.0)
    if reduction == 0:
        ret = smooth
    elif reduction == 2:
        ret = F.sum(smooth)
    elif weight is not None:
        ret = F.div(F.sum(smooth), F.sum(w))
    else:
        ret = F.div(F.sum(smooth), F.sum(valid))
    return F.add(F.mul(nll, 1.0 - label_smoothing), F.mul(ret, label_smoothing / classes))
