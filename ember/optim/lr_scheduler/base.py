"""The scheduler base class: `last_epoch`, `step()` (the chainable update, or the closed form for
`step(epoch)`), state dicts, and torch's call-order warnings."""
from __future__ import annotations

import warnings
from functools import wraps
from typing import Any
from weakref import ref

from ..optimizer import Optimizer

__all__ = ["LRScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available.")


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    """One value per param group: a scalar repeated, or a list of the groups' length."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


def _group_values(optimizer: Optimizer, key: str) -> list:
    return [group[key] for group in optimizer.param_groups]


class LRScheduler:
    """Base class: `last_epoch` counts `step()` calls; `get_lr()` gives the next lrs."""

    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.")
        self.base_lrs: list[float] = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._patch_optimizer_step()
        self._initial_step()

    def _patch_optimizer_step(self) -> None:
        """Wrap optimizer.step to note that it ran (for torch's call-order warning)."""
        opt = self.optimizer
        if hasattr(opt.step, "_wrapped_by_lr_sched"):
            return
        opt_ref = ref(opt)
        func = opt.step.__func__

        @wraps(func)
        def wrapper(*args, **kwargs):
            o = opt_ref()
            o._opt_called = True
            return func.__get__(o, o.__class__)(*args, **kwargs)

        wrapper._wrapped_by_lr_sched = True
        opt.step = wrapper

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The lrs the last `step()` set."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to `epoch`, through the closed form where there is one)."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`.", UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should call "
                              "them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`. "
                              "Failure to do this will result in skipping the first value of the learning rate "
                              "schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: list[float]) -> None:
        """Write one lr per param group, and note them as the last lrs."""
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")
