"""ember.jit: torch.jit's API, on ember.export's graphs (for the code that calls it).

* `trace(module_or_function, example_inputs)` captures the program with `ember.export.export`
  and returns a `TracedModule`: callable, with `.graph`, `.code`, `.save(path)`;
  `save(traced, path)` and `load(path)` use `ember.export`'s program file (one file, no pickle,
  runs without the model's source).
* `script(obj)` returns `obj` itself: ember runs Python eagerly, so a scripted function or module
  behaves as its source says (the `@torch.jit.script` helpers of real code keep working).
  Saving one needs a trace, which needs example inputs: `save` says so and points to `trace`.
* `ignore`, `unused`, `export` mark a function and return it; `annotate(type, value)` returns the
  value; `is_scripting()` is always False; `is_tracing()` is True while `trace` runs the program.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

from ember.export import ExportedProgram
from ember.export import export as _export
from ember.export import load as _load_program
from ember.export import save as _save_program
from ember.export.exported_program import UnliftedModule
from ember.nn.modules.module import Module

__all__ = ["trace", "script", "save", "load", "TracedModule", "ignore", "unused", "export", "annotate",
           "is_scripting", "is_tracing"]

_TRACING = threading.local()


def is_scripting() -> bool:
    """False: ember never compiles TorchScript; code guarded by `if not is_scripting()` runs."""
    return False


def is_tracing() -> bool:
    """Whether `trace` is running the program on this thread."""
    return getattr(_TRACING, "depth", 0) > 0


class TracedModule(UnliftedModule):
    """A traced program as a module: call it like the original (same inputs, same outputs, the same
    parameter and buffer names)."""

    def __init__(self, program: ExportedProgram, name: str = "TracedModule") -> None:
        super().__init__(program)
        object.__setattr__(self, "_name", name)

    @property
    def graph(self):
        return self._program.graph

    @property
    def code(self) -> str:
        return self._program.graph_module.code

    @property
    def program(self) -> ExportedProgram:
        return self._program

    def save(self, f) -> None:
        save(self, f)

    def extra_repr(self) -> str:
        return f"original_name={self._name}"


class _Function(Module):
    """A function traced as a module with no parameters."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        object.__setattr__(self, "_fn", fn)

    def forward(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


def trace(func: Module | Callable, example_inputs: Any = None, *, example_kwarg_inputs: dict | None = None,
          check_trace: bool = True, strict: bool = True, **unused) -> TracedModule:
    """Trace `func(*example_inputs)` into a TracedModule (a tensor or a tuple of them as inputs).
    `check_trace` and `strict` are accepted for torch's signature: the trace is exact by construction."""
    if example_inputs is None and example_kwarg_inputs is None:
        raise ValueError("ember.jit.trace: give example_inputs (a tensor or a tuple of tensors) or "
                         "example_kwarg_inputs")
    args = () if example_inputs is None else example_inputs if isinstance(example_inputs, tuple) else \
        (example_inputs,)
    module = func if isinstance(func, Module) else _Function(func)
    name = type(func).__name__ if isinstance(func, Module) else getattr(func, "__name__", "function")
    _TRACING.depth = getattr(_TRACING, "depth", 0) + 1
    try:
        program = _export(module, args, example_kwarg_inputs)
    finally:
        _TRACING.depth -= 1
    return TracedModule(program, name)


def script(obj: Any = None, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None):
    """`obj` itself, marked as scripted (ember runs it eagerly, as its Python says)."""
    if obj is None:
        return script
    try:
        obj._ember_scripted = True
    except (AttributeError, TypeError):
        pass
    return obj


def save(m: Any, f, _extra_files: dict | None = None) -> None:
    """Save a traced module (the program file of ember.export.save)."""
    if isinstance(m, TracedModule):
        _save_program(m.program, f)
        return
    if isinstance(m, ExportedProgram):
        _save_program(m, f)
        return
    what = "a scripted module" if getattr(m, "_ember_scripted", False) else f"a {type(m).__name__}"
    raise RuntimeError(f"ember.jit.save: cannot save {what}: ember saves traced programs, and tracing needs example "
                       "inputs; use ember.jit.trace(module, example_inputs) and save what it returns")


def load(f, map_location: Any = None, _extra_files: dict | None = None) -> TracedModule:
    """Load a module saved by `save` (or `ember.export.save`); `map_location` is not supported yet: a
    program runs on the device it was traced for."""
    if map_location is not None:
        raise NotImplementedError("ember.jit.load: map_location is not supported yet; the program runs on the "
                                  "device it was traced for")
    name = os.path.basename(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "TracedModule"
    return TracedModule(_load_program(f), name)


def _mark(attribute: str) -> Callable:
    def decorator(fn=None, **kwargs):
        if fn is None:                       # used with arguments: @ignore(drop=True)
            return lambda f: decorator(f)
        setattr(fn, attribute, True)
        return fn
    return decorator


ignore = _mark("_ember_jit_ignore")
unused = _mark("_ember_jit_unused")
export = _mark("_ember_jit_export")


def annotate(the_type: Any, the_value: Any) -> Any:
    """`the_value` (TorchScript reads the type; eager Python does not need it)."""
    return the_value
