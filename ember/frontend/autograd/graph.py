"""The autograd graph: nodes, edges, saved tensors, leaf accumulators and tensor hooks.

Each differentiable op call creates one Node (a generated `XxxBackward0` class, see
ember/_generated/backward.py) holding the edges to the nodes of its inputs and only the
values its formula needs. Leaves that require grad get an AccumulateGrad node, created
once per leaf and kept alive by the graph that uses it.
"""
from __future__ import annotations

import itertools
import threading
import weakref

from ember.dispatcher import keys as K
from ember.dispatcher.state import STATE, set_grad_enabled_state
from ember.core.errors import AutogradError
from ember.frontend.tensor import AutogradMeta, Tensor as _Tensor

_sequence = itertools.count()

#: held while a gradient is added into a `.grad`: backward passes running in several threads over
#: shared leaves (parameters) each read `.grad` and write it back, and must not lose one another's
#: sums. One lock for every leaf: the additions it guards are short, and torch too serialises
#: accumulation per leaf.
ACCUMULATE_LOCK = threading.RLock()

#: set by `ember.memory.track` while it records: called with the storage of each saved tensor
SAVE_HOOK = None


class _Running(threading.local):
    """Per thread, the node the engine is running there (None outside backward): `ember.memory.track`
    reads it at each allocation, and the node's `seq` tells which module's forward made it. Per
    thread because backward passes in other threads run other nodes at the same time."""

    node = None


RUNNING = _Running()


#: next_sequence_number() -> a number between those of the nodes made before and after the call
#: (nodes are numbered in creation order; the memory tracker marks module boundaries with these).
#: The counter's own method: no Python frame per call.
next_sequence_number = _sequence.__next__


class Node:
    """A backward function: maps the gradients of its outputs to those of its inputs."""

    n_outputs = 1   # how many forward outputs (gradients arriving); generated nodes override

    # Rarely set per node, so class-level defaults (an instance sets its own in __dict__):
    pre_hooks = None        # {output_nr: [hook(grad) -> grad | None]}
    post_hooks = None       # [hook(grad_inputs, grad_outputs)]
    anomaly_trace = None    # forward traceback, recorded in anomaly mode
    retains = None          # {output_nr: weakref to the tensor whose .grad it fills (retain_grad)}
    # generated from the registry's `recompute` (gelu, native_layer_norm): a method returning output 0
    # again from what the node saved; a consumer saving that output keeps this recipe (see `pack`)
    recompute = None

    __slots__ = ("next_edges", "input_meta", "seq", "__weakref__", "__dict__")

    def __init__(self, next_edges: tuple = (), input_meta: tuple = ()) -> None:
        self.next_edges = next_edges     # per input: (node, output_nr) or None
        self.input_meta = input_meta     # per input: (shape, dtype, device) or None
        self.seq = next(_sequence)

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object>"

    def apply(self, grads: list) -> tuple:
        raise NotImplementedError(f"{self.name()}.apply")

    def save(self, args: tuple, outs) -> None:
        """Keep what the formulas will need of the call's arguments and outputs: generated nodes whose
        formulas read any define it; these read none."""

    def release(self) -> None:
        """Drop saved values after a backward pass without retain_graph: nodes that save tensors (the
        generated ones, custom Functions') define it; these nodes save none."""

    @property
    def next_functions(self) -> tuple:
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> new grad_inputs or None, called after the node runs."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.post_hooks.append(fn)
        return _RemovableHandle(self.post_hooks, fn)

    def register_prehook(self, fn):
        """fn(grad_outputs) -> new grad_outputs or None, called before the node runs."""
        return _add_pre_hook(self, -1, fn)


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds incoming gradients into `leaf.grad`.

    One per leaf, made on the leaf's first use in a graph and held by the tensor (see
    `accumulator_of`). The node holds the leaf weakly and the leaf's AutogradMeta strongly,
    so there is no reference cycle (tensors are freed as soon as they are unused) and a graph
    that outlives its leaf still runs the leaf's hooks.
    """

    __slots__ = ("ag", "_variable")

    def __init__(self, variable) -> None:
        super().__init__()
        self.ag = variable._ag
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        """The leaf tensor (None once it is freed)."""
        return self._variable()

    def _leaf_meta(self):
        """The leaf's autograd state now: None if it stopped requiring grad."""
        var = self._variable()
        return self.ag if var is None else var._ag

    def tensor_hooks(self, grad):
        """Run the leaf's tensor hooks (Tensor.register_hook) on its incoming gradient.

        The engine calls this before capturing gradients for autograd.grad and before
        accumulating, so hooks see (and may replace) the gradient in both cases, as in PyTorch.
        """
        ag = self._leaf_meta()
        if ag is None or not ag.hooks or grad is None:
            return grad
        for hook in list(ag.hooks):
            out = hook(grad)
            if out is not None:
                grad = out
        return grad

    def apply(self, grads: list) -> tuple:
        grad = grads[0]
        ag = self._leaf_meta()
        if ag is None or grad is None:
            return ()
        with ACCUMULATE_LOCK:
            if ag.grad is None:
                # a fresh copy: the incoming gradient may be shared with other inputs or views,
                # and later accumulation writes into .grad in place
                ag.grad = grad.clone() if STATE.grad_enabled else grad.detach().clone()
            elif STATE.grad_enabled:
                ag.grad = ag.grad + grad
            else:
                ag.grad.add_(grad)
        return ()


