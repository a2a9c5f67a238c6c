"""Capturing a compiled callable: the graph layer's trace, and what makes a capture a graph break.

Anything the trace cannot follow is a graph break too: the call runs eagerly, so an error that is
the program's own is raised as eager code raises it. A module is traced as `ember.export` traces it (its parameters and buffers lifted, read from the
module on each call). A function is traced as the forward of a module holding nothing: tensors it
reaches outside its arguments become constants of the graph, read by reference. That is safe for
parameters (updated in place, never replaced) and for tensors the function makes itself, but not
for any other tensor read from outside (a gradient, a global that is reassigned): the capture
cannot tell where the function will find it next time, so it is a graph break, run eagerly.
"""
from __future__ import annotations

import contextlib

from ember.export.graph_signature import InputKind
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

from .breaks import GraphBreak, program_line

__all__ = ["capture", "CaptureBreak"]


class CaptureBreak(Exception):
    """Raised by `capture` when the program cannot be captured whole; `.graph_break` says why."""

    def __init__(self, graph_break: GraphBreak) -> None:
        super().__init__(str(graph_break))
        self.graph_break = graph_break


class _FunctionModule(Module):
    """A function as a module's forward, for the trace (it holds no state)."""

    def __init__(self, fn) -> None:
        super().__init__()
        object.__setattr__(self, "_fn", fn)

    def forward(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


def capture(fn, module: Module | None, args: tuple, kwargs: dict, dims: list | None, mode_class=None,
            branches: list | None = None):
    """The ExportedProgram of `module(*args, **kwargs)` (or of the function `fn`), dynamic in `dims`,
    captured under `mode_class` (the graph layer's CaptureMode by default, or a factory of modes). With
    `branches` (a list), a branch on a tensor's truth is decided and checked (branches.py) instead of
    breaking the graph, and gets a GraphBreak appended to the list."""
    from ember.export.capture import CaptureMode
    from ember.export.symbolic import SpecializedError
    from ember.export.trace import DataDependentError, trace_program

    target = module if module is not None else _FunctionModule(fn)
    made: set[int] = set()
    modes: list = []

    def make_mode(graph, lift, **options):
        modes.append((mode_class or CaptureMode)(graph, lift, **options))
        return modes[-1]
    try:
        with _storages_made(made), _no_optimizer_steps(), _branches(target, args, kwargs, modes, branches):
            program = trace_program(target, args, kwargs, make_mode, dims=dims)
    except SpecializedError:                # a dynamic dimension the program fixes: the caller specialises it
        raise
    except DataDependentError as exc:
        where, code = program_line(exc)
        raise CaptureBreak(GraphBreak("the program reads a tensor's values (.item(), bool(), .tolist(), "
                                      "printing)", where, code)) from None
    except Exception as exc:        # anything else the trace cannot follow (`loss.backward()` inside): eager,
        where, code = program_line(exc)     # where a real error in the program is raised as it is
        raise CaptureBreak(GraphBreak(f"the program cannot be captured ({type(exc).__name__}: {exc})", where,
                                      code)) from None
    for spec in program.graph_signature.input_specs:
        if spec.kind is InputKind.CONSTANT_TENSOR:
            t = program.constants[spec.target]
            if not isinstance(t, Parameter) and id(t._storage) not in made:
                raise CaptureBreak(GraphBreak("the program reads a tensor from outside its inputs (a gradient, a "
                                              f"global, an attribute; shape {list(t.shape)}): pass it as an input",
                                              ""))
    return program


def _branches(target: Module, args: tuple, kwargs: dict, modes: list, breaks: list | None):
    """deciding_branches for the capture of `target` (nothing when `breaks` is None)."""
    if breaks is None:
        return contextlib.nullcontext()
    from .branches import deciding_branches

    def probe():
        return target(*args, **kwargs)
    probe.buffers = target.buffers

    def node_of(t):
        try:
            return modes[-1].node_and_value(t)[0]
        except Exception:                   # not a value of the capture
            return None
    return deciding_branches(probe, lambda: modes[-1].graph, node_of, breaks)


class OptimizerStepInCapture(RuntimeError):
    """An optimizer's step was called while a program was captured."""


@contextlib.contextmanager
def _no_optimizer_steps():
    """An optimizer stepping inside the capture stops it before the step runs: the capture runs on fakes, so
    the optimizer would keep fake state (its first step makes it). A graph break, after which the update is
    recorded as it runs (step.py)."""
    import threading

    from ember.optim.optimizer import register_optimizer_step_pre_hook

    me = threading.get_ident()

    def refuse(optimizer, args, kwargs):
        if threading.get_ident() == me:         # (another thread's optimizers step as usual)
            raise OptimizerStepInCapture(f"{type(optimizer).__name__}.step() is called inside the program")
    handle = register_optimizer_step_pre_hook(refuse)
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def _storages_made(made: set):
    """Collect the ids of the storages made while the block runs (ember.memory's allocation hook, chained)."""
    from ember.frontend import tensor as tensor_module

    previous = tensor_module.ALLOC_HOOK

    def hook(storage) -> None:
        made.add(id(storage))
        if previous is not None:
            previous(storage)

    tensor_module.ALLOC_HOOK = hook
    try:
        yield
    finally:
        tensor_module.ALLOC_HOOK = previous
