"""`ember.optim.RAdam`: torch's single-tensor algorithm (Adam with the variance rectification term)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _number, _params_with_grad, _scalar_step


class RAdam(Optimizer):
    """RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False): while the approximated
    simple moving average's length is 5 or less the step is SGD with momentum, after it Adam's rectified."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2), eps = _number(group["lr"]), group["betas"], group["eps"]
                weight_decay = group["weight_decay"]
                rho_inf = 2 / (1 - beta2) - 1            # the approximated moving average's longest length
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["exp_avg"] = F.zeros_like(p)
                        state["exp_avg_sq"] = F.zeros_like(p)
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    state["step"].add_(1)
                    step = state["step"].item()
                    grad = p.grad if not group["maximize"] else -p.grad
                    if weight_decay != 0:
                        if group["decoupled_weight_decay"]:
                            p.mul_(1 - lr * weight_decay)
                        else:
                            grad = grad.add(p, alpha=weight_decay)
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2 = 1 - beta2 ** step
                    corrected = exp_avg / bias_correction1
                    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                    if rho_t > 5.0:
                        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                        adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                        p.add_(corrected * lr * adaptive_lr * rect, alpha=-1.0)
                    else:
                        p.add_(corrected * lr, alpha=-1.0)
        return loss
