"""The single-tensor optimizer updates (torch's `_single_tensor_adam` / `_single_tensor_adadelta` /
`_single_tensor_sgd`, op for op) and, built on them, the explicit (backend-agnostic) kernels of the
fused updates `_fused_adam_`, `_fused_adadelta_` and `_fused_sgd_`: a backend without a fused kernel runs the same ops one tensor
at a time, so every path gives the same numbers. `ember.optim` calls these functions for its
per-tensor path. (Explicit, not composite: a tool that follows decompositions, such as
FlopCounterMode on meta, runs the device's fused kernel instead of per-tensor steps that read
values meta tensors do not have.)
"""
from __future__ import annotations

from ember._generated import functions as F

from . import explicit_kernel


def adam_update(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t, lr: float, beta1: float, beta2: float,
                weight_decay: float, eps: float, amsgrad: bool, maximize: bool, decoupled: bool) -> None:
    """One Adam/AdamW update of `p` and its state, in place (run under no_grad)."""
    if maximize:
        grad = F.neg(grad)
    step_t.add_(1)
    if weight_decay != 0:
        if decoupled:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(p, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step = step_t.item()
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    if amsgrad:
        max_exp_avg_sq.copy_(F.maximum(max_exp_avg_sq, exp_avg_sq))
        exp_avg_sq = max_exp_avg_sq
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
    p.addcdiv_(exp_avg, denom, value=-step_size)


def sgd_update(p, grad, buf, weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
               maximize: bool, is_first_step: bool) -> None:
    """One SGD update of `p` (and of its momentum buffer `buf` when momentum != 0), in place.

    On the first step the buffer takes the gradient (torch clones it into a new buffer; here
    the caller's buffer is overwritten with it, the same values).
    """
    if maximize:
        grad = F.neg(grad)
    if weight_decay != 0:
        grad = grad.add(p, alpha=weight_decay)
    if momentum != 0:
        if is_first_step:
            buf.copy_(grad)
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = grad.add(buf, alpha=momentum) if nesterov else buf
    p.add_(grad, alpha=-lr)


@explicit_kernel("_fused_adam_")
def fused_adam_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay,
                eps, amsgrad, maximize, decoupled_weight_decay=False):
    for i, p in enumerate(self):
        adam_update(p, grads[i], exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] if amsgrad else None,
                    state_steps[i], lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
    return ()


def adadelta_update(p, grad, square_avg, acc_delta, step_t, lr: float, rho: float, eps: float, weight_decay: float,
                    maximize: bool) -> None:
    """One Adadelta update of `p` and its state, in place (run under no_grad)."""
    step_t.add_(1)
    if maximize:
        grad = F.neg(grad)
    if weight_decay != 0:
        grad = grad.add(p, alpha=weight_decay)
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_()
    delta.div_(std).mul_(grad)
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    p.add_(delta, alpha=-lr)


@explicit_kernel("_fused_adadelta_")
def fused_adadelta_(self, grads, square_avgs, acc_deltas, state_steps, lr, rho, eps, weight_decay, maximize):
    for i, p in enumerate(self):
        adadelta_update(p, grads[i], square_avgs[i], acc_deltas[i], state_steps[i], lr, rho, eps, weight_decay,
                        maximize)
    return ()


@explicit_kernel("_fused_sgd_")
def fused_sgd_(self, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
               is_first_step):
    for i, p in enumerate(self):
        sgd_update(p, grads[i], momentum_buffer_list[i] if momentum != 0 else None, weight_decay, momentum, lr,
                   dampening, nesterov, maximize, is_first_step)
    return ()
