"""Weight averaging (torch.optim.swa_utils): stochastic weight averaging (SWA) and exponential moving
averages (EMA) of a model's parameters, the SWALR schedule that anneals to a constant SWA learning rate,
and update_bn, which recomputes batch-norm statistics for the averaged weights.

`AveragedModel(model)` keeps a deep copy of `model`; each `update_parameters(model)` folds the model's
current parameters into the copy's (the first call copies them). By default the average is the running
mean over calls (SWA); `avg_fn` (one tensor at a time) or `multi_avg_fn` (lists of tensors) replace it,
`get_ema_avg_fn(decay)`/`get_ema_multi_avg_fn(decay)` giving an exponential moving average. With
`use_buffers=True` buffers are averaged too; otherwise they are copied from the model.
"""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable

import ember
from ember.frontend.autograd.grad_mode import no_grad
from ember.nn.modules.batchnorm import _BatchNorm
from ember.nn.modules.module import Module

from .lr_scheduler.base import LRScheduler, _format_param
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An exponential moving average over lists of tensors, in place: ema <- decay * ema + (1 - decay) * p."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, _num_averaged) -> None:
        with no_grad():
            floating = ema_params[0].is_floating_point() or ema_params[0].is_complex()
            for ema, current in zip(ema_params, current_params):
                if floating:
                    ema.lerp_(current, 1 - decay)
                else:
                    ema.copy_(ema * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """The running mean over lists of tensors, in place: avg <- avg + (p - avg) / (n + 1)."""
    def swa_update(averaged_params, current_params, num_averaged) -> None:
        with no_grad():
            floating = averaged_params[0].is_floating_point() or averaged_params[0].is_complex()
            for averaged, current in zip(averaged_params, current_params):
                if floating:
                    averaged.lerp_(current, 1 / (float(num_averaged) + 1))
                elif isinstance(num_averaged, ember.Tensor):
                    averaged.addcdiv_(current - averaged, num_averaged + 1)
                else:
                    averaged.add_(current - averaged, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """An exponential moving average of one tensor: returns decay * ema + (1 - decay) * p."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, _num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """The running mean of one tensor: returns avg + (p - avg) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters are the average of the model's over `update_parameters` calls;
    calling it runs the copy (`self.module`). `n_averaged` (a buffer) counts the calls."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, module: Module):
        """What is averaged: the parameters, and the buffers too with use_buffers."""
        if self.use_buffers:
            return itertools.chain(module.parameters(), module.buffers())
        return module.parameters()

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters into the average (the first call copies them)."""
        pairs = [(a.detach(), p.detach().to(a.device)) for a, p in zip(self._averaged(self.module),
                                                                        self._averaged(model))]
        with no_grad():
            if int(self.n_averaged) == 0:
                for averaged, current in pairs:
                    averaged.copy_(current)
            else:
                for group in _by_device_and_dtype(pairs):
                    self._fold(group)
            if not self.use_buffers:
                for mine_b, theirs in zip(self.module.buffers(), model.buffers()):
                    mine_b.detach().copy_(theirs.detach().to(mine_b.device))
            self.n_averaged += 1

    def _fold(self, group: list) -> None:
        """One device's and dtype's (averaged, current) pairs folded in: by `avg_fn` one at a time, by
        `multi_avg_fn` as lists, or by default the running mean (as lists on cuda, one at a time elsewhere,
        torch's choice, so the rounding is torch's)."""
        n = self.n_averaged.to(group[0][0].device)
        multi = self.multi_avg_fn
        if multi is None and self.avg_fn is None and group[0][0].device.type == "cuda":
            multi = get_swa_multi_avg_fn()
        if multi is not None:
            multi([a for a, _ in group], [c for _, c in group], n)
            return
        avg_fn = self.avg_fn or get_swa_avg_fn()
        for averaged, current in group:
            averaged.copy_(avg_fn(averaged, current, n))


def _by_device_and_dtype(pairs: list) -> list[list]:
    """`pairs` grouped by their averaged tensor's device and dtype, in first-seen order (a multi_avg_fn
    gets lists it can update as one)."""
    groups: dict = {}
    for averaged, current in pairs:
        groups.setdefault((str(averaged.device), averaged.dtype), []).append((averaged, current))
    return list(groups.values())


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute every batch norm's running statistics in `model` over one pass of `loader` (a batch, or a
    list/tuple whose first item is the batch): statistics reset, a cumulative average (momentum None)
    while the pass runs, momentum and training mode restored afterwards."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr from its value to `swa_lr` over `anneal_epochs` steps ("cos" or "linear"),
    then holds it: the schedule SWA trains with."""

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    def _progress(self, step: int) -> float:
        return max(0.0, min(1.0, step / max(1, self.anneal_epochs)))

    def get_lr(self) -> list[float]:
        # the group's lr is the previous step's blend; the lr it started from is recovered from it
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        before, now = self._anneal(self._progress(step - 1)), self._anneal(self._progress(step))
        lrs = []
        for group in self.optimizer.param_groups:
            start = group["swa_lr"] if before == 1 else (group["lr"] - before * group["swa_lr"]) / (1 - before)
            lrs.append(group["swa_lr"] * now + start * (1 - now))
        return lrs
