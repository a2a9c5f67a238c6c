"""The call path: compute a call's key set and run the resolved entry.

    binding (ember.add) -> op.dispatch(args) -> entry for (op, key set) -> kernel(op, below, args)

A call's key set is the union of its tensor arguments' keys (plus the device argument's
backend for factories), plus this thread's included keys, minus its excluded keys; each op's
`dispatch` function computes it written out for the op's tensor positions (`caller_for`: made by
the factory generated for the op's layout, ember/dispatcher/_generated/dispatchers.py), and
`call(op, args)` is the same for callers holding an op rather than its function. Each
functionality kernel receives the key set below its own key and redispatches with
`redispatch`. Arguments travel as one tuple in schema order.
"""
from __future__ import annotations

from typing import Callable

from . import keys as K
from .state import STATE

# What the dispatcher needs of the frontend, which sits above it and hands these over when it is
# imported (`install_frontend`): the Tensor class, which the dispatch functions and the runners test
# their arguments with (the generated ones read their module's own global, set here too);
# `make_tensor(native, dtype, device, key, storage[, base])`, with which the runners wrap a kernel's
# native result; and `default_generator(device)`, which the runners pass to a random kernel called
# without a generator. The dispatcher imports nothing of the frontend.
Tensor: type = type(None)
make_tensor: Callable | None = None
default_generator: Callable | None = None


def install_frontend(tensor_class: type, wrap: Callable, generator_of: Callable) -> None:
    """Called once by ember.frontend: the Tensor class, the function wrapping native results and the
    default generator of a device."""
    global Tensor, make_tensor, default_generator
    Tensor, make_tensor, default_generator = tensor_class, wrap, generator_of
    # read as a global there, by the dispatch functions and unwraps
    _dispatchers.Tensor = _unwraps.Tensor = tensor_class


def call(op, args: tuple):
    """Dispatch `op` on `args` (a tuple in schema order): its `dispatch` function (`caller_for`)."""
    return op.dispatch(args)


_BACKEND_MASK = K.BACKEND_MASK


def caller_for(op, method: bool = False) -> Callable[[tuple], object]:
    """`op`'s dispatch function (`OpDef.dispatch`; the generated bindings hold it as a global), or with `method`
    its Tensor method's (`OpDef.method_dispatch`: the same, numbering the arguments after `self` in its errors).

    Made by the factory generated for the op's layout of tensor positions
    (`_generated/dispatchers.py`'s `DISPATCH_FACTORIES`, written by `python -m codegen` for every layout in the
    registry): the key union written out for those positions, no loop over them.
    """
    layout = (op.tensor_args, op.tensor_list_args)
    make = _dispatchers.DISPATCH_FACTORIES.get(layout)
    if make is None:
        raise RuntimeError(f"{op.name}: no generated dispatch function for tensor positions {layout}; every op "
                           "comes from ops_registry.yaml: run `python -m codegen`")
    return make(op, op.cache, method)


def redispatch(op, ks: int, args: tuple):
    """Run `op` with an explicit key set (used by functionality kernels for the keys below)."""
    try:
        entry = op.cache[ks]
    except KeyError:
        entry = op.resolve(ks)
    return entry(args)


def backend_key(op, args: tuple) -> int:
    """The backend key `call` dispatches `op` on `args` to; 0 when it would raise (devices mixed).

    For tools that look at a call before it runs (FlopCounterMode); `call` inlines the same
    key union, being on every op's path.
    """
    ks = 0
    for i in op.tensor_args:
        if isinstance(args[i], Tensor):
            ks |= args[i]._keys
    for i in op.tensor_list_args:
        for a in args[i]:
            if isinstance(a, Tensor):
                ks |= a._keys
    bk = ks & K.BACKEND_MASK
    if bk and not bk & (bk - 1):
        return bk
    try:
        ks, _ = _backend_of_unusual_call(op, args, ks)
    except Exception:
        return 0
    return ks & K.BACKEND_MASK


