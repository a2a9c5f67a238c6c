"""`ember.optim.RMSprop`: torch's single-tensor algorithm (centered, momentum, weight decay)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from .optimizer import Optimizer, _params_with_grad, _scalar_step, _number


class RMSprop(Optimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, ...)."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, alpha, eps = _number(group["lr"]), group["alpha"], group["eps"]
                weight_decay, momentum = group["weight_decay"], group["momentum"]
                centered, maximize = group["centered"], group["maximize"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["square_avg"] = F.zeros_like(p)
                        if momentum > 0:
                            state["momentum_buffer"] = F.zeros_like(p)
                        if centered:
                            state["grad_avg"] = F.zeros_like(p)
                    grad = p.grad if not maximize else -p.grad
                    square_avg = state["square_avg"]
                    state["step"].add_(1)
                    if weight_decay != 0:
                        grad = grad.add(p, alpha=weight_decay)
                    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                    if centered:
                        grad_avg = state["grad_avg"]
                        grad_avg.lerp_(grad, 1 - alpha)
                        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                    else:
                        avg = square_avg.sqrt()
                    avg = avg.add_(eps)
                    if momentum > 0:
                        buf = state["momentum_buffer"]
                        buf.mul_(momentum).addcdiv_(grad, avg)
                        p.add_(buf, alpha=-lr)
                    else:
                        p.addcdiv_(grad, avg, value=-lr)
        return loss
