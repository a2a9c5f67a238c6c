"""`ember.optim.Rprop`: torch's single-tensor algorithm (resilient backpropagation: per-element step sizes
grown while the gradient keeps its sign and shrunk when it flips)."""
from __future__ import annotations

from typing import Any, Callable

from ember.frontend.autograd.grad_mode import no_grad

from ._checks import check_nonnegative
from .optimizer import Optimizer, _number, _params_with_grad, _scalar_step


class Rprop(Optimizer):
    """Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
    maximize=False, differentiable=False)."""

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        from ember._generated import functions as F

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                (etaminus, etaplus), (step_min, step_max) = group["etas"], group["step_sizes"]
                for p in _params_with_grad(group):
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step()
                        state["prev"] = F.zeros_like(p)
                        state["step_size"] = F.full_like(p.grad, _number(group["lr"]))
                    prev, step_size = state["prev"], state["step_size"]
                    state["step"].add_(1)
                    grad = p.grad if not group["maximize"] else -p.grad
                    sign = grad.mul(prev).sign()
                    factor = F.where(sign.gt(0), F.full_like(sign, etaplus),
                                     F.where(sign.lt(0), F.full_like(sign, etaminus), F.ones_like(sign)))
                    step_size.mul_(factor).clamp_(step_min, step_max)
                    grad = F.where(factor.eq(etaminus), 0.0, grad)      # no move where the sign flipped
                    p.addcmul_(grad.sign(), step_size, value=-1)
                    prev.copy_(grad)
        return loss
