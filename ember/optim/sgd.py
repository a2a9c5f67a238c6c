"""`ember.optim.SGD`: stochastic gradient descent with momentum, dampening, Nesterov and weight
decay; the update is torch's single-tensor algorithm, op for op."""
from __future__ import annotations

from typing import Any, Callable

from ember._generated import functions as F
from ember.frontend.autograd.grad_mode import no_grad

from ember.decompositions.optimizers import sgd_update

from ._impl import check_fused_params, check_impl_args, use_fused
from .optimizer import Optimizer, _params_with_grad, _number


class SGD(Optimizer):
    """SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False, ...)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_impl_args(foreach, fused, differentiable)
        super().__init__(params, defaults)
        if fused:
            check_fused_params(p for g in self.param_groups for p in g["params"])

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for k, v in (("nesterov", False), ("maximize", False), ("foreach", None),
                         ("differentiable", False), ("fused", False)):
                group.setdefault(k, v)

    def step(self, closure: Callable[[], Any] | None = None):
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                params = _params_with_grad(group)
                momentum = group["momentum"]
                bufs = [self.state[p].get("momentum_buffer") for p in params] if momentum != 0 else []
                # the first step creates the momentum buffers (a clone of the gradient): per tensor
                if params and use_fused(group, params) and None not in bufs:
                    self._fused_step(group, params, bufs)
                    continue
                for p in params:
                    self._single_tensor_step(group, p)
        return loss

    def _single_tensor_step(self, group: dict, p) -> None:
        lr, momentum, dampening = _number(group["lr"]), group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        buf, is_first_step = None, False
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:     # the first step: a new buffer, which sgd_update fills with the gradient
                state["momentum_buffer"] = buf = F.empty_like(p.grad)
                is_first_step = True
        sgd_update(p, p.grad, buf, weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step)

    def _fused_step(self, group: dict, params: list, bufs: list) -> None:
        """The whole group in one `_fused_sgd_` call (ember/optim/_impl.py)."""
        F._fused_sgd_(params, [p.grad for p in params], bufs, weight_decay=group["weight_decay"],
                      momentum=group["momentum"], lr=_number(group["lr"]), dampening=group["dampening"],
                      nesterov=group["nesterov"], maximize=group["maximize"], is_first_step=False)