def accumulator_of(tensor) -> AccumulateGrad:
    """The AccumulateGrad node of a leaf, kept in the tensor's `_grad_accumulator` (one per leaf and
    AutogradMeta: a leaf whose requires_grad was switched off and on gets a new one)."""
    node = tensor._grad_accumulator
    if node is None or node.ag is not tensor._ag:
        node = tensor._grad_accumulator = AccumulateGrad(tensor)
    return node


def edge_of(tensor):
    """The graph edge a gradient for `tensor` flows along, or None if it needs none."""
    ag = tensor._ag
    if ag is None:
        return None
    fn = ag.grad_fn
    if fn is not None:
        if tensor._base is not None and _view_is_stale(tensor, fn):
            from .autograd_kernel import regenerate_view_history

            regenerate_view_history(tensor)
            return (ag.grad_fn, ag.output_nr) if tensor._ag is ag else edge_of(tensor)
        return (fn, ag.output_nr)
    return (accumulator_of(tensor), 0)


_NOT_A_VIEW_NODE = object()


def _view_is_stale(view, fn) -> bool:
    """Was the base of `view` given a new history (an in-place op) after `view` got its own?

    View nodes remember the base's grad_fn they were derived from (`_view_of`, set by the
    autograd kernel); a view whose base has moved on must take its gradient through the
    base's new history, as PyTorch regenerates such a view's grad_fn.
    """
    src = fn.__dict__.get("_view_of", _NOT_A_VIEW_NODE)
    if src is _NOT_A_VIEW_NODE:
        return False
    base_ag = view._base._ag
    return base_ag is not None and base_ag.grad_fn is not src


