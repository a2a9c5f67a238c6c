"""Schedules that cycle: one-cycle, cyclic (lr and momentum between bounds) and cosine annealing with warm
restarts."""
from __future__ import annotations

import math
import types
from typing import Any, Callable, Literal

from ..optimizer import Optimizer

from .base import LRScheduler, _format_param

__all__ = ["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts"]


class _CyclesMomentum:
    """`cycle_momentum`, as OneCycleLR and CyclicLR share it: the momentum, or Adam's beta1 (`use_beta1`),
    moves opposite to the lr between each group's base_momentum and max_momentum."""

    optimizer: Optimizer
    use_beta1: bool

    def _init_momentum(self, optimizer: Optimizer, max_momentum, base_momentum, last_epoch: int) -> tuple[list, list]:
        """Check that the optimizer has a momentum; on a fresh start set each group's to its max and note both
        bounds in the group. Returns (max_momentums, base_momentums), one per group."""
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
        self.use_beta1 = "betas" in optimizer.defaults
        max_momentums = _format_param("max_momentum", optimizer, max_momentum)
        base_momentums = _format_param("base_momentum", optimizer, base_momentum)
        if last_epoch == -1:
            for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                self._set_momentum(group, m_momentum)
                group["max_momentum"], group["base_momentum"] = m_momentum, b_momentum
        return max_momentums, base_momentums

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class OneCycleLR(_CyclesMomentum, LRScheduler):
    """The 1cycle policy: lr up to max_lr then down to max_lr / (div_factor * final_div_factor),
    momentum (or Adam's beta1) the other way; call step() after every batch."""

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: Literal["cos", "linear"] = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85, max_momentum: float | list[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        computed_momentum = self._anneal_func(group[phase["start_momentum"]],
                                                              group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                self._set_momentum(group, computed_momentum)
        return lrs


class CyclicLR(_CyclesMomentum, LRScheduler):
    """The lr cycles between base_lr and max_lr (up for step_size_up steps, down for step_size_down), scaled per
    cycle or per iteration ("triangular", "triangular2", "exp_range", or `scale_fn`); with cycle_momentum the
    momentum (or beta1) cycles the opposite way between base_momentum and max_momentum."""

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down: int | None = None,
                 mode: Literal["triangular", "triangular2", "exp_range"] = "triangular", gamma: float = 1.0,
                 scale_fn: Callable[[float], float] | None = None, scale_mode: Literal["cycle", "iterations"] = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            max_momentums, self.base_momentums = self._init_momentum(optimizer, max_momentum, base_momentum, last_epoch)
            self.max_momentums = max_momentums
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(at)
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, max_m - (max_m - base_m) * scale_factor * self.scale_fn(at))
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = fn.__dict__.copy() if fn is not None and not isinstance(fn, types.FunctionType) \
            else None
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to eta_min over T_i epochs, restarting at the initial lr; each period
    T_mult times the last (the first T_0)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = self.T_i = T_0
        self.T_mult, self.eta_min = T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """The next epoch, or `epoch` (a float moves within a period: epoch + batch / batches)."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())
