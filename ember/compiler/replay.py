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
from .plan import Plan

__all__ = ["straight_line"]


def straight_line(graph_module, example_inputs: list) -> Callable:
    nodes = list(graph_module.graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    output = nodes[-1].args[0]
    plan = Plan(nodes, inputs)
    input_slots = [plan.slot[n] for n in inputs]
    steps = []
    for node in nodes:
        if node.op == "call_function":
            dispatch = getattr(node.target, "dispatch", None)
            call = (lambda *args, _d=dispatch: _d(args)) if dispatch is not None else node.target
            steps.append((call, plan.reader(node.args), plan.slot[node], plan.frees(node),
                          node.meta.get("grad_enabled") is False))
    read_output = plan.reader(tuple(output))

    def run(*values):
        env = [None] * plan.size
        for s, v in zip(input_slots, values):
            env[s] = v
        for call, read, target, frees, grad_off in steps:
            if grad_off and is_grad_enabled():
                with no_grad():
                    env[target] = call(*read(env))
            else:
                env[target] = call(*read(env))
            for s in frees:
                env[s] = None
        return read_output(env)
    return run
