"""torch.nn.functional's Gaussian NLL, multi-class and multi-label margin, multi-label soft margin and triplet
losses, composed of ember ops with torch's formulas (gradients come from autograd through them)."""
from __future__ import annotations

import math

from ember._generated import functions as _F
from ember.core.errors import ArgumentListError, ShapeError

from .activation import logsigmoid, pairwise_distance
from .loss import _REDUCTIONS, _reduce, _reduction

__all__ = ["gaussian_nll_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """0.5 * (log(var) + (input - target)^2 / var) (+ 0.5 log(2 pi) with `full`), var clamped below by eps with
    the clamp not differentiated (torch clamps a copy under no_grad)."""
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = _F.unsqueeze(var, -1)               # one variance per sample, shared by its features
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ArgumentListError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ArgumentListError(reduction + " is not valid")
    if bool(_F.any(_F.lt(var, 0))):
        raise ArgumentListError("var has negative entry/entries")
    var = _F.add(var, _F.sub(_F.clamp(var, min=eps), var).detach())
    loss = _F.mul(_F.add(_F.log(var), _F.div(_F.pow(_F.sub(input, target), 2), var)), 0.5)
    if full:
        loss = _F.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, _REDUCTIONS[reduction])


def _class_dim(name: str, input, target) -> None:
    if input.dim() not in (1, 2) or (input.dim() == 2 and target.dim() not in (1,)) \
            or (input.dim() == 1 and target.dim() > 1):
        raise ShapeError(f"{name}(): Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                         f"{list(input.shape)}")


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                      reduction: str = "mean"):
    """Per sample, the mean over the other classes j of max(0, margin - x[y] + x[j])^p (weighted by weight[y])."""
    r = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ArgumentListError("only p == 1 and p == 2 supported")
    _class_dim("multi_margin_loss", input, target)
    x = input if input.dim() == 2 else _F.unsqueeze(input, 0)
    y = _F.reshape(target, (-1, 1))
    n_classes = x.shape[1]
    picked = _F.gather(x, 1, y)
    z = _F.relu(_F.add(_F.sub(x, picked), margin))
    if p == 2:
        z = _F.mul(z, z)
    if weight is not None:
        z = _F.mul(z, _F.unsqueeze(_F.index_select(weight, 0, _F.reshape(target, (-1,))), 1))
    others = _F.ne(_F.arange(n_classes, device=x.device), y)
    loss = _F.div(_F.sum(_F.where(others, z, 0.0), 1), n_classes)
    if input.dim() == 1:
        loss = _F.reshape(loss, ())
    return _reduce(loss, r)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Per sample, the mean over (target class j, non-target class i) of max(0, 1 - (x[j] - x[i])); `target`
    lists the target classes, ended by the first -1."""
    r = _reduction(reduction, size_average, reduce)
    if input.dim() not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"multilabel_margin_loss(): inconsistent target size: {list(target.shape)} for input of "
                         f"size: {list(input.shape)}")
    x = input if input.dim() == 2 else _F.unsqueeze(input, 0)
    t = target if target.dim() == 2 else _F.unsqueeze(target, 0)
    n, c = x.shape
    ended = _F.cumsum(_F.eq(t, -1).long(), 1) > 0                 # past the first -1
    listed = _F.logical_and(_F.logical_not(ended), _F.ge(t, 0))   # (n, c): entry k names a target class
    classes = _F.where(listed, t, 0)
    is_target = _F.scatter_add(_F.zeros((n, c), dtype=x.dtype, device=x.device), 1, classes,
                           listed.to(x.dtype)) > 0                  # (n, c): class i is a target
    target_scores = _F.gather(x, 1, classes)                       # x[j] for each listed entry
    margins = _F.relu(_F.rsub(_F.sub(_F.unsqueeze(target_scores, 2), _F.unsqueeze(x, 1)), 1.0))   # (n, k, i)
    pairs = _F.logical_and(_F.unsqueeze(listed, 2), _F.unsqueeze(_F.logical_not(is_target), 1))
    loss = _F.div(_F.sum(_F.where(pairs, margins, 0.0), (1, 2)), c)
    if input.dim() == 1:
        loss = _F.reshape(loss, ())
    return _reduce(loss, r)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    """Per sample, the mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) (weighted)."""
    r = _reduction(reduction, size_average, reduce)
    loss = _F.neg(_F.add(_F.mul(target, logsigmoid(input)),
                         _F.mul(_F.rsub(target, 1), logsigmoid(_F.neg(input)))))
    if weight is not None:
        loss = _F.mul(loss, weight)
    loss = _F.div(_F.sum(loss, input.dim() - 1), input.shape[-1])
    return _reduce(loss, r)


def _triplet(anchor, positive, negative, distance, margin: float, swap: bool, r: int):
    """max(0, d(a, p) - d(a, n) + margin), with d(p, n) in place of d(a, n) where smaller and `swap`."""
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise ShapeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                         f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                         "inputs")
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = _F.minimum(d_neg, distance(positive, negative))
    return _reduce(_F.relu(_F.add(_F.sub(d_pos, d_neg), margin)), r)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """The triplet loss with `distance_function` (pairwise_distance if None)."""
    r = _reduction(reduction)
    if margin <= 0:
        raise ArgumentListError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                                "instead")
    distance = distance_function if distance_function is not None else pairwise_distance
    return _triplet(anchor, positive, negative, distance, margin, swap, r)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """The triplet loss with the p-norm distance (pairwise_distance with eps)."""
    r = _reduction(reduction, size_average, reduce)
    return _triplet(anchor, positive, negative, lambda x1, x2: pairwise_distance(x1, x2, p, eps), margin, swap, r)
