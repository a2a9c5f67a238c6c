"""Compiler backends: what turns a captured graph into the callable that runs it.

A backend is `backend(graph_module, example_inputs) -> callable(*inputs) -> outputs`, as in torch:
`graph_module` is the captured program's graph (an ember.fx GraphModule whose placeholders are the
lifted state, then the flattened user inputs) and `example_inputs` the values of the first call.
Named backends: "eager" interprets the graph node by node (ember.fx's Interpreter); "aot_eager" runs
the joint forward+backward graph (joint.py) op by op through the dispatcher, and a program without
autograd as a straight line of op calls; "inductor" and "ember" (the default names) replay programs
natively with fused kernels (compiled.py: native.py, joint.py, fusion.py) and run any other as a
straight line of op calls (replay.py). So a difference between backends bisects a failure: eager vs
aot_eager is the capture of the backward, aot_eager vs ember is native replay and code generation. A
package adds a named backend with an entry point in the group `ember.compile_backends`.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["lookup_backend", "list_backends", "eager", "straight_line"]


def eager(graph_module, example_inputs: list) -> Callable:
    """Run the graph node by node (a node called under no_grad runs under no_grad again)."""
    from ember.export.exported_program import ProgramInterpreter

    interpreter = ProgramInterpreter(graph_module)
    return interpreter.run


def straight_line(graph_module, example_inputs: list) -> Callable:
    """The default backend: the graph as a straight line of op calls (replay.py)."""
    from .replay import straight_line as build

    return build(graph_module, example_inputs)


_NAMED = {"eager": eager, "aot_eager": straight_line, "inductor": straight_line, "ember": straight_line}


def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group="ember.compile_backends")}


def list_backends() -> list[str]:
    """The names `compile(backend=...)` accepts."""
    return sorted(set(_NAMED) | set(_entry_points()))


def lookup_backend(backend) -> Callable:
    """The backend callable for `backend` (a name or a callable); an unknown name is a RuntimeError."""
    if callable(backend):
        return backend
    if backend in _NAMED:
        return _NAMED[backend]
    found = _entry_points().get(backend) if isinstance(backend, str) else None
    if found is None:
        raise RuntimeError(f"Invalid backend: {backend!r}, see `ember.compiler.backends.list_backends()` for "
                           "available backends.")
    return found.load()
