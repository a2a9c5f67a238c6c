"""`ember.compile`: accepted with torch.compile's signature; for now it returns the model unchanged.

    model = ember.compile(model)                      # the same module object
    @ember.compile                                    # the same function
    @ember.compile(mode="max-autotune")               # a decorator returning the function as is

Ember has no graph compiler yet: programs written for torch.compile run, eagerly, with the
same results. The arguments are still checked as torch checks them (an unknown `mode`, or
`mode` together with `options`, is an error), so a typo is not silently accepted. Unlike
torch, a compiled nn.Module is the module itself, not an OptimizedModule wrapper, so its
state_dict keys carry no `_orig_mod.` prefix.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["compile"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: str | Callable | None = None, mode: str | None = None,
            options: dict[str, Any] | None = None, name: str | None = None, disable: bool = False,
            recompile_limit: int | None = None, isolate_recompiles: bool = False,
            shapes_spec: Any = None) -> Callable:
    """Identity for now: returns `model` (or, without one, a decorator that returns its argument)."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if model is None:
        def fn(model: Callable) -> Callable:
            if model is None:
                raise RuntimeError("Model can't be None")
            return model

        return fn
    if not callable(model):
        raise RuntimeError(f"ember.compile(): expected a callable model or function, got {type(model).__name__}")
    return model
