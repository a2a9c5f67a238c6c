"""The capture mode: every op call of a traced program becomes a graph node.

`CaptureMode` is a `DispatchMode` (the dispatcher's Mode key, the only hook the graph layer
uses): it sees each registry op as the program calls it, before autocast and autograd, with
every argument in schema order. It maps each tensor argument to the node that made it (a
placeholder for an input, parameter, buffer or constant; an op's node otherwise) and to its meta
value (fake.py), runs the op on the meta values to get the results' shapes and dtypes, and
records a `call_function` node whose target is the op itself. The program gets fakes back,
labelled with the device the real result would be on. A tensor the graph has not seen (made in
Python outside an op, e.g. `ember.tensor([...])` inside forward) becomes a lifted constant.
Results of ops with several outputs are read through `operator.getitem` nodes, as in torch.fx.
An op writing an argument in place returns that argument, as in eager code; later readers keep
reading the argument's node (the write happens in place when the graph runs).
"""
from __future__ import annotations

import operator
from typing import Callable

from ember.core.device import device as _device
from ember.core.symint import SymInt
from ember.dispatcher import ALL_OPS
from ember.dispatcher import keys as K
from ember.dispatcher.state import STATE
from ember.frontend.mode import DispatchMode
from ember.frontend.tensor import Tensor, holds_data
from ember.fx import Graph, Node

from .fake import labelled
from .size_nodes import size_node

__all__ = ["CaptureMode"]

_META = _device("meta")
_CPU = _device("cpu")


class CaptureMode(DispatchMode):
    """Record the ops a program calls into `graph`.

    `known`: {id(tensor): (node, meta value)} for every tensor the program may pass to an op: its
    inputs' fakes, parameters and buffers, then each op's results; `lift(tensor)` returns (node,
    meta value) for a tensor met for the first time (a constant)."""

    def __init__(self, graph: Graph, lift: Callable) -> None:
        self.graph = graph
        self.known: dict[int, tuple[Node, Tensor]] = {}
        self.lift = lift
        self._by_data: dict[int, tuple[Node, Tensor]] = {}    # id(native array) -> the value first seen over it
        self._alive: list[Tensor] = []      # tensors mapped by id stay alive while tracing (ids stay unique)
        self.module_path = ""               # the module running (trace.py keeps it): each node's meta["nn_module"]
        self.size_sources: dict = {}        # {dynamic dimension name: (placeholder, dimension)} (size_nodes.py)
        self._size_nodes: dict = {}         # {size expression: the node computing it}

    def bind(self, t: Tensor, node: Node, value: Tensor) -> None:
        """`t` (an input's fake, a parameter, a buffer, an op's result) is the value `node` makes."""
        self.known[id(t)] = (node, value)
        self._by_data.setdefault(id(t._data), (node, value))
        self._alive += (t, value)

    def node_and_value(self, t: Tensor) -> tuple[Node, Tensor]:
        found = self.known.get(id(t))
        if found is None:
            aliased = self._by_data.get(id(t._data))
            if aliased is not None:
                # made outside any op over a traced value's array (t.detach(), t.data): an alias of it, cut
                # from autograd when `t` is (a detach)
                node = self.graph.call_function(ALL_OPS["alias"], (aliased[0],))
                node.meta["val"] = t
                if not t.requires_grad:
                    node.meta["grad_enabled"] = False
                found = (node, aliased[1])
            elif not holds_data(t) and t.device.type != "meta":
                raise RuntimeError("export: a traced value reached an op by a path the capture does not see (an "
                                   "in-place resize or a .data assignment); use an op instead")
            else:
                found = self.lift(t)
            self.bind(t, *found)
        return found

    def size(self, value: SymInt):
        """The node computing the symbolic size `value` (sym_size and operator nodes, made once)."""
        return size_node(self.graph, value, self.size_sources, self._size_nodes)

    def graph_value(self, value):
        """What the graph reads for a program output or argument `value` (a tensor's node, a size's node)."""
        if isinstance(value, Tensor):
            return self.node_and_value(value)[0]
        return self.size(value) if isinstance(value, SymInt) else value

    def finish(self, outputs: list) -> tuple:
        """Outputs to add after the program's `outputs` (its flattened results), recorded while the mode is
        still active: none here; the compiler's joint capture adds the gradients."""
        return ()

    def _convert(self, value):
        """(the graph argument, the meta argument) of one op argument."""
        if isinstance(value, Tensor):
            return self.node_and_value(value)
        if isinstance(value, SymInt):
            return self.size(value), value
        if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, SymInt)) for v in value):
            pairs = [self._convert(v) for v in value]
            return type(value)(p[0] for p in pairs), type(value)(p[1] for p in pairs)
        return value, value

    def __ember_dispatch__(self, op, args: tuple):
        graph_args, meta_args = [], []
        for a in args:
            g, m = self._convert(a)
            graph_args.append(g)
            meta_args.append(m)
        label = _result_device(op, args)
        if op.device_arg is not None:
            meta_args[op.device_arg] = _META
        result = op(*meta_args)
        node = self.graph.call_function(op, tuple(graph_args))
        node.meta["nn_module"] = self.module_path
        if STATE.keys[1] & K.AUTOGRAD:          # called under no_grad: the program runs it so too
            node.meta["grad_enabled"] = False
        originals = {id(m): a for m, a in zip(meta_args, args) if isinstance(m, Tensor)}
        if isinstance(result, Tensor):
            return self._fake(node, result, label, originals)
        if isinstance(result, (tuple, list)):
            fakes = []
            for i, r in enumerate(result):
                if isinstance(r, Tensor):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    r = self._fake(item, r, label, originals)
                fakes.append(r)
            node.meta["val"] = tuple(fakes)
            return type(result)(fakes)
        node.meta["val"] = result
        return result

    def _fake(self, node: Node, value: Tensor, label, originals: dict) -> Tensor:
        """The tensor the program gets for `value`, the result read at `node`."""
        if id(value) in originals:              # an in-place op returns the argument it wrote
            fake = originals[id(value)]
            node.meta["val"] = fake
            return fake
        fake = labelled(value, label) if label is not None else value
        node.meta["val"] = fake
        self.bind(fake, node, value)
        return fake


def _result_device(op, args: tuple):
    """The device the op's results would be on: its device argument, else its first tensor's."""
    if op.device_arg is not None and args[op.device_arg] is not None:
        return _device(args[op.device_arg])
    for a in args:
        if isinstance(a, Tensor):
            return a._device
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    return b._device
    return _CPU if op.device_arg is not None else None


class DecomposingCaptureMode(CaptureMode):
    """Record primitives only: a call of any other op runs its explicit kernel (or its decomposition), as a
    backend without a kernel for it would, with the mode still active: the ops that calls are recorded
    (and decomposed in turn).

    `table`: {op name: function} to use instead of an op's own decomposition, or None for an op to
    keep as it is."""

    def __init__(self, graph: Graph, lift: Callable, table: dict | None = None) -> None:
        super().__init__(graph, lift)
        self.table = dict(table or {})

    def __ember_dispatch__(self, op, args: tuple):
        if op.name in self.table:
            fn = self.table[op.name]
        else:
            fn = None if op.impl == "primitive" else (op.explicit or op.decomposition)
        if fn is None:
            return super().__ember_dispatch__(op, args)
        with self:
            return fn(*args)
