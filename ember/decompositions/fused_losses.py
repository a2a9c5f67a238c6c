"""Backend-agnostic kernels of the fused cross entropy for class indices (F.cross_entropy's path
in training): the forward is cross_entropy_loss's decomposition, returning the log-probabilities
too; the backward is log_softmax's backward, from those log-probabilities, applied to the
gradient nll_loss (and label smoothing) sends to them, computed with ember ops. Backends with
their own kernels (cpu, cuda) compute both in one pass. With create_graph the autograd formula
runs this backward itself, so its graph reaches `self` through the saved log-probabilities.
"""
from __future__ import annotations

from ember._generated import functions as F

from . import explicit_kernel
from .losses import _along, _class_target, _class_weight, cross_entropy_of_log_probs


@explicit_kernel("_cross_entropy_indices")
def cross_entropy_indices(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    logp = F.log_softmax(self, 1 if self.dim() >= 2 else 0)
    return cross_entropy_of_log_probs(logp, target, weight, reduction, ignore_index, label_smoothing), logp


@explicit_kernel("_cross_entropy_indices_backward")
def cross_entropy_indices_backward(grad_output, log_probs, target, weight, reduction, ignore_index, label_smoothing):
    target, cdim, classes = _class_target(log_probs, target, ignore_index)
    ndim = log_probs.dim()
    valid = F.ne(target, ignore_index)
    safe = F.where(valid, target, 0)
    w = _class_weight(weight, safe, valid, log_probs.dtype)
    scale = F.div(grad_output, F.sum(w)) if reduction == 1 else grad_output     # per element (none) or one
    scale = F.expand(scale, tuple(target.shape))
    # d loss / d log_probs: -(1 - ls) * scale * w at the target class; -(ls / C) * scale * valid * weight everywhere
    picked = F.mul(F.where(valid, F.mul(scale, w), 0.0), -(1.0 - label_smoothing))   # 0 where ignored, even 1/0
    g = F.scatter_add(F.zeros_like(log_probs), cdim, F.unsqueeze(safe, cdim), F.unsqueeze(picked, cdim))
    if label_smoothing > 0:
        smooth = F.unsqueeze(F.mul(F.where(valid, scale, 0.0), -label_smoothing / classes), cdim)
        g = F.add(g, F.mul(smooth, _along(weight, cdim, ndim)) if weight is not None else smooth)
    return F.sub(g, F.mul(F.exp(log_probs), F.sum(g, cdim, keepdim=True)))
