"""Branches on a tensor's value (`if x.sum() > 0:`): decided when the program is captured, checked when it runs.

A capture runs the program on fake tensors, which have shapes but no values, so `bool(t)` of one cannot
be answered by the trace. Instead of breaking the graph there and running the whole call eagerly, the
compiler answers it: `deciding_branches` installs the frontend's `BOOL_HOOK`, which *probes* the
program (runs it eagerly, on the call's real inputs, up to that same read; the module's buffers and the
random-number state are put back afterwards, so the probe leaves no trace), continues the capture down
the branch the real values take, and records a `check_branch(value, taken)` node in the graph. A later
call runs the captured program while the branch goes the same way; where the check fails it raises
`BranchGuardFailed` before the program has written anything outside itself, and the compiler captures
(once) a variant for the other way, as torch's guards lead to a recompile. Each such branch counts as a
graph break in `explain` and the logs, with the line it comes from; `fullgraph=True` refuses it.

Only a truth value is decided so (`bool(t)`, `if t:`, comparisons in conditions); `.item()`, `.tolist()`
and printing still break the graph, since a number or a list would pin the program to one value.
"""
from __future__ import annotations

import contextlib
import threading
import traceback
from typing import Callable

from .breaks import GraphBreak

__all__ = ["BranchGuardFailed", "check_branch", "deciding_branches"]


class BranchGuardFailed(Exception):
    """A compiled program's branch went the other way than when it was captured: the compiler runs (and
    captures, once) the variant for the way it went now."""


def check_branch(value, taken: bool) -> None:
    """The guard a decided branch leaves in the graph: `value` (a one-element tensor, or a native array in
    a native replay) must be as true as when the program was captured."""
    if bool(value) != taken:
        raise BranchGuardFailed(f"a branch on a tensor's value went {not taken} where it was captured {taken}")


check_branch.side_effectful = True          # (a check: dead-code elimination keeps it)


class _ProbeDone(Exception):
    pass


@contextlib.contextmanager
def deciding_branches(probe_call: Callable[[], object], graph_of: Callable[[], object],
                      node_of: Callable[[object], object], breaks: list):
    """While the block captures the program: each `bool()` of a fake tensor is answered by probing
    `probe_call` (the program on its real inputs) and recorded as a `check_branch` node (in the graph
    `graph_of()` returns, on the node `node_of(fake)` gives); `breaks` gets a GraphBreak per branch."""
    from ember.frontend import tensor as tensor_module

    previous = tensor_module.BOOL_HOOK
    answered: list[bool] = []
    owner = threading.get_ident()           # the hook is process-wide: other threads' reads pass through

    def decide(t) -> bool | None:
        if threading.get_ident() != owner or not _is_fake(t) or _writes_outside(graph_of()):
            return None                     # (a probe would write the inputs once more: a graph break then)
        node = node_of(t)
        if node is None:
            return None
        taken = _probe(probe_call, len(answered))
        answered.append(taken)
        graph_of().call_function(check_branch, (node, taken))
        where, code = _program_line()
        breaks.append(GraphBreak(f"a branch on a tensor's value, decided when captured ({taken}) and checked "
                                 "on every call", where, code))
        return taken

    tensor_module.BOOL_HOOK = decide
    try:
        yield
    finally:
        tensor_module.BOOL_HOOK = previous


def _probe(call: Callable[[], object], k: int) -> bool:
    """The truth of the k-th `bool()` of a tensor when `call` runs eagerly (then stopped), with the random
    state and the buffers `call` may update put back."""
    from ember.frontend import tensor as tensor_module
    from ember.frontend.autograd.grad_mode import no_grad
    from ember.frontend.random import get_rng_state, set_rng_state

    seen: list[bool] = []
    owner = threading.get_ident()

    def count(t) -> bool | None:
        if threading.get_ident() != owner:
            return None
        value = bool(t.item())
        seen.append(value)
        if len(seen) > k:
            raise _ProbeDone
        return value

    state = get_rng_state()
    previous = tensor_module.BOOL_HOOK, tensor_module.ALLOC_HOOK
    with _modes_suspended(), no_grad():          # the probe computes for real: no capture records it
        buffers = [(b, b.clone()) for b in getattr(call, "buffers", lambda: [])()]
        tensor_module.BOOL_HOOK, tensor_module.ALLOC_HOOK = count, None
        try:
            call()
        except _ProbeDone:
            pass
        finally:
            tensor_module.BOOL_HOOK, tensor_module.ALLOC_HOOK = previous
            set_rng_state(state)
            for b, saved in buffers:
                b.copy_(saved)
    if len(seen) <= k:
        raise RuntimeError("ember.compile: the program's branches changed between its capture and its probe")
    return seen[k]


@contextlib.contextmanager
def _modes_suspended():
    """No dispatch mode active in the block (the capture's is put back after it)."""
    from ember.dispatcher import keys as K
    from ember.dispatcher.state import STATE

    saved = list(STATE.modes)
    STATE.modes.clear()
    STATE.include &= ~K.MODE
    try:
        yield
    finally:
        STATE.modes.extend(saved)
        if saved:
            STATE.include |= K.MODE


def _writes_outside(graph) -> bool:
    """Whether the program captured so far writes in place into an input, a parameter or a buffer."""
    from ember.export.trace import view_base

    return any(view_base(n.args[i]).op == "placeholder" for n in graph.nodes if n.op == "call_function"
               for i in getattr(n.target, "mutated", ()))


def _is_fake(t) -> bool:
    """Whether `t` is a capture's fake (data on the meta backend, whatever device it shows)."""
    from ember.dispatcher import keys as K
    from ember.dispatcher.plugins import REGISTRY

    backend = REGISTRY.by_key.get(t._keys & K.BACKEND_MASK)
    return backend is not None and backend.device_type == "meta"


def _program_line() -> tuple[str, str]:
    from ember.utils.program_frames import innermost_program_line

    return innermost_program_line(traceback.walk_stack(None), outermost_first=False) or ("", "")
