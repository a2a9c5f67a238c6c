"""Automatic mixed precision: the Autocast dispatch key.

`ember.autocast(device_type, dtype)` switches the Autocast key on for this thread. Its
kernel casts an op's floating-point inputs by the op's registry policy (`lower`: to the
autocast dtype; `fp32`: up to float32; `promote`: to the widest input type) and calls the
op again with Autocast excluded, so Autograd records the casts. Casts of float32 leaf
weights are cached for the outermost region, as PyTorch does.
"""
from __future__ import annotations

import functools
import threading
import warnings

from ember.dispatcher import keys as K
from ember.dispatcher.state import STATE

from ember.core import dtype as _dt
from .tensor import Tensor

_DEFAULT_DTYPE = {"cpu": _dt.bfloat16}


class autocast:
    """Context manager / decorator enabling autocast for one device type (torch.amp.autocast).

    As in PyTorch: `dtype=None` takes the device type's default (`get_autocast_dtype`), a
    dtype other than float16/bfloat16 warns and disables the region, and a device type
    whose backend is not available (e.g. "cuda" without the plugin) warns and disables it.
    An unknown device type is an error. Attributes `device`, `fast_dtype`, `_enabled` and
    `_cache_enabled` are torch's; `device_type`, `enabled`, `cache_enabled` are ember's names.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"autocast(): expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type = self.device = device_type.split(":")[0]
        if not is_autocast_available(self.device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device_type}'")
        self.fast_dtype = get_autocast_dtype(self.device_type) if dtype is None else dtype
        self.cache_enabled = self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        if enabled:
            name = self.device_type.upper()
            if not _device_usable(self.device_type):
                warnings.warn(f"{name} is not available (no usable backend for device type "
                              f"{self.device_type!r}). Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (_dt.float16, _dt.bfloat16):
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of ember.bfloat16, ember.float16 currently.",
                              stacklevel=2)
                enabled = False
        self.enabled = self._enabled = enabled

    def __enter__(self):
        st = STATE
        # the state to restore lives on a per-thread stack, not on `self`, so one autocast
        # object can be re-entered (nested, recursive, or from several threads at once)
        _saved().append(st.autocast.get(self.device_type))
        if self.enabled:
            st.autocast[self.device_type] = self.fast_dtype
        else:
            st.autocast.pop(self.device_type, None)
        st.autocast_depth += 1
        if st.autocast_depth == 1:
            st.autocast_cache = {} if self.cache_enabled else None
        _sync_key()
        return self

    def __exit__(self, *exc) -> None:
        st = STATE
        prev = _saved().pop()
        if prev is None:
            st.autocast.pop(self.device_type, None)
        else:
            st.autocast[self.device_type] = prev
        st.autocast_depth -= 1
        if st.autocast_depth == 0:
            st.autocast_cache = None
        _sync_key()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled):
                return fn(*args, **kwargs)
        return wrapper


class _Saved(threading.local):
    def __init__(self) -> None:
        self.stack: list = []


_SAVED = _Saved()


def _saved() -> list:
    return _SAVED.stack


def _sync_key() -> None:
    st = STATE
    if st.autocast:
        st.include |= K.AUTOCAST
    else:
        st.include &= ~K.AUTOCAST


def _device_usable(device_type: str) -> bool:
    """cpu and meta always; a plugin's device type when its backend loaded and is available."""
    if device_type in ("cpu", "meta"):
        return True
    from ember.dispatcher.plugins import REGISTRY

    try:
        return REGISTRY.load(device_type).state == "available"
    except Exception:
        return False


def is_autocast_available(device_type: str) -> bool:
    """Whether `device_type` is one autocast knows: cpu, meta, cuda, or an installed plugin's type.

    (Whether its backend is usable right now is checked when a region is entered.)
    """
    from ember.dispatcher.plugins import REGISTRY

    return device_type in ("cpu", "meta", "cuda") or device_type in REGISTRY.records


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    return device_type in STATE.autocast


def get_autocast_dtype(device_type: str = "cpu"):
    return STATE.autocast.get(device_type, _DEFAULT_DTYPE.get(device_type, _dt.float16))


def _cast(t, dtype):
    from ember._generated import functions as F

    if t._dtype is dtype:
        return t
    st = STATE
    cache = st.autocast_cache
    # PyTorch's rule: only float32 leaves that require grad (weights), not views, cast down to
    # the autocast dtype. A cast made while grad mode is off has no graph: caching it would
    # silently cut the weight out of every later (grad-enabled) use in the region.
    cacheable = (cache is not None and t._ag is not None and t._ag.grad_fn is None and t._dtype is _dt.float32
                 and t._base is None and dtype is not _dt.float32 and dtype is not _dt.float64
                 and st.grad_enabled and not st.inference_mode)
    if cacheable:
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
    out = F._to_copy(t, dtype=dtype)
    if cacheable:
        cache[id(t)] = (t, out)
    return out


def _first_device_type(op, args):
    for i in op.tensor_args:
        if isinstance(args[i], Tensor):
            return args[i]._device.type
    for i in op.tensor_list_args:
        if args[i]:
            return args[i][0]._device.type
    return None


def autocast_kernel(op, below: int, args: tuple):
    """Cast inputs by the op's policy for their device type, then call the op with Autocast excluded."""
    device_type = _first_device_type(op, args)
    dtype = STATE.autocast.get(device_type)
    st = STATE
    policies = op.autocast
    policy = policies.get(device_type) or policies["default"]
    if dtype is None or policy == "none":
        new_args = args
    else:
        new_args = _apply_policy(policy, op, args, dtype)
    prev = st.keys
    st.keys = (prev[0], prev[1] | K.AUTOCAST)
    try:
        return op.dispatch(new_args)
    finally:
        st.keys = (st.keys[0], prev[1])     # the excluded keys as they were


def _eligible(t) -> bool:
    return isinstance(t, Tensor) and t._dtype.is_floating_point and t._dtype is not _dt.float64


def _apply_policy(policy: str, op, args, dtype):
    if policy == "lower":
        target = dtype
    elif policy == "fp32":
        target = _dt.float32
    else:  # promote: the widest floating type among the inputs
        floats = [a._dtype for a in _tensors(op, args) if a._dtype.is_floating_point]
        if len(set(floats)) <= 1:
            return args
        from ember.core.type_promotion import promote_types

        target = floats[0]
        for f in floats[1:]:
            target = promote_types(target, f)
    new = list(args)
    for i in op.tensor_args:
        if _eligible(new[i]) and (policy != "fp32" or new[i]._dtype is not _dt.float32):
            new[i] = _cast(new[i], target)
    for i in op.tensor_list_args:
        new[i] = [_cast(t, target) if _eligible(t) else t for t in new[i]]
    return tuple(new)


def _tensors(op, args):
    for i in op.tensor_args:
        if isinstance(args[i], Tensor):
            yield args[i]
    for i in op.tensor_list_args:
        yield from args[i]
