"""`ember.amp.GradScaler`: dynamic loss scaling, with torch.amp.GradScaler's defaults and semantics.

    scaler = ember.amp.GradScaler("cpu")
    with ember.autocast("cpu", dtype=ember.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)                       # optional: e.g. before clip_grad_norm_
    ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)                           # skipped (returns None) if a gradient is inf/NaN
    scaler.update()                            # backoff on inf/NaN, growth after growth_interval clean steps

The scale (float32) and the growth tracker (int32) are 0-d tensors on the device of the first
scaled output; the inf/NaN check and the scale update are ember ops on that device, so the
scaler runs on every backend. The only host synchronisation per step is the one PyTorch also
makes: `step` reads the combined found-inf flag to decide whether to call `optimizer.step`.
"""
from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.autocast import _device_usable
from ember.frontend.tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the current iteration (torch.amp.grad_scaler.OptState)."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """Lazily copies one tensor to each device that asks for it (one copy per device)."""

    def __init__(self, master: Tensor) -> None:
        self.master = master
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        retval = self._per_device_tensors.get(device)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


def _non_finite_check_and_unscale_(grads: list[Tensor], found_inf: Tensor, inv_scale: Tensor) -> None:
    """torch._amp_foreach_non_finite_check_and_unscale_ composed from ember ops.

    Multiplies every gradient by `inv_scale` in place and sets `found_inf` (a 0-d float32
    tensor) to 1.0 if any gradient holds an inf or NaN. No value is read on the host.
    """
    from ember._generated import functions as F

    finite = [F.all(F.isfinite(g)) for g in grads]
    all_finite = finite[0] if len(finite) == 1 else F.all(F.stack(finite))
    found_inf.copy_(F.maximum(found_inf, F.logical_not(all_finite).to(found_inf.dtype)))
    for g in grads:
        g.mul_(inv_scale)


def _update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                   backoff_factor: float, growth_interval: int) -> None:
    """torch._amp_update_scale_ composed from ember ops (no host synchronisation).

    found_inf: scale *= backoff_factor, tracker = 0. Otherwise tracker += 1, and when it
    reaches growth_interval the scale grows by growth_factor (if the result is finite) and
    the tracker restarts at 0.
    """
    from ember._generated import functions as F

    inf = found_inf > 0
    successful = growth_tracker + 1
    grow = F.logical_and(F.logical_not(inf), successful == growth_interval)     # ==, as torch's kernel
    grown = scale * growth_factor
    grown = F.where(F.isfinite(grown), grown, scale)
    new_scale = F.where(inf, scale * backoff_factor, F.where(grow, grown, scale))
    new_tracker = F.where(F.logical_or(inf, grow), F.zeros_like(successful), successful)
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)


class GradScaler:
    """Dynamic loss scaling (torch.amp.GradScaler).

    `device` is the device type whose gradients are scaled ("cuda" by default, as in
    PyTorch). If that device is not available (no plugin, no GPU) the scaler warns and
    disables itself, as PyTorch's does for cuda: every method then passes through.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and not _device_usable(device):
            warnings.warn(f"ember.amp.GradScaler is enabled, but device {device!r} is not available.  Disabling.")
            self._enabled = False
        if self._enabled:
            # AssertionError, as PyTorch raises
            if growth_factor <= 1.0:
                raise AssertionError(f"The growth factor must be > 1.0. (GradScaler: got {growth_factor})")
            if backoff_factor >= 1.0:
                raise AssertionError(f"The backoff factor must be < 1.0. (GradScaler: got {backoff_factor})")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict = defaultdict(_refresh_per_optimizer_state)

    # -- internals -----------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        # AssertionError (not RuntimeError), as PyTorch raises: code may catch it
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        from ember._generated import functions as F
        from ember.core import dtype as _dt

        self._scale = F.full((), float(self._init_scale), dtype=_dt.float32, device=dev)
        self._growth_tracker = F.full((), int(self._init_growth_tracker), dtype=_dt.int32, device=dev)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        """Unscale every gradient of `optimizer`; return {device: found_inf tensor}."""
        from ember.core import dtype as _dt

        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grads_by_device: dict = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise TypeError(f"GradScaler.unscale_: optimizer parameters must be tensors, "
                                        f"got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads_by_device[param.grad.device].append(param.grad)
            for device, grads in grads_by_device.items():
                _non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                               per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    # -- the training-loop API -------------------------------------------------------------------
    def scale(self, outputs):
        """Multiply `outputs` (a tensor, or nested lists/tuples/iterables of tensors) by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash: list[_MultiDeviceReplicator] = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def unscale_(self, optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale, in place (at most once per step)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ember._generated import functions as F
        from ember.core import dtype as _dt

        # the reciprocal in float64, rounded once to float32, as PyTorch computes it
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = F.full((), 0.0, dtype=_dt.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state: dict, *args, **kwargs):
        retval = None
        found = optimizer_state["found_inf_per_device"].values()
        # meta tensors hold no values: nothing can be found, and the step runs, so that a meta
        # run (memory estimation) traces the optimizer as a real run would
        if not sum(v.item() for v in found if v.device.type != "meta"):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and call `optimizer.step(*args, **kwargs)` unless a
        gradient is inf/NaN; returns what optimizer.step returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not optimizer_state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off or grow the scale from this iteration's inf checks, or set it to `new_scale`."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                _scale.fill_(new_scale)
            else:
                reason = "new_scale should be a float or a 1-element ember tensor with requires_grad=False."
                if not isinstance(new_scale, Tensor) or new_scale.device.type != _scale.device.type \
                        or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(f"GradScaler.update: {reason} Got {new_scale!r}.")
                _scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for extra in found_infs[1:]:
                found_inf_combined = found_inf_combined + extra
            _update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # -- getters and setters ---------------------------------------------------------------------
    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled); reads the device value."""
        if not self._enabled:
            return 1.0
        scale = self._get_scale_async()
        return self._init_scale if scale is None else float(scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        return self._enabled

    # -- checkpointing ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{scale, growth_factor, backoff_factor, growth_interval, _growth_tracker}; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise RuntimeError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                   "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        from ember._generated import functions as F
        from ember.core import dtype as _dt

        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = F.full((), 1.0, dtype=_dt.float32, device=_scale.device)
        found_inf = F.full((), 0.0, dtype=_dt.float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
