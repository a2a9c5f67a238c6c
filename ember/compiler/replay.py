"""The default backend: a captured graph run as a straight line of op calls.

`straight_line(graph_module, example_inputs)` turns the graph into a list of steps, each an op's
dispatch entry with its arguments' positions in one list of values, so a call runs the ops with no
Interpreter, no module calls and no Python-level op wrappers in between; the dispatcher (autograd
included) runs each op as in eager code. A value is dropped after its last reader, so the peak
memory is eager's.
"""
from __future__ import annotations

from typing import Callable

from ember.frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ember.fx import Node

from .native import nodes_in

__all__ = ["straight_line"]


def straight_line(graph_module, example_inputs: list) -> Callable:
    nodes = list(graph_module.graph.nodes)
    slot = {}
    inputs = 0
    for node in nodes:
        if node.op == "placeholder":
            slot[node] = inputs
            inputs += 1
    for node in nodes:
        if node.op != "placeholder":
            slot[node] = len(slot)
    last_use = {}
    for node in nodes:
        for used in nodes_in(node.args):
            last_use[used] = node
    steps, output = [], None
    for node in nodes:
        if node.op == "call_function":
            frees = tuple(slot[u] for u in nodes_in(node.args) if last_use.get(u) is node)
            steps.append(_step(node, slot, frees))
        elif node.op == "output":
            output = node.args[0]
    size = len(slot)
    out_template, out_refs = _template(output, slot)

    def run(*values):
        env = list(values) + [None] * (size - len(values))
        for call, template, refs, target_slot, frees, grad_off in steps:
            args = list(template)
            for position, s in refs:
                args[position] = env[s] if s >= 0 else _resolve(args[position], env)
            if grad_off and is_grad_enabled():
                with no_grad():
                    env[target_slot] = call(*args)
            else:
                env[target_slot] = call(*args)
            for s in frees:
                env[s] = None
        result = list(out_template)
        for position, s in out_refs:
            result[position] = env[s] if s >= 0 else _resolve(result[position], env)
        return tuple(result)
    return run


def _step(node: Node, slot: dict, frees: tuple) -> tuple:
    template, refs = _template(node.args, slot)
    dispatch = getattr(node.target, "dispatch", None)
    call = (lambda *args, _d=dispatch: _d(args)) if dispatch is not None else node.target
    return call, template, refs, slot[node], frees, node.meta.get("grad_enabled") is False


def _template(args, slot: dict) -> tuple[tuple, tuple]:
    """(the arguments with nodes left in place, ((position, slot), ...)): slot -1 marks a list or tuple
    holding nodes, resolved when the step runs."""
    refs = []
    for i, a in enumerate(args):
        if isinstance(a, Node):
            refs.append((i, slot[a]))
        elif isinstance(a, (list, tuple)) and any(True for _ in nodes_in(a)):
            refs.append((i, -1))
    template = tuple(_slots_of(a, slot) if isinstance(a, (list, tuple)) else a for a in args)
    return template, tuple(refs)


def _slots_of(value, slot: dict):
    """A list or tuple with each node replaced by `_Slot(n)` (read when the step runs)."""
    return type(value)(_Slot(slot[v]) if isinstance(v, Node) else _slots_of(v, slot) if isinstance(v, (list, tuple))
                       else v for v in value)


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _resolve(value, env: list):
    return type(value)(env[v.index] if isinstance(v, _Slot) else _resolve(v, env) if isinstance(v, (list, tuple))
                       else v for v in value)
