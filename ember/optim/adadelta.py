"""`ember.optim.Adadelta`: torch's single-tensor algorithm (rho, eps, weight decay)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from .optimizer import Optimizer, _params_with_grad, _scalar_step, _number


class Adadelta(Optimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, ...)."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, rho, eps = _number(group["lr"]), group["rho"], group["eps"]
                weight_decay, maximize = group["weight_decay"], group["maximize"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["square_avg"] = F.zeros_like(p)
                        state["acc_delta"] = F.zeros_like(p)
                    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                    state["step"].add_(1)
                    grad = p.grad if not maximize else -p.grad
                    if weight_decay != 0:
                        grad = grad.add(p, alpha=weight_decay)
                    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                    std = square_avg.add(eps).sqrt_()
                    delta = acc_delta.add(eps).sqrt_()
                    delta.div_(std).mul_(grad)
                    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                    p.add_(delta, alpha=-lr)
        return loss
