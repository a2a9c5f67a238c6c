"""`ember.optim.Adam` (and the decoupled weight decay AdamW builds on): torch's single-tensor
algorithm, op for op, with amsgrad and maximize."""
from __future__ import annotations

from typing import Any, Callable

from ember._generated import functions as F
from ember.frontend.autograd.grad_mode import no_grad

from ember.decompositions.optimizers import adam_update

from ._checks import check_betas, check_nonnegative
from ._impl import check_fused_params, check_impl_args, use_fused
from .optimizer import Optimizer, _params_with_grad, _scalar_step, _number


class Adam(Optimizer):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, ...).

    `decoupled_weight_decay=True` is AdamW. `foreach` / `fused` choose the implementation as in
    torch (see ember/optim/_impl.py: the fused op by default, the single-tensor algorithm with
    `foreach=False`; the same numbers either way); `capturable` is accepted for compatibility.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        check_impl_args(foreach, fused, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        if fused:
            check_fused_params(p for g in self.param_groups for p in g["params"])

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                         ("differentiable", False), ("fused", None), ("decoupled_weight_decay", False)):
                group.setdefault(k, v)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, weight_decay = _number(group["lr"]), group["eps"], group["weight_decay"]
                amsgrad, maximize = group["amsgrad"], group["maximize"]
                decoupled = group.get("decoupled_weight_decay", False)
                params = _params_with_grad(group)
                fused = use_fused(group, params)
                for p in params:
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar_step(device=p.device if fused else None)
                        state["exp_avg"] = F.zeros_like(p)
                        state["exp_avg_sq"] = F.zeros_like(p)
                        if amsgrad:
                            state["max_exp_avg_sq"] = F.zeros_like(p)
                    if not fused:
                        adam_update(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"),
                                    state["step"], lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled)
                if fused and params:
                    self._fused_step(group, params)
        return loss

    def _fused_step(self, group: dict, params: list) -> None:
        """The whole group in one `_fused_adam_` call (ember/optim/_impl.py)."""
        states = [self.state[p] for p in params]
        beta1, beta2 = group["betas"]
        amsgrad = group["amsgrad"]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        max_sqs = [s["max_exp_avg_sq"] for s in states] if amsgrad else []
        steps = [s["step"] for s in states]
        F._fused_adam_(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, max_sqs, steps, lr=_number(group["lr"]),
                       beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"],
                       amsgrad=amsgrad, maximize=group["maximize"],
                       decoupled_weight_decay=group.get("decoupled_weight_decay", False))
