"""What both replays (replay.py, native.py) build from a graph: a slot per value, when to drop each value,
and how to read a node's arguments from the list of values.

A replay keeps one list of values, a slot per node. `Plan(nodes, kept)` numbers the slots; `frees(steps)`
finds each value's last reader among the steps (read through ember.fx's `Node.all_input_nodes`) and says
which slots each step frees after it runs, so a value is dropped when eager code would drop it;
`kept` values (inputs, outputs) are never dropped. `reader(args)` is a function reading a node's
arguments from the list: nodes by slot, lists and tuples holding nodes rebuilt, anything else as is.
"""
from __future__ import annotations

import operator
from typing import Callable

from ember.fx import Node
from ember.fx.node import map_arg

__all__ = ["Plan", "holds_node"]

_SLOT, _NESTED, _CONSTANT = 0, 1, 2


class Plan:
    def __init__(self, nodes: list, kept=()) -> None:
        self.slot = {n: i for i, n in enumerate(nodes)}
        self.size = len(nodes)
        self._kept = set(kept)

    def frees(self, steps: list) -> list[tuple[int, ...]]:
        """Per step of a schedule (the nodes each step runs: one for an op, several for a fused group, in
        the order the steps run), the slots to drop once it has run: the values it was the last to read."""
        last: dict = {}
        for i, members in enumerate(steps):
            for m in members:
                for used in m.all_input_nodes:
                    last[used] = i
        return [tuple(sorted({self.slot[u] for m in members for u in m.all_input_nodes
                              if last.get(u) == i and u not in self._kept and u not in members}))
                for i, members in enumerate(steps)]

    def reader(self, args) -> Callable:
        """A function of the values list returning `args` with every node read from its slot."""
        slot = self.slot
        parts = tuple((_SLOT, slot[a]) if isinstance(a, Node) else
                      (_NESTED, self.reader(a)) if isinstance(a, (list, tuple)) and holds_node(a) else
                      (_CONSTANT, a) for a in args)
        kind = list if isinstance(args, list) else tuple
        if kind is tuple and len(parts) > 1 and all(mode == _SLOT for mode, _ in parts):
            return operator.itemgetter(*(v for _, v in parts))      # the common call: nodes only, read in C
        if kind is tuple and all(mode != _NESTED for mode, _ in parts):
            template = [v if mode == _CONSTANT else None for mode, v in parts]
            slots = [(i, v) for i, (mode, v) in enumerate(parts) if mode == _SLOT]

            def read_flat(env):
                values = template.copy()
                for i, s in slots:
                    values[i] = env[s]
                return tuple(values)
            return read_flat

        def read(env):
            return kind(env[v] if mode == _SLOT else v(env) if mode == _NESTED else v for mode, v in parts)
        return read


def holds_node(value) -> bool:
    """Whether `value` (an argument: a node, or lists, tuples and dicts of them) holds a node."""
    found: list = []
    map_arg(value, found.append)
    return bool(found)
