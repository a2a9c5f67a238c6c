"""Backend-agnostic kernels of the fused cross entropy for class indices (F.cross_entropy's path
in training): the forward is cross_entropy_loss's decomposition, returning the logsumexp of the
logits along the class dim too; the backward is log_softmax's backward, from the log-probabilities
recomputed as `self - logsumexp`, applied to the gradient nll_loss (and label smoothing) sends to
them, computed with ember ops. Saving the logits and one number per row, not a second tensor of the
logits' size, is what keeps a large vocabulary's loss at one logits-sized activation. Backends with
their own kernels (cpu, cuda) compute both in one pass. With create_graph the autograd formula runs
`cross_entropy_of_log_probs_backward` on a differentiable log_softmax of the logits itself.

Also nll_loss's gradient, `_nll_loss_backward`: the same gradient nll_loss sends to its input,
without log_softmax's part (it needs no saved tensor but the targets and the weight).
"""
from __future__ import annotations

from ember._generated import functions as F

from . import as_opmath, explicit_kernel
from .losses import _along, _class_target, _class_weight, class_target_of_shape, cross_entropy_of_log_probs


@explicit_kernel("_cross_entropy_indices")
def cross_entropy_indices(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    cdim = 1 if self.dim() >= 2 else 0
    logp = F.log_softmax(self, cdim)
    loss = cross_entropy_of_log_probs(logp, target, weight, reduction, ignore_index, label_smoothing)
    return loss, F.logsumexp(as_opmath(self), cdim)


def _picked_gradient(grad_output, target, weight, reduction, ignore_index, dtype):
    """(d loss / d input at each target's class, negated, 0 where ignored; the targets, class 0 where
    ignored; which are not ignored; the incoming gradient per target, divided by the total weight for a
    mean): what nll_loss sends to the entries it picked."""
    valid = F.ne(target, ignore_index)
    safe = F.where(valid, target, 0)
    w = _class_weight(weight, safe, valid, dtype)
    scale = F.div(grad_output, F.sum(w)) if reduction == 1 else grad_output     # per element (none) or one
    scale = F.expand(scale, tuple(target.shape))
    return F.where(valid, F.mul(scale, w), 0.0), safe, valid, scale               # 0 where ignored, even 1/0


@explicit_kernel("_nll_loss_backward")
def nll_loss_backward(grad_output, target, weight, self_size, reduction, ignore_index):
    target, cdim, _ = class_target_of_shape(tuple(self_size), target, ignore_index)
    picked, safe, _, _ = _picked_gradient(grad_output, target, weight, reduction, ignore_index, grad_output.dtype)
    zeros = F.zeros(tuple(self_size), dtype=grad_output.dtype, device=grad_output.device)
    return F.scatter(zeros, cdim, F.unsqueeze(safe, cdim), F.unsqueeze(F.neg(picked), cdim))


@explicit_kernel("_cross_entropy_indices_backward")
def cross_entropy_indices_backward(grad_output, self, logsumexp, target, weight, reduction, ignore_index,
                                   label_smoothing):
    cdim = 1 if self.dim() >= 2 else 0
    logp = F.sub(as_opmath(self), F.unsqueeze(logsumexp, cdim))
    logp = F._to_copy(logp, dtype=self.dtype) if logp.dtype is not self.dtype else logp
    return cross_entropy_of_log_probs_backward(grad_output, logp, target, weight, reduction, ignore_index,
                                               label_smoothing)


def cross_entropy_of_log_probs_backward(grad_output, log_probs, target, weight, reduction, ignore_index,
                                        label_smoothing):
    """d cross entropy / d logits given the log-probabilities (differentiable: create_graph runs it on a
    log_softmax of the logits)."""
    target, cdim, classes = _class_target(log_probs, target, ignore_index)
    ndim = log_probs.dim()
    # d loss / d log_probs: -(1 - ls) * scale * w at the target class; -(ls / C) * scale * valid * weight everywhere
    picked, safe, valid, scale = _picked_gradient(grad_output, target, weight, reduction, ignore_index,
                                                  log_probs.dtype)
    picked = F.mul(picked, -(1.0 - label_smoothing))
    g = F.scatter_add(F.zeros_like(log_probs), cdim, F.unsqueeze(safe, cdim), F.unsqueeze(picked, cdim))
    if label_smoothing > 0:
        smooth = F.unsqueeze(F.mul(F.where(valid, scale, 0.0), -label_smoothing / classes), cdim)
        g = F.add(g, F.mul(smooth, _along(weight, cdim, ndim)) if weight is not None else smooth)
    return F.sub(g, F.mul(F.exp(log_probs), F.sum(g, cdim, keepdim=True)))