def _out_of_memory(op, args: tuple, ks: int, exc: MemoryError) -> Exception:
    """ember.OutOfMemoryError for a MemoryError a backend raised running `op` (numpy's, cupy's, a plugin's
    allocator's): the op, the device, what the backend said, and its allocator's counters (the host's
    available memory for a host backend without them). The failed call changed nothing."""
    import os

    from ember.core.errors import OutOfMemoryError

    from .plugins import REGISTRY

    bk = ks & K.BACKEND_MASK
    backend = REGISTRY.by_key.get(bk & -bk)
    device = backend.device_type if backend is not None else "the device"
    counters = {k: v for k, v in (backend.memory_stats() if backend is not None else {}).items() if isinstance(v, int)}
    if not counters and backend is not None and backend.host_memory and hasattr(os, "sysconf"):
        try:
            counters = {"available host bytes": os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")}
        except (ValueError, OSError):
            counters = {}
    summary = ", ".join(f"{name} {value:,}" for name, value in counters.items())
    return OutOfMemoryError(f"{op.name}(): out of memory on {device}: {exc or 'the allocation failed'}"
                            + (f" ({summary})" if summary else ""))


def _backend_of_unusual_call(op, args: tuple, ks: int) -> tuple[int, tuple]:
    """Key set of calls with no tensor (factories) or tensors on several devices."""
    from ember.core.device import as_device

    from .plugins import REGISTRY

    bk = ks & K.BACKEND_MASK
    if not bk:
        device = args[op.device_arg] if op.device_arg is not None else None
        if device is None and _has_protocol_objects(op, args):
            # no tensor, but an object implementing __torch_function__ (a tracer's proxy): its protocol decides
            return ks | K.TORCH_FUNCTION | REGISTRY.backend_for(as_device(None)).key, args
        if op.numbers_everywhere:
            from .arguments import numbers_only_call

            wrapped = numbers_only_call(op, args)
            if wrapped is not None:
                return ks | wrapped[op.tensor_args[0]]._keys, wrapped
        return ks | REGISTRY.backend_for(as_device(device)).key, args
    include, exclude = STATE.keys
    if (include & ~exclude) & K.MODE:
        # a dispatch mode sees the call before any backend: tensors on several devices are its to resolve
        # (a tracer maps them all to fakes)
        return ks, args
    if op.cross_device:
        # copy_ / _to_copy: the destination (or source) tensor's backend decides
        first = args[op.tensor_args[0]]
        return (ks & ~K.BACKEND_MASK) | (first._keys & K.BACKEND_MASK), args
    return _mixed_devices(op, args, ks)


def _has_protocol_objects(op, args: tuple) -> bool:
    """Whether a tensor argument of `op` is an object (not a Tensor) whose class defines __torch_function__."""
    for i in op.tensor_args:
        if hasattr(type(args[i]), "__torch_function__"):
            return True
    for i in op.tensor_list_args:
        if any(hasattr(type(a), "__torch_function__") for a in args[i] or ()):
            return True
    return False


def _mixed_devices(op, args: tuple, ks: int) -> tuple[int, tuple]:
    """0-dim cpu tensors act as scalars beside tensors on another device; else an error."""
    from ember.core.errors import DeviceMismatchError

    cpu = K.backend_key("cpu")
    tensors = []
    for i in op.tensor_args:
        if isinstance(args[i], Tensor):
            tensors.append((op.arg_names[i], args[i]))
    for i in op.tensor_list_args:
        tensors.extend((f"{op.arg_names[i]}[{j}]", t) for j, t in enumerate(args[i]) if t is not None)
    others = [(n, t) for n, t in tensors if not (t._keys & K.BACKEND_MASK) == cpu]
    scalars = [(n, t) for n, t in tensors if (t._keys & K.BACKEND_MASK) == cpu]
    if others and scalars and all(t.ndim == 0 for _, t in scalars) and op.family in (
            "pointwise", "unary_float", "comparison"):
        new = list(args)
        for i in op.tensor_args:
            a = new[i]
            if isinstance(a, Tensor) and (a._keys & K.BACKEND_MASK) == cpu:
                new[i] = a.item()
        ks = 0
        for _, t in others:
            ks |= t._keys
        bk = ks & K.BACKEND_MASK
        if not bk & (bk - 1):
            return ks, tuple(new)
    first_name, first = tensors[0]
    for name, t in tensors[1:]:
        if t.device != first.device:
            raise DeviceMismatchError(
                f"{op.name}: expected all tensors to be on the same device, but found at least two "
                f"devices, {first.device} (argument '{first_name}') and {t.device} (argument '{name}')")
    raise DeviceMismatchError(f"{op.name}: tensors on several devices")


# Last: the generated module imports `_backend_of_unusual_call` from this one (and `from . import` takes
# a module still being imported when the generated one is imported first).
from ._generated import dispatchers as _dispatchers, unwraps as _unwraps  # noqa: E402
