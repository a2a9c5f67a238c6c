"""torch.nn.functional losses and cosine_similarity, signature for signature.

`reduction` strings map to ATen's enum (none 0, mean 1, sum 2); the deprecated
`size_average`/`reduce` pair is honoured (with PyTorch's warning).
"""
from __future__ import annotations

import math
import warnings

from ember._generated import functions as _F
from ember.core.errors import ArgumentListError
from ember.functional import broadcast_tensors
from ember.core import dtype as _dt
from ember.frontend.autograd.grad_mode import is_grad_enabled

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "soft_margin_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "poisson_nll_loss"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction: str, size_average=None, reduce=None) -> int:
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", stacklevel=3)
    if reduction not in _REDUCTIONS:
        raise ArgumentListError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _elementwise_reduction(input, target, reduction: str, size_average=None, reduce=None) -> int:
    """_reduction for a loss torch computes over its broadcast operands: a bad `reduction` is reported only once
    the two broadcast (torch.nn.functional broadcasts them before it reads the reduction)."""
    try:
        return _reduction(reduction, size_average, reduce)
    except ArgumentListError:
        broadcast_tensors(input, target)
        raise


def _reduce(loss, reduction: int):
    if reduction == 0:
        return loss
    return _F.mean(loss) if reduction == 1 else _F.sum(loss)


def _check_same_size(input, target) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _weighted(loss, weight, input, reduction: int, mean_by_weight: bool):
    """The loss (reduction none) times `weight`, then reduced as torch.nn.functional does."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ArgumentListError("Weights and input must have the same size.")
    loss = _F.mul(loss, weight)
    if reduction == 0:
        return loss
    if reduction == 2:
        return _F.sum(loss)
    return _F.div(_F.sum(loss), _F.sum(weight)) if mean_by_weight else _F.mean(loss)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    r = _reduction(reduction, size_average, reduce)
    if _class_indices(target) and (weight is None or not getattr(weight, "requires_grad", False)):
        # one op with a fused backward (a training step's loss); a weight that requires grad and
        # probability targets go through cross_entropy_loss's decomposition, differentiable in both
        return _F._cross_entropy_indices(input, target, weight, r, ignore_index, label_smoothing)[0]
    return _F.cross_entropy_loss(input, target, weight, r, ignore_index, label_smoothing)


def _class_indices(target) -> bool:
    return getattr(target, "dtype", None) is _dt.int64


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    if getattr(weight, "requires_grad", False) and is_grad_enabled():
        # as torch's: nll_loss's one node has a gradient for the input only
        raise RuntimeError("nll_loss(): the function is not differentiable with respect to argument 'weight'; "
                           "this input cannot have requires_grad True")
    return _F.nll_loss_nd(input, target, weight, _reduction(reduction, size_average, reduce), ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    _check_same_size(input, target)
    r = _elementwise_reduction(input, target, reduction, size_average, reduce)
    if weight is not None:
        return _weighted(_F.mse_loss(input, target, 0), weight, input, r, True)
    return _F.mse_loss(input, target, r)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    _check_same_size(input, target)
    r = _elementwise_reduction(input, target, reduction, size_average, reduce)
    if weight is not None:
        return _weighted(_F.l1_loss(input, target, 0), weight, input, r, True)
    return _F.l1_loss(input, target, r)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    _check_same_size(input, target)
    return _F.smooth_l1_loss(input, target, _reduction(reduction, size_average, reduce), beta)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    _check_same_size(input, target)
    r = _reduction(reduction)
    if weight is not None:
        return _weighted(_F.huber_loss(input, target, 0, delta), weight, input, r, False)
    return _F.huber_loss(input, target, r, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    r = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ArgumentListError(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size.")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        weight = _F.expand(weight, tuple(input.shape))
    return _F.binary_cross_entropy(input, target, weight, r)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    r = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ArgumentListError(f"Target size ({tuple(target.shape)}) must be the same as input size "
                                f"({tuple(input.shape)})")
    return _F.binary_cross_entropy_with_logits(input, target, weight, pos_weight, r)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """KL divergence; reduction="batchmean" divides the sum by the batch size (the mathematically right mean)."""
    if reduction == "batchmean":
        if size_average is not None or reduce is not None:
            r = _reduction(reduction, size_average, reduce)
            return _F.kl_div(input, target, r, log_target=log_target)
        total = _F.kl_div(input, target, 2, log_target=log_target)
        return _F.div(total, input.shape[0]) if input.dim() != 0 else total
    if reduction == "mean" and size_average is None and reduce is None:
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    return _F.kl_div(input, target, _reduction(reduction, size_average, reduce), log_target=log_target)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    return _F.cosine_similarity(x1, x2, dim, eps)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-target * input)), reduced."""
    r = _reduction(reduction, size_average, reduce)
    return _reduce(_F.softplus(_F.neg(_F.mul(target, input))), r)


def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, -target * (input1 - input2) + margin), reduced."""
    r = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise ArgumentListError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                                f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                                f"{tuple(target.shape)} ")
    loss = _F.relu(_F.add(_F.neg(_F.mul(target, _F.sub(input1, input2))), margin))
    return _reduce(loss, r)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """input where target is 1, max(0, margin - input) where target is -1, reduced."""
    r = _reduction(reduction, size_average, reduce)
    margin_clamp = _F.relu(_F.rsub(input, margin))
    loss = _F.add(_F.where(_F.ne(target, 1), margin_clamp, 0.0), _F.where(_F.ne(target, -1), input, 0.0))
    return _reduce(loss, r)


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1, reduced."""
    r = _reduction(reduction, size_average, reduce)
    eps = 1e-12
    dim = input1.dim() - 1
    prod = _F.sum(_F.mul(input1, input2), dim)
    mag1 = _F.add(_F.sum(_F.mul(input1, input1), dim), eps)
    mag2 = _F.add(_F.sum(_F.mul(input2, input2), dim), eps)
    cos = _F.div(prod, _F.sqrt(_F.mul(mag1, mag2)))
    pos = _F.rsub(cos, 1.0)
    neg = _F.relu(_F.sub(cos, margin))
    loss = _F.add(_F.where(_F.eq(target, 1), pos, 0.0), _F.where(_F.eq(target, -1), neg, 0.0))
    return _reduce(loss, r)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full adds Stirling's term."""
    r = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = _F.sub(_F.exp(input), _F.mul(target, input))
    else:
        loss = _F.sub(input, _F.mul(target, _F.log(_F.add(input, eps))))
    if full:
        safe = _F.where(_F.gt(target, 1), target, 2.0)
        stirling = _F.add(_F.sub(_F.mul(safe, _F.log(safe)), safe), _F.mul(_F.log(_F.mul(safe, 2 * math.pi)), 0.5))
        loss = _F.add(loss, _F.where(_F.gt(target, 1), stirling, 0.0))
    return _reduce(loss, r)
