"""`ember.optim.Adamax`: torch's single-tensor algorithm (Adam with the infinity norm)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _number, _params_with_grad, _scalar_step


class Adamax(Optimizer):
    """Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *, maximize=False,
    differentiable=False, capturable=False)."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2), eps = _number(group["lr"]), group["betas"], group["eps"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["exp_avg"] = F.zeros_like(p)
                        state["exp_inf"] = F.zeros_like(p)
                    exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                    state["step"].add_(1)
                    grad = p.grad if not group["maximize"] else -p.grad
                    if group["weight_decay"] != 0:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_inf.copy_(F.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                    clr = lr / (1 - beta1 ** state["step"].item())
                    p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
