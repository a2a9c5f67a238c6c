"""`ember.optim.Adadelta`: torch's single-tensor algorithm (rho, eps, weight decay), per group in one fused op."""
from __future__ import annotations

from typing import Any, Callable

from ember.decompositions.optimizers import adadelta_update
from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from ._impl import use_fused
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
        """One update of every parameter that has a gradient; returns the closure's loss. A group goes
        through one `_fused_adadelta_` call where it can (ember/optim/_impl.py), else tensor by tensor: the
        same numbers either way."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, rho, eps = _number(group["lr"]), group["rho"], group["eps"]
                weight_decay, maximize = group["weight_decay"], group["maximize"]
                params = _params_with_grad(group)
                fused = bool(params) and use_fused(group, params)
                states = [self._state_of(p, fused) for p in params]
                square_avgs, acc_deltas = [s["square_avg"] for s in states], [s["acc_delta"] for s in states]
                steps = [s["step"] for s in states]
                if fused:
                    F._fused_adadelta_(params, [p.grad for p in params], square_avgs, acc_deltas, steps, lr=lr,
                                       rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
                    continue
                for i, p in enumerate(params):
                    adadelta_update(p, p.grad, square_avgs[i], acc_deltas[i], steps[i], lr, rho, eps, weight_decay,
                                    maximize)
        return loss

    def _state_of(self, p, fused: bool) -> dict:
        """p's state, created zeroed on its first step (as torch's; the step on p's device for the fused op)."""
        from ember._generated import functions as F

        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_step(device=p.device if fused else None)
            state["square_avg"] = F.zeros_like(p)
            state["acc_delta"] = F.zeros_like(p)
        return state
