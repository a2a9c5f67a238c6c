"""The default backend's dispatched path: a captured graph run as a straight line of op calls.

`straight_line(graph_module, example_inputs)` turns the graph into a list of steps, each an op's
dispatch entry with its arguments' positions in one list of values, so a call runs the ops with no
Interpreter, no module calls and no Python-level op wrappers in between; the dispatcher (autograd
included) runs each op as in eager code. A value is dropped after its last reader, so the peak
memory is eager's. `dispatched_runner` does the same for a list of nodes (a half of the joint graph,
under the "aot_eager" backend), with native_runner's signature.
"""
from __future__ import annotations

from typing import Callable

from ember.frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ember.fx import Node
from .plan import Plan

__all__ = ["straight_line", "dispatched_runner"]


def straight_line(graph_module, example_inputs: list) -> Callable:
    nodes = list(graph_module.graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    run = _runner(nodes, inputs, nodes[-1].args[0])
    return lambda *values: run(values)


def dispatched_runner(nodes: list, inputs: list, outputs, key=None, device=None, wrap=None,
                      consume_inputs: bool = False) -> Callable:
    """The call nodes of `nodes` run in order through the dispatcher: a function of one value (a Tensor) per
    node of `inputs` returning `outputs`' values, all Tensors (`key`, `device`, `wrap`: native_runner's,
    unused: nothing here is a native array). `consume_inputs`: as native_runner's."""
    run = _runner(nodes, inputs, outputs, consume_inputs)
    return run if consume_inputs else lambda *values: run(values)


def _runner(nodes: list, inputs: list, output, consume_inputs: bool = False) -> Callable:
    plan = Plan(nodes, ([] if consume_inputs else list(inputs)) + [o for o in output if isinstance(o, Node)])
    input_slots = [plan.slot[n] for n in inputs]
    given = set(inputs)
    calls = [n for n in nodes if n.op == "call_function" and n not in given]
    steps = []
    for node, frees in zip(calls, plan.frees([(n,) for n in calls])):
        dispatch = getattr(node.target, "dispatch", None)
        call = (lambda *args, _d=dispatch: _d(args)) if dispatch is not None else node.target
        steps.append((call, plan.reader(node.args), plan.slot[node], frees, node.meta.get("grad_enabled") is False))
    read_output = plan.reader(tuple(output))

    def run(values):
        env = [None] * plan.size
        for s, v in zip(input_slots, values):
            env[s] = v
        if consume_inputs:
            values.clear()
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
