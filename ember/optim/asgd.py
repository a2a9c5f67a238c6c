"""`ember.optim.ASGD`: torch's single-tensor algorithm (SGD with iterate averaging)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from .optimizer import Optimizer, _number, _params_with_grad, _scalar_step


class ASGD(Optimizer):
    """ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
    differentiable=False, capturable=False): `ax` holds the averaged iterate. The step size `eta` and the
    averaging weight `mu` are 0-d tensors of the scalar dtype, as torch keeps them (so rounded as torch's)."""

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                lr, lambd, alpha, t0 = _number(group["lr"]), group["lambd"], group["alpha"], group["t0"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["eta"] = _scalar_step(lr)
                        state["mu"] = _scalar_step(1.0)
                        state["ax"] = F.zeros_like(p)
                    eta, mu, ax = state["eta"], state["mu"], state["ax"]
                    state["step"].add_(1)
                    step = state["step"].item()
                    grad = p.grad if not group["maximize"] else -p.grad
                    if group["weight_decay"] != 0:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    eta_value = eta.item()
                    p.mul_(1 - lambd * eta_value)
                    p.add_(grad, alpha=-eta_value)
                    if mu.item() != 1:
                        ax.add_(p.sub(ax).mul_(mu))
                    else:
                        ax.copy_(p)
                    eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
                    mu.fill_(1 / max(1, step - t0))
        return loss
