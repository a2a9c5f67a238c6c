"""Recording a call in the autograd graph: the op's backward node, its edges, what it saves.

`recorder_for(op)` returns `record(args, out)` for one op, written out for the op's differentiable
argument positions (by `python -m codegen`, one factory per recorder shape in the registry, in
ember/_generated/recorders.py): no loop over the positions, no lists to append to, one block per
argument. Recording is about half of a small op's interpreter work with grad, and the written-out form
does it in about half the steps of a loop.

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

from ember._generated.recorders import RECORDER_FACTORIES
from ember.dispatcher import keys as K
from ember.dispatcher.runners import own_code
from ember.dispatcher.state import ANOMALY_THREADS, STATE
from ember.frontend.tensor import AutogradMeta, Tensor

from .graph import edge_of, next_sequence_number

_RECORDERS: dict = {}       # op -> its record function (ops live for the process)


def recorder_for(op) -> Callable[[tuple, object], None]:
    """`record(args, out)` for `op` (made on first use and kept): from the factory generated for the op's
    recorder shape (`RECORDER_FACTORIES`, by `python -m codegen`, for every shape in the registry); an op
    of a shape the registry lacks (one made in code) gets `_record_with_loops`, the same steps with loops."""
    fn = _RECORDERS.get(op)
    if fn is None:
        # own_code: the op's node class alone at the record function's node stores (see its docstring)
        make = RECORDER_FACTORIES.get(recorder_shape(op), _record_with_loops)
        fn = _RECORDERS[op] = own_code(make(op))
    return fn


def recorder_shape(op) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """The key of `op`'s record function in `RECORDER_FACTORIES` (codegen's `recorder_shapes` makes the
    same): its differentiable positions, those of them that are Tensor[] arguments, and its outputs,
    "one", "all" (several, each floating-point one gets the node) or "first" (only the first)."""
    lists = op.tensor_list_args
    outputs = "one" if op.n_outputs == 1 else "first" if op.first_output_only else "all"
    return op.differentiable, tuple(i for i in op.differentiable if i in lists), outputs


def _record_with_loops(op) -> Callable[[tuple, object], None]:
    """The generated record functions' steps (see ember/_generated/recorders.py) for any shape, with a
    loop over the differentiable positions and lists appended to (slower)."""
    lists = set(op.tensor_list_args)
    positions = tuple((i, i in lists) for i in op.differentiable)
    one_output = op.n_outputs == 1
    first_only = op.first_output_only

    def record(args, out):
        edges, metas, needs = [], [], []
        for i, listed in positions:
            if listed:
                need = False
                for t in args[i]:
                    if t._ag is not None:
                        edges.append(edge_of(t))
                        metas.append((t._data.shape, t._dtype, t._device))
                        need = True
                    else:
                        edges.append(None)
                        metas.append(None)
                needs.append(need)
                continue
            a = args[i]
            if isinstance(a, Tensor) and a._ag is not None:
                edges.append(edge_of(a))
                metas.append((a._data.shape, a._dtype, a._device))
                needs.append(True)
            else:                       # no history, or a Python number in a Tensor argument
                edges.append(None)
                metas.append(None)
                needs.append(False)
        if not any(needs):
            return
        node = object.__new__(op.backward_cls)
        node.next_edges = tuple(edges)
        node.input_meta = tuple(metas)
        node.seq = next_sequence_number()
        node.needs = tuple(needs)
        if ANOMALY_THREADS and STATE.anomaly:
            node.anomaly_trace = "".join(traceback.format_stack()[:-3])     # from the op's caller
        outs = (out,) if one_output else out
        node.save(args, outs)
        for k, o in enumerate(outs):
            if o._dtype.is_floating_point and not (first_only and k):
                meta = o._ag = object.__new__(AutogradMeta)
                meta.grad_fn = node
                meta.output_nr = k
                o._keys |= K.AUTOGRAD
        base = outs[0]._base
        if base is not None:
            # a view: remember which history of its base it was derived from (see graph.edge_of)
            node._view_of = base._ag.grad_fn if base._ag is not None else None
    return record