class SavedTensor:
    """A tensor saved for backward, checked against in-place modification when used.

    Outputs of the node itself are stored without their grad_fn (to avoid a reference
    cycle) and get it back on unpacking, so higher-order gradients through `result` work.
    Under saved_tensors_hooks, `tensor` is what the pack hook made and `edge` is where the
    saved tensor's gradient flowed (see `pack`), which the unpacked tensor takes. Output 0 of a
    node with a `recompute` recipe (or a view of it) is saved as (weak reference, that node, the
    view's size, stride and offset or None, a weak reference to the viewed output or None), marked
    by the `_RECOMPUTE` hook: the tensor is freed with the forward and recomputed when backward
    needs it.
    """

    __slots__ = ("tensor", "version", "output_nr", "is_output", "unpack_hook", "edge")

    # made by `pack` (no __init__: a tensor saved per recorded op would pay a second Python frame)

    def unpack(self, node, graph_output: bool = True):
        """The saved tensor, checked (not freed, not modified in place since). An output of the node
        comes back as a new tensor whose grad_fn is the node (higher-order gradients run through it);
        with `graph_output=False` (the generated nodes' formulas) only while grad mode is on, i.e.
        under create_graph: otherwise no graph is recorded and the stored tensor serves as it is."""
        if self.unpack_hook is not None:        # saved under saved_tensors_hooks, or as a recipe to recompute
            return self._unpack_hooked(node, graph_output)
        if self.tensor is None:
            raise AutogradError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
                "a second time or if you need to access saved tensors after calling backward.")
        t = self.tensor
        if t._storage.version != self.version:
            raise _modified_in_place(t, self.version, f", which is output {self.output_nr} of {node.name()},"
                                     if self.is_output else "")
        if self.is_output and (graph_output or STATE.grad_enabled):
            out = t.detach()
            out._ag = AutogradMeta(node, self.output_nr)
            out._keys |= K.AUTOGRAD
            return out
        return t

    def _unpack_recomputed(self):
        """The saved output: the tensor itself while something still holds it (checked as any saved
        tensor), else its producer's op run again on the producer's saved inputs, with grad mode as it is
        (under create_graph the recomputed tensor hangs off those inputs, so higher-order gradients flow)."""
        ref, producer, view, source_ref = self.tensor
        t = ref()
        if t is None:
            source = source_ref() if view is not None else None
            if source is None or source._storage.version != self.version:
                source = producer.recompute()
            if view is None:
                return source
            from ember._generated import functions as F

            return F.as_strided(source, *view)
        if t._storage.version != self.version:
            raise _modified_in_place(t, self.version, "")
        return t

    def _unpack_hooked(self, node, graph_output: bool):
        """What the unpack hook returns, as torch hands it back: with the autograd identity of the tensor
        that was saved (a node's output: the node; an input: its grad_fn, or its leaf's accumulator), so
        higher-order gradients flow through it; a formula's values only, outside create_graph."""
        if self.unpack_hook is _RECOMPUTE:
            return self._unpack_recomputed()
        t = self.unpack_hook(self.tensor)
        if not isinstance(t, _Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        if not (graph_output or STATE.grad_enabled):
            return t
        edge = self.edge
        if edge is None:                        # saved without history
            return t.detach() if t._ag is not None else t
        out = t.detach()
        fn, nr = (node, self.output_nr) if edge is _NODE_ITSELF else edge
        if fn.__class__ is AccumulateGrad:      # a leaf: the unpacked tensor stands for it
            out._ag = fn.ag
            out._grad_accumulator = fn
        else:
            out._ag = AutogradMeta(fn, nr)
        out._keys |= K.AUTOGRAD
        return out


def _modified_in_place(t, version: int, source: str) -> AutogradError:
    """torch's error for a saved tensor modified in place since it was saved (`source`: which output of
    which node it is, or empty)."""
    from ember.shape_rules.common import type_name

    return AutogradError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[ember.{type_name(t.dtype)}Tensor {list(t.shape)}]{source} is at version {t._storage.version}; expected "
        f"version {version} instead. Hint: enable anomaly detection to find the operation that failed to compute "
        "its gradient, with ember.autograd.set_detect_anomaly(True).")


def _recompute_marker(packed):     # never called: marks a SavedTensor holding a recipe (see SavedTensor)
    raise AssertionError("a recomputed saved tensor is unpacked by SavedTensor._unpack_recomputed")


_RECOMPUTE = _recompute_marker

#: whether a saved output 0 of a node with a `recompute` recipe is kept as that recipe (the default):
#: bit-identical gradients, that output's memory free between forward and backward, one more call of
#: its op in the backward
RECOMPUTE_SAVED_OUTPUTS = True


#: what a released slot of a generated node holds: unpacking it raises the error above (a second
#: backward through a freed graph); one shared instance, so releasing is a store
FREED = object.__new__(SavedTensor)
FREED.tensor = None
FREED.version = 0
FREED.is_output = False
FREED.output_nr = 0
FREED.unpack_hook = None
FREED.edge = None

#: a hooked SavedTensor's `edge` for a differentiable output of its own node (which it does not hold: no cycle)
_NODE_ITSELF = ("node", 0)

#: torch.autograd.graph.saved_tensors_hooks: per thread, a stack of (pack_hook, unpack_hook); None while
#: no thread has any, so saving a tensor costs one test when none are in use
PACK_HOOKS: dict | None = None
_PACK_HOOKS_LOCK = threading.Lock()


