"""The joint forward+backward capture, and the autograd Function that runs its two halves natively.

A module called with autograd recording is captured with its backward (as AOTAutograd does):
`JointCaptureMode` (a decomposing capture that keeps the ops with a native kernel on the inputs'
backend, so both halves can run natively) gives the capture's meta values `requires_grad` where
the real tensors have it,
so the meta run records an autograd graph; when the forward is done, `finish` adds a *tangent*
placeholder per differentiable output and runs `ember.autograd.grad` on the meta values inside
the capture, so the ops of the registry's derivative formulas become nodes too, and the gradients
of the inputs and parameters become extra outputs.

`partition` splits that graph: the forward is what the program's outputs need; the backward is every
other node; the *saved* values are the forward's values (and inputs) the backward reads. Both halves
run natively (native.py) inside `JointFunction`, an autograd Function: its forward returns the
outputs and keeps the saved arrays, its backward runs the backward half on them and the incoming
gradients. So `loss.backward()` and optimizers work unchanged, with no per-op dispatch or autograd
bookkeeping in either direction.
"""
from __future__ import annotations

import operator
from typing import Callable

from ember.export.capture import DecomposingCaptureMode
from ember.frontend.autograd.function import BackwardCFunction
from ember.frontend.tensor import Tensor
from ember.fx import Node

from .native import native_runner

__all__ = ["JointCaptureMode", "joint_runner"]


class JointCaptureMode(DecomposingCaptureMode):
    """A decomposing capture (ops in `table` kept: those with a native kernel) whose meta values carry
    autograd, and whose `finish` traces the backward."""

    def __init__(self, graph, lift, table: dict, backward_table: dict | None = None) -> None:
        super().__init__(graph, lift, table)
        # the ops the backward keeps (its formulas' ops are not differentiated: any decomposition will do)
        self.backward_table = table if backward_table is None else backward_table
        self.differentiable: list = []        # (placeholder node, meta value) of the inputs needing a gradient
        self.tangents: list = []              # the tangent placeholders, one per differentiable output
        self.grad_outputs = 0
        self.device = None                    # the program's device (the backward's tensors are meta values)
        self.tangent_of: list[int] = []       # the program output each tangent is the gradient of

    def __ember_dispatch__(self, op, args: tuple):
        # the backward runs on meta values: a factory it calls (`zeros(..., device=grad.device)`) is recorded
        # for the program's device, which the forward's fakes show, and hands the backward the meta value
        # (a tensor shown on the program's device would not match the other gradients' device, and autograd
        # would record a copy to conform it)
        i = op.device_arg
        if i is None or self.device is None or args[i] is None or str(args[i]) != "meta":
            return super().__ember_dispatch__(op, args)
        result = super().__ember_dispatch__(op, args[:i] + (self.device,) + args[i + 1:])
        found = self.known.get(id(result)) if isinstance(result, Tensor) else None
        return found[1] if found is not None else result

    def bind(self, t: Tensor, node: Node, value: Tensor) -> None:
        if self.device is None and t.device.type != "meta":
            self.device = t.device
        if node.op == "placeholder" and t.requires_grad and not value.requires_grad:
            value.requires_grad_(True)
            self.differentiable.append((node, value))
        super().bind(t, node, value)
        self.known[id(value)] = (node, value)

    def node_and_value(self, t: Tensor):
        found = self.known.get(id(t))
        if found is None:
            # autograd hands the backward its saved tensors and gradients as new Tensors over the same
            # arrays: the same graph values (the halves run without autograd, so no alias is needed)
            found = self._by_data.get(id(t._data))
            if found is not None:
                self.known[id(t)] = found
                self._alive.append(t)
                return found
        return super().node_and_value(t)

    def finish(self, outputs: list) -> tuple:
        from ember.frontend.autograd.engine import grad

        metas = [self.node_and_value(o)[1] if isinstance(o, Tensor) else None for o in outputs]
        seeds, values = [], []
        first_call = next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        for position, m in enumerate(metas):
            if m is None or not m.requires_grad:
                continue
            self.tangent_of.append(position)
            with self.graph.inserting_before(first_call):
                node = self.graph.placeholder(f"tangent_{len(self.tangents)}")
            from ember._generated import functions as F

            # contiguous, as the gradients autograd passes in are (backward() seeds ones; formulas make new
            # tensors): a strided tangent would make the backward's reshapes copy (the call makes sure)
            seed = F.empty(tuple(m.shape), dtype=m.dtype, device="meta")
            node.meta["val"] = seed
            self.known[id(seed)] = (node, seed)
            self.tangents.append(node)
            seeds.append(seed)
            values.append(m)
        if not values or not self.differentiable:
            return ()
        self.table = self.backward_table
        grads = grad(values, [v for _, v in self.differentiable], grad_outputs=seeds, allow_unused=True)
        self.grad_outputs = len(grads)
        return tuple(self.node_and_value(g)[0] if g is not None else None for g in grads)


