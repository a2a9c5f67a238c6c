"""Recording a call in the autograd graph: the op's backward node, its edges, what it saves.

`recorder_for(op)` returns `record(args, out)` for one op, written out for the op's differentiable
argument positions (as `collections.namedtuple` writes a class from a template): no loop over the
positions, no lists to append to, one block per argument. Recording is about half of a small op's
interpreter work with grad, and the written-out form does it in about half the steps of a loop.

Per call, `record` makes a node of `op.backward_cls` with

* `next_edges`: per differentiable input, the edge its gradient flows along (a leaf's accumulator,
  the grad_fn of an op result, `edge_of` for a view, whose base may have moved on), None when it
  needs no gradient; a `Tensor[]` argument contributes one entry per tensor;
* `input_meta`: (shape, dtype, device) of those inputs, which the engine conforms gradients to;
* `needs`: per differentiable argument, whether its gradient is needed (the formulas skip the others),

lets the node save what its formulas read, and attaches it to the floating-point outputs (only the
first with `first_output_only`). No node is made when no input needs a gradient.
"""
from __future__ import annotations

import traceback
from typing import Callable

from ember.dispatcher import keys as K
from ember.dispatcher.state import ANOMALY_THREADS, STATE
from ember.frontend.tensor import AutogradMeta, Tensor

from .graph import accumulator_of, edge_of, next_sequence_number

_RECORDERS: dict = {}       # op -> its record function (ops live for the process)


def recorder_for(op) -> Callable[[tuple, object], None]:
    """`record(args, out)` for `op` (made on first use and kept)."""
    fn = _RECORDERS.get(op)
    if fn is None:
        fn = _RECORDERS[op] = _write_recorder(op)
    return fn


# One differentiable Tensor argument at position {i}: its edge e{k}, meta m{k} and need n{k}.
_TENSOR_ARG = """\
    a = args[{i}]
    if isinstance(a, Tensor) and a._ag is not None:
        ag = a._ag
        fn = ag.grad_fn
        if fn is None:                              # a leaf: its accumulator (accumulator_of's hit inlined)
            acc = a.__dict__.get("_grad_accumulator")
            e{k} = (acc if acc is not None and acc.ag is ag else accumulator_of(a), 0)
        elif a._base is None:
            e{k} = (fn, ag.output_nr)           # an op result (edge_of's common case)
        else:
            e{k} = edge_of(a)                   # a view: its base may have moved on
        m{k} = (a._data.shape, a._dtype, a._device)
        n{k} = True
    else:                                           # no history, or a Python number in a Tensor argument
        e{k} = m{k} = None
        n{k} = False
"""

# A differentiable Tensor[] argument at position {i}: tuples e{k}, m{k} (an entry per tensor) and one need.
_TENSOR_LIST_ARG = """\
    edges, metas, n{k} = [], [], False
    for t in args[{i}]:
        if t._ag is not None:
            edges.append(edge_of(t))
            metas.append((t._data.shape, t._dtype, t._device))
            n{k} = True
        else:
            edges.append(None)
            metas.append(None)
    e{k}, m{k} = tuple(edges), tuple(metas)
"""

# The node, once some input needs a gradient (`{edges}` etc. are the tuples of the blocks above).
_NODE = """\
    if not ({any_need}):
        return
    # Node.__init__'s stores, inlined (generated nodes define no __init__)
    node = new_object(op.backward_cls)
    node.next_edges = {edges}
    node.input_meta = {metas}
    node.seq = next_seq()
    node.needs = {needs}
    if ANOMALY_THREADS and STATE.anomaly:
        node.anomaly_trace = "".join(traceback.format_stack()[:-3])     # from the op's caller
"""

_ONE_OUTPUT = """\
    node.save(args, (out,))
    if out._dtype.is_floating_point:            # AutogradMeta.__init__'s stores, inlined
        meta = out._ag = new_object(AutogradMeta)
        meta.grad_fn = node
        meta.output_nr = 0
        out._keys |= AUTOGRAD
    base = out._base
"""

_OUTPUTS = """\
    node.save(args, out)
    for k, o in enumerate(out):
        if o._dtype.is_floating_point{first_only}:
            meta = o._ag = new_object(AutogradMeta)
            meta.grad_fn = node
            meta.output_nr = k
            o._keys |= AUTOGRAD
    base = out[0]._base
"""

_VIEW = """\
    if base is not None:
        # a view: remember which history of its base it was derived from (see graph.edge_of)
        node._view_of = base._ag.grad_fn if base._ag is not None else None
"""


def recorder_source(op) -> str:
    """The source of `op`'s record function (see the module docstring)."""
    lists = set(op.tensor_list_args)
    lines = ["def record(args, out):"]
    for k, i in enumerate(op.differentiable):
        lines.append((_TENSOR_LIST_ARG if i in lists else _TENSOR_ARG).format(i=i, k=k))
    is_list = [i in lists for i in op.differentiable]
    needs = [f"n{k}" for k in range(len(is_list))]
    lines.append(_NODE.format(any_need=" or ".join(needs) or "False", edges=_concat("e", is_list),
                              metas=_concat("m", is_list), needs=_tuple_display(needs)))
    if op.n_outputs == 1:
        lines.append(_ONE_OUTPUT)
    else:
        lines.append(_OUTPUTS.format(first_only=" and not k" if op.first_output_only else ""))
    lines.append(_VIEW)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _tuple_display(names: list[str]) -> str:
    return "(" + "".join(f"{x}, " for x in names) + ")"


def _concat(prefix: str, is_list: list[bool]) -> str:
    """The expression of a node's per-input tuple: one display of the Tensor arguments' values, joined
    with the tuples a Tensor[] argument made (`(e0, e1, )`, `e0 + (e1, )`)."""
    parts, run = [], []
    for k, listed in enumerate(is_list):
        if listed:
            if run:
                parts.append(_tuple_display(run))
                run = []
            parts.append(f"{prefix}{k}")
        else:
            run.append(f"{prefix}{k}")
    if run:
        parts.append(_tuple_display(run))
    return " + ".join(parts) or "()"


def _write_recorder(op) -> Callable[[tuple, object], None]:
    namespace = {"op": op, "Tensor": Tensor, "AutogradMeta": AutogradMeta, "AUTOGRAD": K.AUTOGRAD,
                 "accumulator_of": accumulator_of, "edge_of": edge_of, "new_object": object.__new__,
                 "next_seq": next_sequence_number, "ANOMALY_THREADS": ANOMALY_THREADS, "STATE": STATE,
                 "traceback": traceback}
    exec(compile(recorder_source(op), f"<record {op.name}>", "exec"), namespace)
    return namespace["record"]