class saved_tensors_hooks:      # noqa: N801 (torch's name)
    """Within the block, every tensor saved for backward is replaced by `pack_hook(tensor)` (any
    object) and restored by `unpack_hook(packed)` when backward needs it: offloading activations,
    recomputing them, or (FullyShardedDataParallel) keeping a sharded parameter's gathered copy
    out of the graph. The innermost block's hooks apply, per thread, as in torch. As in torch, the
    pack hook runs with grad mode off and gets the tensor itself (a node's output already with its
    grad_fn) and must not modify it in place; the unpacked tensor has the saved one's place in the
    graph, so double backward works through it. A pack hook that returns the tensor itself leaves
    it saved as usual (with its in-place modification check; the unpack hook is then not called)."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        global PACK_HOOKS
        with _PACK_HOOKS_LOCK:
            hooks = dict(PACK_HOOKS or {})
            hooks[threading.get_ident()] = hooks.get(threading.get_ident(), ()) + ((self.pack_hook, self.unpack_hook),)
            PACK_HOOKS = hooks
        return self

    def __exit__(self, *exc) -> None:
        global PACK_HOOKS
        with _PACK_HOOKS_LOCK:
            hooks = dict(PACK_HOOKS or {})
            stack = hooks.get(threading.get_ident(), ())[:-1]
            if stack:
                hooks[threading.get_ident()] = stack
            else:
                hooks.pop(threading.get_ident(), None)
            PACK_HOOKS = hooks or None


def pack(value, is_output: bool = False, output_nr: int = 0, node=None):
    """What a node keeps of a value its formulas read: a tensor as a SavedTensor (its version noted
    for the in-place check; an output of the node itself stored without its grad_fn, so the node and
    its output form no reference cycle), anything else (None, a number) as it is."""
    if not isinstance(value, _Tensor):
        return value
    saved = object.__new__(SavedTensor)
    saved.version = value._storage.version
    saved.is_output = is_output
    saved.output_nr = output_nr
    saved.unpack_hook = None
    if PACK_HOOKS is not None:
        hooks = PACK_HOOKS.get(threading.get_ident())
        if hooks and _pack_hooked(saved, value, hooks[-1], node):
            return saved
    if RECOMPUTE_SAVED_OUTPUTS and not is_output:
        # output 0 of a node that can recompute it (gelu, layer norm), or a view of it (a decomposed
        # linear layer saves its input reshaped): kept as a recipe and weak references, so that it is
        # freed once the forward drops it, as torch.compile's partitioner does
        source = value if value._base is None else value._base
        ag = source._ag
        producer = ag.grad_fn if ag is not None else None
        if producer is not None and producer.recompute is not None and ag.output_nr == 0:
            view = None if source is value else (tuple(value.shape), value.stride(), value.storage_offset())
            saved.tensor = (weakref.ref(value), producer, view, None if view is None else weakref.ref(source))
            saved.unpack_hook = _RECOMPUTE
            saved.edge = None
            return saved
    saved.tensor = value.detach() if is_output else value
    if SAVE_HOOK is not None:           # ember.memory.track: activations saved for backward
        SAVE_HOOK(value._storage)
    return saved


def _pack_hooked(saved: SavedTensor, value, hooks, node) -> bool:
    """Run the innermost pack hook on `value` as torch does (grad mode off, `value` as it is in the
    graph, no in-place change allowed) and, unless it returned `value` itself, keep its result in
    `saved` with the unpack hook and where `value`'s gradient flows. Whether it did."""
    pack_hook, unpack_hook = hooks
    own = _as_output_of(node, value, saved.output_nr) if saved.is_output and value._ag is None else None
    differentiable = value._ag is not None
    prev = set_grad_enabled_state(False)
    try:
        packed = pack_hook(value)
    finally:
        set_grad_enabled_state(prev)
        if own is not None:
            value._ag, value._keys = own
    if value._storage.version != saved.version:
        raise AutogradError("A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
                            "pack hook cannot be modified by in-place operations as this can lead to unexpected "
                            "side-effects. Please open an issue if you need to perform in-place operations on the "
                            "input to a pack hook.")
    if packed is value:
        return False
    saved.tensor = packed
    saved.unpack_hook = unpack_hook
    if not differentiable:
        saved.edge = None
    else:
        saved.edge = _NODE_ITSELF if saved.is_output else edge_of(value)
    return True


_FIRST_OUTPUT_ONLY: dict = {}       # node class -> whether its op gives only output 0 a grad_fn


def _as_output_of(node, value, output_nr: int):
    """Give `value`, output `output_nr` of `node` (which is saving it), the grad_fn the node's recorder
    attaches just after, so the pack hook sees the output as torch's does. Returns what to restore
    afterwards (None when the output gets no grad_fn: not floating-point, or not the first of an op
    whose other outputs are not differentiable)."""
    if not isinstance(node, Node) or not value._dtype.is_floating_point:
        return None
    if output_nr:
        cls = type(node)
        first_only = _FIRST_OUTPUT_ONLY.get(cls)
        if first_only is None:
            from ember.dispatcher.operator import ALL_OPS

            first_only = _FIRST_OUTPUT_ONLY[cls] = any(op.first_output_only for op in list(ALL_OPS.values())
                                                       if op.backward_cls is cls)
        if first_only:
            return None
    own = (value._ag, value._keys)
    value._ag = AutogradMeta(node, output_nr)
    value._keys |= K.AUTOGRAD
    return own