def joint_runner(program, mode: JointCaptureMode, example: list, n_outputs: int,
                 runner: Callable = native_runner) -> Callable | None:
    """A function of the program's inputs returning its outputs through `JointFunction`, or None when a half
    does not fit native replay. `n_outputs`: the program's own outputs (the gradients follow them).
    `runner`: what runs each half (native replay; replay.dispatched_runner under "aot_eager")."""
    from .native import backend_of

    found = backend_of(example)
    if found is None or program.range_constraints:
        return None
    nodes = list(program.graph.nodes)
    outputs = list(nodes[-1].args[0])
    user_outputs, grads = outputs[:n_outputs], outputs[n_outputs:]
    tangents = set(mode.tangents)
    inputs = [n for n in nodes if n.op == "placeholder" and n not in tangents]
    # the forward: what the outputs need, and the checks of decided branches (they run before anything else
    # a call does)
    writers = _writers(nodes)
    forward = _ancestors(user_outputs, writers)
    forward |= _ancestors([n for n in nodes if getattr(n.target, "side_effectful", False)], writers)
    # the backward's picks from a forward op's several results run in the forward, so only the results the
    # backward reads are saved, not all of them (attention's weights, not its output too)
    forward |= {n for n in nodes if n.op == "call_function" and n.target is operator.getitem
                and n.args[0] in forward}
    backward_nodes = [n for n in nodes if n.op == "call_function" and n not in forward]
    saved = []
    for n in backward_nodes:
        for a in n.all_input_nodes:
            if (a in forward or a.op == "placeholder") and a not in tangents and a not in saved:
                saved.append(a)
    fw_nodes = [n for n in nodes if n.op == "placeholder" or n in forward]
    fw = runner(fw_nodes, inputs, user_outputs + saved, *found,
                       wrap=[True] * len(user_outputs) + [False] * len(saved))
    bw_nodes = [n for n in nodes if n in set(saved) or n in tangents or n in set(backward_nodes)]
    bw = runner(bw_nodes, saved + mode.tangents, grads, *found, consume_inputs=True)
    if fw is None or bw is None:
        return None
    differentiable = [inputs.index(node) for node, _ in mode.differentiable]
    shapes = [(tuple(t.meta["val"].shape), t.meta["val"].dtype) for t in mode.tangents]
    return _joint_call(fw, bw, len(user_outputs), (mode.tangent_of, shapes), differentiable, len(inputs))


def _joint_call(fw: Callable, bw: Callable, n_out: int, tangents: tuple, differentiable: list, n_inputs: int):
    """The program as an autograd Function. `tangents`: (the output each tangent belongs to, the tangents'
    (shape, dtype)): an output without a gradient coming back (unused in the loss) gets zeros."""
    from ember._generated import functions as F
    from ember.frontend.autograd.function import Function

    positions, shapes = tangents

    class JointFunction(Function):
        @staticmethod
        def forward(ctx, *inputs):
            results = fw(*inputs)
            ctx.saved_arrays = results[n_out:]
            return results[:n_out]

        @staticmethod
        def backward(ctx, *grad_outputs):
            return JointFunction.backward_list(ctx, list(grad_outputs))

        @staticmethod
        def backward_list(ctx, grad_outputs: list):
            """The backward half on the saved values and the outputs' gradients (`grad_outputs`, emptied:
            each is freed once the backward has used it, as eager autograd frees it)."""
            seeds = [F.zeros(shape, dtype=dtype) if grad_outputs[p] is None else
                     grad_outputs[p] if grad_outputs[p].is_contiguous() else grad_outputs[p].contiguous()
                     for p, (shape, dtype) in zip(positions, shapes)]
            grad_outputs.clear()
            values = list(ctx.saved_arrays) + seeds
            ctx.saved_arrays = None                 # the backward frees each saved value after its last use
            del seeds
            grads = bw(values)
            out = [None] * n_inputs
            for position, g in zip(differentiable, grads):
                out[position] = g
            return out

    JointFunction._backward_cls = type("JointFunctionBackward", (_JointBackward,), {"_fn_cls": JointFunction})

    def run(*inputs):
        return JointFunction.apply(*inputs)
    return run


class _JointBackward(BackwardCFunction):
    """JointFunction's graph node: `apply` hands the engine's own list of incoming gradients to the backward,
    which empties it, so no gradient outlives its last use inside the backward half."""

    def apply(self, grads: list):
        # the engine's list itself, unless post-hooks will read it after the node has run
        result = self._fn_cls.backward_list(self, grads if not self.post_hooks else list(grads))
        return [result[i] for i, is_tensor in enumerate(self._arg_is_tensor) if is_tensor]


def _writers(nodes: list) -> dict:
    """{node: the nodes writing its value in place}: a write into a view counts as a write into what the view
    is of (a decomposition's `empty` then `copy_` into it, read later through the `empty`)."""
    from ember.export.trace import view_base

    writers: dict = {}
    for n in nodes:
        for i in getattr(n.target, "mutated", ()) if n.op == "call_function" else ():
            target = n.args[i]
            for t in {target, view_base(target)}:
                writers.setdefault(t, []).append(n)
    return writers


def _ancestors(values, writers: dict) -> set:
    """The nodes `values` need: their arguments, recursively, and every in-place write into one of them."""
    seen: set = set()
    stack = [v for v in values if isinstance(v, Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
        stack.extend(writers.get(n, ()))
    return seen
