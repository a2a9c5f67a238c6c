"""`ember.optim.NAdam`: torch's single-tensor algorithm (Adam with Nesterov momentum and its decay schedule)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, _number, _params_with_grad, _scalar_step


class NAdam(Optimizer):
    """NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, differentiable=False).
    The running product of the momentum coefficients is a 0-d tensor of the scalar dtype, as torch keeps
    it, so it rounds as torch's does."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, (beta1, beta2), eps = _number(group["lr"]), group["betas"], group["eps"]
                weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["mu_product"] = _scalar_step(1.0)
                        state["exp_avg"] = F.zeros_like(p)
                        state["exp_avg_sq"] = F.zeros_like(p)
                    exp_avg, exp_avg_sq, mu_product = state["exp_avg"], state["exp_avg_sq"], state["mu_product"]
                    state["step"].add_(1)
                    step = state["step"].item()
                    grad = p.grad if not group["maximize"] else -p.grad
                    bias_correction2 = 1 - beta2 ** step
                    if weight_decay != 0:
                        if group["decoupled_weight_decay"]:
                            p.mul_(1 - lr * weight_decay)
                        else:
                            grad = grad.add(p, alpha=weight_decay)
                    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                    mu_product.mul_(mu)
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    denom = exp_avg_sq.div(bias_correction2).sqrt()
                    product = mu_product.item()
                    denom.add_(eps)
                    p.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - product)))
                    p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - product * mu_next))
        return loss
