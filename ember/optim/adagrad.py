"""`ember.optim.Adagrad`: torch's single-tensor algorithm (lr_decay, initial accumulator)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from .optimizer import Optimizer, _params_with_grad, _scalar_step, _number


class Adagrad(Optimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, ...).

    As torch's, the state (step, sum) is created in the constructor.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        from ember._generated import functions as F

        check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                          initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar_step()
                state["sum"] = F.full_like(p, group["initial_accumulator_value"])

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, lr_decay, eps = _number(group["lr"]), group["lr_decay"], group["eps"]
                weight_decay, maximize = group["weight_decay"], group["maximize"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:      # a parameter added by add_param_group
                        state["step"] = _scalar_step()
                        state["sum"] = F.full_like(p, group["initial_accumulator_value"])
                    state_sum, step_t = state["sum"], state["step"]
                    step_t.add_(1)
                    step = step_t.item()
                    grad = p.grad if not maximize else -p.grad
                    if weight_decay != 0:
                        grad = grad.add(p, alpha=weight_decay)
                    clr = lr / (1 + (step - 1) * lr_decay)
                    state_sum.addcmul_(grad, grad, value=1)
                    std = state_sum.sqrt().add_(eps)
                    p.addcdiv_(grad, std, value=-clr)
        return loss
