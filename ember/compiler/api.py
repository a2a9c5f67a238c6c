"""`compile(model, ...)` with torch.compile's signature and checks; the wrappers it returns."""
from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["compile", "CompiledFunction"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
DEFAULT_RECOMPILE_LIMIT = 8          # torch._dynamo.config.recompile_limit


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: str | Callable = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, name: str | None = None, disable: bool = False,
            recompile_limit: int | None = None, isolate_recompiles: bool = False,
            shapes_spec: Any = None) -> Callable:
    """Compile `model` (an nn.Module or a callable): see the package docstring. Without `model`, a
    decorator. `backend`: "inductor" (torch's default name) or "ember" (the same), "eager", or a
    callable `backend(graph_module, example_inputs) -> callable`; `mode` and `options` are checked as
    torch checks them; `disable=True` returns `model` itself."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    recompile_limit=DEFAULT_RECOMPILE_LIMIT if recompile_limit is None else recompile_limit)
    if model is None:
        def decorate(model: Callable) -> Callable:
            if model is None:
                raise RuntimeError("Model can't be None")
            return _wrap(model, settings, disable)
        return decorate
    return _wrap(model, settings, disable)


def _wrap(model: Callable, settings: dict, disable: bool) -> Callable:
    """The OptimizedModule or CompiledFunction of `model` (`model` itself when disabled)."""
    if not callable(model):
        raise RuntimeError(f"ember.compile(): expected a callable model or function, got {type(model).__name__}")
    if disable:
        return model
    from .backends import lookup_backend

    lookup_backend(settings["backend"])      # an unknown backend is an error now, not at the first call
    from ember.nn.modules.module import Module

    if isinstance(model, Module):
        from .optimized_module import OptimizedModule

        return OptimizedModule(model, settings)
    return CompiledFunction(model, settings)


class CompiledFunction:
    """A compiled function: called like the function (`__wrapped__` is it); compiles on first call."""

    def __init__(self, fn: Callable, settings: dict) -> None:
        from .compiled import CompiledCode

        functools.update_wrapper(self, fn)
        self._code = CompiledCode(fn, None, settings)

    def __call__(self, *args, **kwargs):
        return self._code(args, kwargs)

    def __get__(self, obj, objtype=None):
        # a compiled function defined in a class body binds as a method does
        return self if obj is None else functools.partial(self, obj)
