"""Decomposing a captured graph after the fact: what a backend has no native kernel for.

The joint capture keeps explicit ops whole in the forward, so autograd records their own derivative
formulas (joint.py). A backend may still lack a kernel for some of them (opencl has few beyond the
primitives), and native replay needs one per node: `decomposed(graph, keep)` re-traces the graph, op by
op in order, under the graph layer's decomposing capture, so every op not in `keep` (the ops with a
native kernel) becomes its explicit kernel's or decomposition's pieces. Values flow as fakes through
the re-trace, so views keep their storage as in the first capture. The backward's formulas are already
fixed: nothing is differentiated differently; the pieces are what the fusion pass then merges.
Placeholders keep their names, in order.
"""
from __future__ import annotations

import operator

from ember.export.capture import DecomposingCaptureMode
from ember.export.fake import labelled, meta_like
from ember.fx import Graph, Node
from ember.fx.node import map_arg

__all__ = ["decomposed"]


class _Unsupported(Exception):
    pass


def decomposed(graph: Graph, keep: dict) -> Graph | None:
    """A new graph computing what `graph` does with every op outside `keep` decomposed (`graph` itself when
    every op is in `keep`), or None when an op cannot be (a tensor made outside any op, say)."""
    if all(node.op != "call_function" or not hasattr(node.target, "kernels") or node.target.name in keep
           for node in graph.nodes):
        return graph
    new = Graph()

    def no_lift(t):
        raise _Unsupported

    mode = DecomposingCaptureMode(new, no_lift, keep)
    value: dict[Node, object] = {}
    numbers: dict[Node, Node] = {}          # a number placeholder (a learning rate read each call) -> its new one
    try:
        for node in graph.nodes:
            if node.op == "placeholder":
                made = new.placeholder(node.name)
                fake = node.meta["val"]
                if not _is_tensor(fake):          # a number read on each call (a learning rate)
                    made.meta["val"] = value[node] = fake
                    numbers[node] = made
                    continue
                meta = meta_like(fake)
                shown = labelled(meta, fake.device)
                made.meta["val"] = shown
                mode.bind(shown, made, meta)
                value[node] = shown
            elif node.op == "output":
                new.output(map_arg(node.args[0], lambda n: mode.node_and_value(value[n])[0]
                                   if _is_tensor(value[n]) else value[n]))
            elif node.target is operator.getitem:
                value[node] = value[node.args[0]][node.args[1]]
            elif hasattr(node.target, "kernels"):
                with mode:
                    value[node] = node.target(*map_arg(node.args, value.__getitem__))
                if any(isinstance(a, Node) and a in numbers for a in node.args):
                    _read_numbers(new, node, numbers)
            else:                                   # a check (check_branch) on a value: recorded as it is
                new.call_function(node.target, map_arg(node.args, lambda n: mode.node_and_value(value[n])[0]))
                value[node] = None
    except _Unsupported:
        return None
    new.eliminate_dead_code()
    new.lint()
    return new


def _read_numbers(new: Graph, node: Node, numbers: dict) -> None:
    """The op `node` kept whole (its recorded copy is the newest node of its target) reads the number
    placeholders it read, not the constants the re-trace saw (a number placeholder read by an op that
    decomposes stays a constant there)."""
    for made in reversed(new.nodes):
        if made.op == "call_function" and made.target is node.target:
            made.args = tuple(numbers.get(a, b) if isinstance(a, Node) and a in numbers else b
                              for a, b in zip(node.args, made.args))
            return


def _is_tensor(v) -> bool:
    from ember.frontend.tensor import Tensor

    return isinstance(v, Tensor)
