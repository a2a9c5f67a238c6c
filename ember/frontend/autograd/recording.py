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

from typing import Callable

from ember._generated.recorders import ENTRY_FACTORIES, RECORDER_FACTORIES
from ember.dispatcher.runners import own_code


_RECORDERS: dict = {}       # op -> its record function (ops live for the process)


def recorder_for(op) -> Callable[[tuple, object], None]:
    """`record(args, out)` for `op` (made on first use and kept): from the factory generated for the op's
    recorder shape (`RECORDER_FACTORIES`, by `python -m codegen`, for every shape in the registry)."""
    fn = _RECORDERS.get(op)
    if fn is None:
        # own_code: the op's node class alone at the record function's node stores (see its docstring)
        shape = recorder_shape(op)
        make = RECORDER_FACTORIES.get(shape)
        if make is None:
            raise RuntimeError(f"{op.name}: no generated record function for {shape}; every op comes from "
                               "ops_registry.yaml: run `python -m codegen`")
        fn = _RECORDERS[op] = own_code(make(op))
    return fn


def entry_for(op, run_below: Callable[[tuple], object]) -> Callable[[tuple], object]:
    """`run_and_record(args)`: `out = run_below(args)`, then `record(args, out)`'s body, then `out`; the
    op's Autograd entry for the key set whose entry below Autograd is `run_below` (made once per entry
    and cached by the dispatcher, so it gets a code object of its own)."""
    return own_code(ENTRY_FACTORIES[recorder_shape(op)](op, run_below))


def recorder_shape(op) -> tuple[tuple[int, ...], tuple[int, ...], str]:
    """The key of `op`'s record function in `RECORDER_FACTORIES` (codegen's `recorder_shapes` makes the
    same): its differentiable positions, those of them that are Tensor[] arguments, and its outputs,
    "one", "all" (several, each floating-point one gets the node) or "first" (only the first)."""
    lists = op.tensor_list_args
    outputs = "one" if op.n_outputs == 1 else "first" if op.first_output_only else "all"
    return op.differentiable, tuple(i for i in op.differentiable if i in lists), outputs