class _RemovableHandle:
    def __init__(self, container, item) -> None:
        self._container = container
        self._item = item

    def remove(self) -> None:
        try:
            self._container.remove(self._item)
        except ValueError:
            pass


def _add_pre_hook(node: Node, output_nr: int, fn):
    if node.pre_hooks is None:
        node.pre_hooks = {}
    hooks = node.pre_hooks.setdefault(output_nr, [])
    hooks.append(fn)
    return _RemovableHandle(hooks, fn)


def register_tensor_hook(tensor, hook):
    """Tensor.register_hook: hook(grad) -> replacement grad or None."""
    ag = tensor._ag
    if ag is None:
        raise AutogradError("cannot register a hook on a tensor that doesn't require gradient")
    if ag.grad_fn is None:
        if ag.hooks is None:
            ag.hooks = []
        ag.hooks.append(hook)
        return _RemovableHandle(ag.hooks, hook)
    return _add_pre_hook(ag.grad_fn, ag.output_nr, hook)


def register_post_accumulate_hook(tensor, hook):
    """Tensor.register_post_accumulate_grad_hook: hook(leaf) after backward accumulates into leaf.grad."""
    ag = tensor._ag
    if ag is None:
        raise AutogradError("cannot register a hook on a tensor that doesn't require gradient")
    if ag.grad_fn is not None:
        raise AutogradError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if ag.post_accumulate_hooks is None:
        ag.post_accumulate_hooks = []
    ag.post_accumulate_hooks.append(hook)
    return _RemovableHandle(ag.post_accumulate_hooks, hook)


def run_post_accumulate_hooks(var) -> None:
    """The post-accumulate-grad hooks of leaf `var` (None: freed), after its `.grad` was updated."""
    ag = None if var is None else var._ag
    if ag is not None and ag.post_accumulate_hooks:
        for hook in list(ag.post_accumulate_hooks):
            if hook(var) is not None:
                raise AutogradError("Tensor post accumulate grad hooks should return None.")


def retain_grad(tensor) -> None:
    """Tensor.retain_grad: fill the `.grad` of a non-leaf when a backward pass reaches it.

    The gradient is stored (accumulated over passes, as for leaves) after the tensor's own
    hooks have run. A no-op on leaves, which always keep their gradient.
    """
    ag = tensor._ag
    if ag is None:
        raise AutogradError("can't retain_grad on Tensor that has requires_grad=False")
    if ag.grad_fn is None or ag.retains_grad and _retain_registered(tensor):
        return
    ag.retains_grad = True
    _register_retain(ag.grad_fn, ag.output_nr, tensor)


def _register_retain(node: Node, output_nr: int, tensor) -> None:
    if node.retains is None:
        node.retains = {}
    node.retains[output_nr] = weakref.ref(tensor)


def _retain_registered(tensor) -> bool:
    ag = tensor._ag
    ref = (ag.grad_fn.retains or {}).get(ag.output_nr)
    return ref is not None and ref() is tensor


def move_retain(tensor, old_node, old_nr) -> None:
    """Keep retain_grad working when an in-place op gives `tensor` a new grad_fn."""
    if old_node is not None and old_node.retains:
        ref = old_node.retains.get(old_nr)
        if ref is not None and ref() is tensor:
            del old_node.retains[old_nr]
    ag = tensor._ag
    if ag is not None and ag.retains_grad and ag.grad_fn is not None:
        _register_retain(ag.grad_fn, ag.output_nr, tensor)


def store_retained(node: Node, grads) -> None:
    """Write the gradients arriving at `node` into the `.grad` of tensors that retain it."""
    for nr, ref in list(node.retains.items()):
        g = grads[nr] if nr < len(grads) else None
        t = ref()
        if g is None or t is None:
            continue
        ag = t._ag
        if ag is None or not ag.retains_grad or ag.grad_fn is not node:
            continue
        with ACCUMULATE_LOCK:
            if ag.grad is None:
                ag.grad = g.clone() if STATE.grad_enabled else g.detach().clone()
            else:
                ag.grad = ag.grad + g
