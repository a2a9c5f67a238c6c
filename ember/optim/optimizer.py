"""`ember.optim.Optimizer`: parameter groups, per-parameter state, and torch's state_dict format.

Subclasses implement `step` with ember ops under `no_grad`, writing into the parameters in
place, so an optimizer runs on whatever device its parameters live on. The state_dict maps
each parameter to its index in the order of the groups (torch's format), so a state saved
from one optimizer loads into another built over the same parameters.
"""
from __future__ import annotations

import functools
import itertools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Iterable

from ember.frontend.tensor import Tensor


class _RequiredParameter:
    """Marks a hyper-parameter without a default (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _scalar_step(value: float = 0.0, device=None) -> Tensor:
    """The `step` state entry: a 0-d tensor of float32 (float64 when that is the default dtype),
    on the cpu as torch keeps it, or on `device` (torch's fused path keeps it on the params')."""
    from ember.frontend.factories import tensor
    from ember.core import dtype as _dt

    scalar = _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32
    return tensor(float(value), dtype=scalar, device=device)


def _number(value):
    """A hyper-parameter as the update's arithmetic takes it: a Tensor learning rate (torch accepts one, and
    schedulers may update it in place) as its Python number."""
    return value.item() if isinstance(value, Tensor) else value


#: hook keys are never reused (as torch's handle ids), so a stale handle removes nothing
_HOOK_IDS = itertools.count()


class _RemovableHandle:
    """What register_step_*_hook returns: `.remove()` unregisters the hook."""

    def __init__(self, hooks: dict, key: int) -> None:
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        self._hooks.pop(self._key, None)


#: the hooks of every optimizer's step (torch.optim.optimizer's global registrations), run before its own
_GLOBAL_PRE_HOOKS: dict = {}
_GLOBAL_POST_HOOKS: dict = {}


def register_optimizer_step_pre_hook(hook) -> _RemovableHandle:
    """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before every optimizer's step
    (before the optimizer's own pre-hooks), as torch's global registration."""
    key = next(_HOOK_IDS)
    _GLOBAL_PRE_HOOKS[key] = hook
    return _RemovableHandle(_GLOBAL_PRE_HOOKS, key)


def register_optimizer_step_post_hook(hook) -> _RemovableHandle:
    """hook(optimizer, args, kwargs) -> None, run after every optimizer's step (after its own post-hooks), as
    torch's global registration."""
    key = next(_HOOK_IDS)
    _GLOBAL_POST_HOOKS[key] = hook
    return _RemovableHandle(_GLOBAL_POST_HOOKS, key)


def _with_step_hooks(step):
    """Wrap a subclass's step so the pre-hooks (which may replace args/kwargs) and post-hooks run."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        attrs = self.__dict__
        if not (attrs.get("_step_pre_hooks") or attrs.get("_step_post_hooks") or _GLOBAL_PRE_HOOKS
                or _GLOBAL_POST_HOOKS):                                     # the common case: none
            return step(self, *args, **kwargs)
        for hook in list(_GLOBAL_PRE_HOOKS.values()) + list(attrs.get("_step_pre_hooks", {}).values()):
            out = hook(self, args, kwargs)
            if out is not None:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"optimizer step pre-hook must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {out}.")
                args, kwargs = out
        result = step(self, *args, **kwargs)
        for hook in list(attrs.get("_step_post_hooks", {}).values()) + list(_GLOBAL_POST_HOOKS.values()):
            hook(self, args, kwargs)
        return result

    wrapper._ember_step_hooks = True
    return wrapper


class Optimizer:
    """Base class of the optimizers: `param_groups` (a list of dicts), `state` (per parameter)."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def register_step_pre_hook(self, hook) -> _RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), run before each step."""
        hooks = self.__dict__.setdefault("_step_pre_hooks", {})
        key = next(_HOOK_IDS)
        hooks[key] = hook
        return _RemovableHandle(hooks, key)

    def register_step_post_hook(self, hook) -> _RemovableHandle:
        """hook(optimizer, args, kwargs) -> None, run after each step."""
        hooks = self.__dict__.setdefault("_step_post_hooks", {})
        key = next(_HOOK_IDS)
        hooks[key] = hook
        return _RemovableHandle(hooks, key)

    def __init__(self, params: Iterable, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__module__}.{type(params).__name__}")
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # -- groups -------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters; missing hyper-parameters take the optimizer's defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", stacklevel=3)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: to None (the default, as torch), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.fill_(0)

    # -- state dict ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{'state': {index: {name: value}}, 'param_groups': [{..., 'params': [indices]}]}.

        Parameters are numbered in group order, as torch does; the state's tensors are the
        optimizer's own (not copies), as in torch.
        """
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state_dict of the same shape of groups; state tensors follow each parameter's
        device and (floating point) dtype, except `step`, which is kept as saved."""
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v, key) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            return new_group

        self.__dict__["state"] = state
        self.__dict__["param_groups"] = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]

    # -- stepping -----------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None):
        raise NotImplementedError

    def _closure_loss(self, closure: Callable[[], Any] | None):
        """Evaluate the closure (with gradients enabled) as torch's optimizers do before a step."""
        if closure is None:
            return None
        from ember.frontend.autograd.grad_mode import enable_grad

        with enable_grad():
            return closure()

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _params_with_grad(group: dict[str, Any]) -> list[Tensor]:
    """The group's parameters that have a gradient (the others are skipped, as torch does)."""
    return [p for p in group["params"] if p.grad is not None]     # (ember has no sparse gradients)
