"""The `__torch_function__` protocol for Tensor subclasses (PyTorch's, at ember's op level).

A Tensor subclass that defines `__torch_function__(cls, func, types, args=(), kwargs=None)` sees
every op call that has one of its instances among the tensor arguments, before anything else
runs (modes, autocast, autograd). Its instances carry the TorchFunction dispatch key
(`as_subclass` and `_make_subclass` set it), so plain tensors pay nothing for the protocol:
the dispatcher meets the key only on such instances and then runs `torch_function_kernel`.

`func` is the op's public function (`ember.add` for add.Tensor, also when the program wrote
`a + b` or `a.add(b)`), `types` the overriding classes among the arguments, subclasses first,
`args`/`kwargs` the call's arguments as that function takes them. `Tensor.__torch_function__`,
the default, runs `func` with the protocol off and returns its tensors as the subclass, so a
subclass that only logs and calls `super().__torch_function__(...)` keeps its type through
every op. Choices: calls of Python functions that are not registry ops (`ember.nn.functional`
wrappers, `Tensor.numpy`, `.shape`) reach the protocol as the registry ops they run.
"""
from __future__ import annotations

from typing import Any, Callable

from ember.dispatcher import keys as K
from ember.dispatcher.dispatch import redispatch
from ember.dispatcher.state import STATE

__all__ = ["torch_function_kernel", "default_torch_function", "overrides_torch_function", "public_function",
           "DisableTorchFunctionSubclass", "disabled_torch_function_impl", "handles_torch_function"]


class DisableTorchFunctionSubclass:
    """Within the block, subclasses' `__torch_function__` is not called (what the default does around func)."""

    def __enter__(self):
        include, exclude = STATE.keys
        self._had = exclude & K.TORCH_FUNCTION
        STATE.keys = (include, exclude | K.TORCH_FUNCTION)
        return self

    def __exit__(self, *exc) -> None:
        if not self._had:
            include, exclude = STATE.keys
            STATE.keys = (include, exclude & ~K.TORCH_FUNCTION)


def overrides_torch_function(cls: type) -> bool:
    """Whether instances of `cls` take part in the protocol: any Tensor subclass (the default keeps
    results of its type, as PyTorch's) except those opting out with `disabled_torch_function_impl`
    (Parameter, Buffer: their results are plain tensors, and their calls pay nothing)."""
    from .tensor import Tensor

    if cls is Tensor:
        return False
    impl = getattr(cls.__torch_function__, "__func__", cls.__torch_function__)
    return impl is not disabled_torch_function_impl


def public_function(op) -> Callable:
    """The op's function in ember._generated.functions (an op's overloads share one)."""
    from ember._generated.functions import OP_FUNCTIONS

    return OP_FUNCTIONS[op.name]


def _split(op, args: tuple) -> tuple[tuple, dict]:
    """The call's arguments as the function takes them: positional, then the schema's keyword-only ones."""
    k = op.keyword_only_from
    if k is None:
        return args, {}
    return args[:k], {op.arg_names[i]: args[i] for i in range(k, len(args))}


def _overloaded(op, args: tuple) -> list[type]:
    from .tensor import Tensor

    found: list[type] = []
    values = [args[i] for i in op.tensor_args]
    for i in op.tensor_list_args:
        values.extend(args[i] or ())
    for v in values:
        takes_part = overrides_torch_function(type(v)) if isinstance(v, Tensor) else \
            hasattr(type(v), "__torch_function__")          # a plain object implementing the protocol
        if takes_part and type(v) not in found:
            # subclasses before their bases, as PyTorch orders them
            at = next((j for j, t in enumerate(found) if issubclass(type(v), t)), len(found))
            found.insert(at, type(v))
    return found


def torch_function_kernel(op, below: int, args: tuple):
    """The TorchFunction key's kernel: hand the call to the overriding classes' `__torch_function__`."""
    types = _overloaded(op, args)
    if not types:                           # a plain tensor that inherited the key (a view): run below
        return redispatch(op, below, args)
    func = public_function(op)
    call_args, kwargs = _split(op, args)
    for cls in types:
        result = cls.__torch_function__(func, tuple(types), call_args, kwargs)
        if result is not NotImplemented:
            return result
    names = ", ".join(f"'{t.__module__}.{t.__qualname__}'" for t in types)
    raise TypeError(f"no implementation found for '{getattr(func, '__name__', op.name)}' on types that implement "
                    f"__torch_function__: [{names}]")


def default_torch_function(cls, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
    """Tensor.__torch_function__: run `func` with the protocol off, its tensors returned as `cls`."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        result = func(*args, **(kwargs or {}))
    return _convert(result, cls)


def _convert(value, cls):
    from .tensor import Tensor

    if isinstance(value, Tensor) and not isinstance(value, cls):
        return value.as_subclass(cls)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):     # max(dim)'s (values, indices)
        return type(value)(*[_convert(v, cls) for v in value])
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(v, cls) for v in value)
    return value


def disabled_torch_function_impl(cls, func, types, args=(), kwargs=None):
    """`__torch_function__ = disabled_torch_function_impl`: a subclass opting out (Parameter, Buffer)."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def handles_torch_function(fn: Callable) -> Callable:
    """For a public function written in Python (not one registry op): an argument that is not a Tensor but
    implements `__torch_function__` (a tracer's proxy) gets the call, with this function as `func`, as a
    registry op's function hands it over."""
    import functools

    from .tensor import Tensor

    def protocol_objects(values) -> list[type]:
        found = []
        for v in values:
            for w in (v if isinstance(v, (list, tuple)) else (v,)):
                if not isinstance(w, Tensor) and hasattr(type(w), "__torch_function__") and type(w) not in found:
                    found.append(type(w))
        return found

    @functools.wraps(fn)
    def public(*args, **kwargs):
        types = protocol_objects(args) or (protocol_objects(kwargs.values()) if kwargs else None)
        if not types:
            return fn(*args, **kwargs)
        for cls in types:
            result = cls.__torch_function__(public, tuple(types), args, kwargs)
            if result is not NotImplemented:
                return result
        raise TypeError(f"no implementation found for '{fn.__name__}' on types that implement __torch_function__: "
                        f"{[t.__qualname__ for t in types]}")
    return public
