"""Backend-agnostic kernels of the fused cross entropy for class indices (F.cross_entropy's path
in training): the forward is cross_entropy_loss's decomposition; the backward is log_softmax's
backward applied to the gradient nll_loss (and label smoothing) sends to the log-probabilities,
computed with ember ops. Backends with their own kernels (cpu, cuda) compute both in one pass.
"""
from __future__ import annotations

from ember._generated import functions as F

from . import explicit_kernel
from .losses import _along, _class_target, _class_weight, cross_entropy_loss


@explicit_kernel("_cross_entropy_indices")
def cross_entropy_indices(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    return cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing)


@explicit_kernel("_cross_entropy_indices_backward")
def cross_entropy_indices_backward(grad_output, self, target, weight, reduction, ignore_index, label_smoothing):
    target, cdim, classes = _class_target(self, target, ignore_index)
    ndim = self.dim()
    logp = F.log_softmax(self, cdim)
    valid = F.ne(target, ignore_index)
    safe = F.where(valid, target, 0)
    w = _class_weight(weight, safe, valid, self.dtype)
    scale = F.div(grad_output, F.sum(w)) if reduction == 1 else grad_output     # per element (none) or one
    scale = F.expand(scale, tuple(target.shape))
    # d loss / d logp: -(1 - ls) * scale * w at the target class; -(ls / C) * scale * valid * weight everywhere
    picked = F.mul(F.where(valid, F.mul(scale, w), 0.0), -(1.0 - label_smoothing))   # 0 where ignored, even 1/0
    g = F.scatter_add(F.zeros_like(logp), cdim, F.unsqueeze(safe, cdim), F.unsqueeze(picked, cdim))
    if label_smoothing > 0:
        smooth = F.unsqueeze(F.mul(F.where(valid, scale, 0.0), -label_smoothing / classes), cdim)
        g = F.add(g, F.mul(smooth, _along(weight, cdim, ndim)) if weight is not None else smooth)
    return F.sub(g, F.mul(F.exp(logp), F.sum(g, cdim, keepdim=True)))
