"""The backward pass: walk the graph in dependency order and deliver gradients.

`backward` accumulates into the `.grad` of leaves; `grad` returns the gradients of chosen
inputs without touching `.grad`. Gradients are reduced to each input's shape (broadcast
inputs get summed gradients) and cast to its dtype here, so formulas stay simple. With
`create_graph=True` the formulas run with grad mode on, through the dispatcher, so their
own graph is recorded (higher-order gradients).
"""
from __future__ import annotations

import functools
import heapq
import threading
import sys
from typing import Sequence

import numpy as np

from ember._generated import functions as F
from ember.dispatcher import keys as K
from ember.dispatcher.plugins import REGISTRY
from ember.dispatcher.state import ANOMALY_THREADS, STATE, set_grad_enabled_state
from ember.core.errors import AutogradError
from ember.core.numpy_interop import to_numpy_dtype
from ember.frontend.tensor import Tensor, make_tensor

from . import graph, slice_pieces
from .graph import AccumulateGrad, Node, edge_of, run_post_accumulate_hooks, store_retained
from .slice_pieces import SlicePieces


def _make_root_grads(tensors, grad_tensors):
    out = []
    for i, t in enumerate(tensors):
        g = grad_tensors[i] if grad_tensors is not None else None
        if g is None:
            if t.numel() != 1:
                raise AutogradError("grad can be implicitly created only for scalar outputs")
            g = _implicit_root_grad(t)
        elif not isinstance(g, Tensor):
            g = F.full_like(t, g)
        elif tuple(g.shape) != tuple(t.shape):
            raise AutogradError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and output[{i}] "
                                f"has a shape of {list(t.shape)}.")
        out.append(g)
    return out


_ONES_ON_HOST: dict = {}


def _implicit_root_grad(t):
    """`ones_like(t)` for the gradient of a one-element output (`loss.backward()`).

    ones_like is a decomposition (empty + fill_: three dispatches, about a tenth of a small
    training step's backward), so on a backend whose arrays live in host memory (cpu, meta:
    `Backend.host_memory`) the commonest root is the backend's copy of a cached host array of
    ones instead: the same values, dtype, shape and device. A device backend keeps the op (a
    fill it queues; a host copy could wait for the queued forward pass), and so does a call
    with an active dispatch mode (or any other included key), which sees ones_like as a torch
    mode sees aten's."""
    key = t._keys & K.BACKEND_MASK
    backend = REGISTRY.by_key[key]
    if STATE.keys[0] or not backend.host_memory:
        return F.ones_like(t)
    shape = t._data.shape
    host = _ONES_ON_HOST.get((t._dtype, shape))
    if host is None:
        host = np.ones(shape, to_numpy_dtype(t._dtype))
        host.flags.writeable = False
        if len(_ONES_ON_HOST) < 64:
            _ONES_ON_HOST[(t._dtype, shape)] = host
    device = t._device
    return make_tensor(backend.from_host(host, device.index), t._dtype, device, key, None)


def sum_to(grad, shape):
    """Reduce a broadcast gradient to `shape` by summing the broadcast dimensions."""
    gshape = tuple(grad.shape)
    shape = tuple(shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = F.sum(grad, dims, keepdim=True)
    if lead:
        grad = F.reshape(grad, shape) if len(tuple(grad.shape)) != len(shape) else grad
    if tuple(grad.shape) != shape:
        grad = F.reshape(grad, shape)
    return grad


def _validate(node: Node, grads):
    """Reduce each input gradient to the input's shape, dtype and device: `grads` itself when every
    one already is (the common case), else a list of the conformed gradients."""
    for g, meta in zip(grads, node.input_meta):
        if g is None or meta is None:
            continue
        if g.__class__ is SlicePieces:      # a slice's gradient in pieces: the input's shape by construction
            if not (g.dtype is meta[1] and g.device is meta[2] and g.shape == meta[0]):
                return _conform(node, slice_pieces.whole(list(grads)))
        # devices are interned: identity compares them
        elif not (g._dtype is meta[1] and g._device is meta[2] and g._data.shape == meta[0]):
            return _conform(node, slice_pieces.whole(list(grads)))
    return grads


def _conform(node: Node, grads) -> list:
    metas = node.input_meta
    out = list(grads)
    for i, g in enumerate(out):
        if g is None or i >= len(metas) or metas[i] is None:
            continue
        shape, dtype, device = metas[i]
        if g._dtype is dtype and g._device is device and g._data.shape == shape:
            continue
        if tuple(g.shape) != shape:
            try:
                g = sum_to(g, shape)
            except Exception as exc:
                raise AutogradError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                                    f"{list(g.shape)} but expected shape compatible with {list(shape)}") from exc
        if g.dtype is not dtype:
            g = g.to(dtype)
        if g.device != device:
            g = g.to(device)
        out[i] = g
    return out


def _collect(roots: list[Node]) -> dict[Node, int]:
    """Number of incoming edges of every node reachable from the roots."""
    deps: dict[Node, int] = {}
    roots_seen = set(roots)
    stack = list(roots)
    while stack:
        for edge in stack.pop().next_edges:
            if edge is None:
                continue
            nxt = edge[0]
            if nxt in deps:
                deps[nxt] += 1
            else:                       # first reached: walk its edges (a leaf has none)
                deps[nxt] = 1
                if nxt.next_edges and nxt not in roots_seen:
                    stack.append(nxt)
    return deps


def _needed(roots, targets: set) -> set:
    """Nodes on some path from the roots to a target node (for autograd.grad)."""
    memo: dict[Node, bool] = {}
    order = []
    stack = [(r, False) for r in roots]
    while stack:
        node, done = stack.pop()
        if done:
            memo[node] = node in targets or any(
                e is not None and memo.get(e[0], False) for e in node.next_edges)
            continue
        if node in memo:
            continue
        memo[node] = False
        stack.append((node, True))
        for e in node.next_edges:
            if e is not None and e[0] not in memo:
                stack.append((e[0], False))
        order.append(node)
    return {n for n, ok in memo.items() if ok}


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, allow_unused=False,
                 accumulate=True, own_callbacks=True):
    """The engine: every node reachable from `tensors` runs once all its incoming gradients have
    arrived, the most recently recorded first, and sends its outputs on along its edges; a leaf's
    gradient is accumulated into `.grad` (or, for autograd.grad, captured for `inputs`, which the
    call then returns) right after the node that completed it. Callbacks queued during the pass
    (queue_callback) run at its end, or, without `own_callbacks`, at the end of the caller's pass."""
    tensors = list(tensors)
    for t in tensors:
        if t._ag is None:
            raise AutogradError("element 0 of tensors does not require grad and does not have a grad_fn")
    root_grads = _make_root_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    capture, captured = _capture_map(inputs)
    # a node's gradients wait in `buffers` until its last one arrives; it then waits in the heap,
    # (-seq, id, node, its gradients), the latest node first
    roots, buffers = _root_buffers(tensors, root_grads)
    deps = _collect(roots)
    needed = None
    if inputs is not None and not accumulate:
        needed = _needed(roots, {e_node for e_node in _capture_nodes(inputs)})
    heap: list = []
    for node in roots:
        if deps.get(node, 0) == 0:
            heapq.heappush(heap, (-node.seq, id(node), node, buffers.pop(node)))

    prev = set_grad_enabled_state(create_graph)
    running = graph.RUNNING
    outer_node = running.node             # a backward inside a node (a hook's) restores it
    callbacks = _callback_stack()
    if own_callbacks:
        callbacks.append([])        # queue_callback's list for this pass
    # leaves whose gradients are all in run right after the node that completed them, not from the
    # heap: torch gives AccumulateGrad the highest priority (so `.grad` is filled, and a stolen
    # gradient's producer freed, as early as possible)
    ready_leaves: list = []
    try:
        while heap:
            _, _, node, grads = heapq.heappop(heap)
            running.node = node
            if node.__class__ is AccumulateGrad:        # a leaf as a root (leaf.backward())
                _run_leaf(node, grads, accumulate, capture, captured, needed)
                grads = None
                continue
            if node.pre_hooks or node.retains or capture:
                grads = _tensor_hooks(node, grads, capture, captured)
            if needed is not None and node not in needed:
                _release_edges(node, deps, heap, buffers, retain_graph)
                continue
            outs = _apply(node, grads)
            if not retain_graph:
                node.release()
            _send(node, outs, deps, buffers, heap, ready_leaves)
            outs = grads = None      # hold no gradient past its node: _steal counts references
            if ready_leaves:
                for leaf, leaf_grads in ready_leaves:
                    running.node = leaf
                    _run_leaf(leaf, leaf_grads, accumulate, capture, captured, needed)
                ready_leaves.clear()
                leaf_grads = None
        running.node = outer_node
        if own_callbacks:
            _drain(callbacks[-1])
    finally:
        if own_callbacks:
            callbacks.pop()
        set_grad_enabled_state(prev)
        running.node = outer_node

    if inputs is not None and not accumulate:
        return _captured_gradients(captured, allow_unused, create_graph)
    return None


def _capture_map(inputs) -> tuple[dict, list]:
    """({(id(node), output number): k} for the k-th of autograd.grad's `inputs`, a slot for each)."""
    capture: dict[tuple, int] = {}
    if inputs is None:
        return capture, []
    for k, inp in enumerate(inputs):
        e = edge_of(inp)
        if e is None:
            raise AutogradError("One of the differentiated Tensors does not require grad")
        capture[(id(e[0]), e[1])] = k
    return capture, [None] * len(inputs)


def _root_buffers(tensors, root_grads) -> tuple[list, dict]:
    """The nodes the outputs hang on (a virtual root feeds them all) and the gradients they start with."""
    buffers: dict[Node, list] = {}
    roots = []
    for t, g in zip(tensors, root_grads):
        node, nr = edge_of(t)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.n_outputs
            roots.append(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    return roots, buffers


def _tensor_hooks(node, grads, capture: dict, captured: list):
    """What runs on a node's incoming gradients before the node: the tensor hooks of the non-leaf
    outputs (they live on their grad_fn), retain_grad, and autograd.grad's capture (which sees the
    hooks' results)."""
    if node.pre_hooks:
        for nr, hooks in node.pre_hooks.items():
            if nr < 0 or nr >= len(grads):
                continue
            for hook in list(hooks):
                if grads[nr] is not None:
                    res = hook(grads[nr])
                    if res is not None:
                        grads[nr] = res
    if node.retains:
        store_retained(node, grads)
    if capture:
        _capture(node, grads, capture, captured)
    return grads


def _apply(node, grads):
    """Run a node on its incoming gradients: its own pre-hooks, its formulas (not when no gradient
    arrived: then its outputs are None), the anomaly check, its post-hooks; the input gradients."""
    if node.pre_hooks and -1 in node.pre_hooks:
        grads = _run_node_pre_hooks(node, grads)
    # a node run twice without retain_graph fails when it unpacks a freed saved tensor
    # (SavedTensor.unpack), as in PyTorch: nodes that saved no tensor can rerun
    for g in grads:                 # identity tests: `==` would call Tensor.__eq__
        if g is not None:
            g = None                # not held while the node runs (a node may free its gradients early)
            outs = _validate(node, node.apply(grads))
            if ANOMALY_THREADS and STATE.anomaly:      # the set: no property read when nobody has it on
                outs = slice_pieces.whole(list(outs))
                _check_anomaly(node, outs)
            break
    else:
        outs = (None,) * len(node.next_edges)
    if node.post_hooks:
        outs = slice_pieces.whole(list(outs))           # hooks see tensors
        for hook in list(node.post_hooks):
            res = hook(tuple(outs), tuple(grads))
            if res is not None:
                outs = _validate(node, tuple(res))
    return outs


def _send(node, outs, deps: dict, buffers: dict, heap: list, ready_leaves: list) -> None:
    """Deliver a node's input gradients along its edges, summing those that meet: a node whose last
    gradient this is becomes ready (a leaf into `ready_leaves`, others into the heap)."""
    for edge, g in zip(node.next_edges, outs):
        if edge is None:
            continue
        nxt, nr = edge
        left = deps[nxt] - 1
        deps[nxt] = left
        # more gradients to come: this one waits in nxt's buffer; else nxt is ready with it
        buf = buffers.get(nxt) if left else buffers.pop(nxt, None)
        if buf is None:
            buf = [None] * nxt.n_outputs
            if left:
                buffers[nxt] = buf
        if g is not None:
            buf[nr] = g if buf[nr] is None else slice_pieces.add(buf[nr], g)
        if left:
            continue
        slice_pieces.whole(buf)             # the node is ready: its gradients whole
        if nxt.__class__ is AccumulateGrad:
            ready_leaves.append((nxt, buf))
        else:
            heapq.heappush(heap, (-nxt.seq, id(nxt), nxt, buf))


def _captured_gradients(captured: list, allow_unused: bool, create_graph: bool) -> tuple:
    """autograd.grad's result: the captured gradients, each detached unless the graph is to be kept."""
    for k, g in enumerate(captured):
        if g is None and not allow_unused:
            raise AutogradError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                "graph. Set allow_unused=True if this is the desired behavior.")
    if not create_graph:
        captured = [g.detach() if g is not None else None for g in captured]
    return tuple(captured)


def _capture(node, grads, capture: dict, captured: list) -> None:
    """Add the gradients arriving at `node` to those autograd.grad was asked for."""
    for nr, g in enumerate(grads):
        k = capture.get((id(node), nr))
        if k is not None:
            captured[k] = g if captured[k] is None else captured[k] + g


def _run_node_pre_hooks(node: Node, grads: list) -> list:
    """Node.register_prehook's hooks: each sees the gradients arriving at `node` and may replace them."""
    for hook in list(node.pre_hooks[-1]):
        res = hook(tuple(grads))
        if res is not None:
            grads = list(res)
    return grads


def _run_leaf(node: AccumulateGrad, grads: list, accumulate: bool, capture: dict, captured: list, needed) -> None:
    """A leaf's turn: its tensor hooks, then the gradient captured (autograd.grad) or accumulated
    into `.grad` (stolen when nothing else holds it). The caller holds no reference to the
    gradient besides `grads`, which _steal's reference count relies on."""
    var = node._variable()                          # the leaf (None once freed)
    ag = node.ag if var is None else var._ag        # the leaf's state now (None: it stopped requiring grad)
    if ag is not None and ag.hooks and grads[0] is not None:
        grads[0] = node.tensor_hooks(grads[0])
    if node.retains:
        store_retained(node, grads)
    if capture:
        _capture(node, grads, capture, captured)
    if needed is not None and node not in needed:
        return
    if node.pre_hooks and -1 in node.pre_hooks:
        grads = _run_node_pre_hooks(node, grads)
    if accumulate:
        with graph.ACCUMULATE_LOCK:         # _steal's test and its store are one step (see the lock)
            if grads[0] is not None and not _steal(var, grads):
                node.apply(grads)
        if ag is not None and ag.post_accumulate_hooks:     # torch calls them for a None gradient too
            run_post_accumulate_hooks(var)


# references to a gradient nobody else holds when _steal looks at it: the engine's list of the
# node's incoming gradients, _steal's local and getrefcount's argument (and for its storage: the
# gradient tensor and the argument)
_FREE_GRAD_REFS = 3
_FREE_STORAGE_REFS = 2


def _steal(var, grads: list) -> bool:
    """Make the incoming gradient the leaf `var`'s `.grad` without the copy AccumulateGrad takes, when
    that is unobservable (torch does the same): no `.grad` yet, grad mode off, and a gradient
    that is a fresh tensor no one else refers to, alone on its storage and laid out as the leaf."""
    g = grads[0]
    if g is None or STATE.grad_enabled or g._ag is not None or g._base is not None:
        return False
    if var is None:                 # the leaf was freed (the graph outlived it): nothing to steal into
        return False
    ag = var._ag
    if ag is None or ag.grad is not None or ag.hooks:
        return False
    if sys.getrefcount(g) > _FREE_GRAD_REFS or sys.getrefcount(g._storage) > _FREE_STORAGE_REFS:
        return False
    if getattr(g._data, "base", None) is not None or (g._device is not var._device and g._device != var._device):
        return False
    try:                        # same dtype (validated) and device: the arrays' own strides compare
        same_layout = g._data.strides == var._data.strides
    except AttributeError:
        same_layout = g.stride() == var.stride()
    if not same_layout:
        return False
    ag.grad = g
    return True


def _capture_nodes(inputs):
    for inp in inputs:
        e = edge_of(inp)
        yield e[0]


def _release_edges(node, deps, heap, buffers, retain_graph):
    if not retain_graph:
        node.release()
    for edge in node.next_edges:
        if edge is None:
            continue
        nxt = edge[0]
        deps[nxt] -= 1
        if deps[nxt] == 0:
            buf = buffers.pop(nxt, None)
            buf = slice_pieces.whole(buf) if buf is not None else [None] * nxt.n_outputs
            heapq.heappush(heap, (-nxt.seq, id(nxt), nxt, buf))



def _check_anomaly(node: Node, outs) -> None:
    for i, g in enumerate(outs):
        if g is not None and g.dtype.is_floating_point and g.device.type != "meta" and _has_nan(g):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node.anomaly_trace:
                msg += "\nTraceback of the forward call that caused the error:\n" + node.anomaly_trace
            raise AutogradError(msg)


def _has_nan(t) -> bool:
    return bool(np.isnan(np.asarray(t.detach()._host(), dtype=np.float64)).any())


_RUNS = threading.local()


def backward_runs() -> int:
    """How many backward passes (backward() or autograd.grad) this thread has run: ember.compile's step
    recording asks whether a call ran one (its results' graphs are then spent, not awaiting a backward)."""
    return getattr(_RUNS, "n", 0)


_CALLBACKS = threading.local()


def _callback_stack() -> list:
    """This thread's callback lists, one per backward pass running (nested passes: innermost last)."""
    stack = getattr(_CALLBACKS, "stack", None)
    if stack is None:
        stack = _CALLBACKS.stack = []
    return stack


def _drain(queued: list) -> None:
    """Run the callbacks queued for a pass that ended well (a callback may queue more: each runs once, in order)."""
    while queued:
        queued.pop(0)()


def queue_callback(callback) -> None:
    """Run `callback()` when the backward pass now running in this thread has processed its whole
    graph (torch's `Variable._execution_engine.queue_callback`): DistributedDataParallel waits for
    its last gradient all-reduce there. Only callable from inside a backward pass (a hook)."""
    stack = _callback_stack()
    if not stack:
        raise RuntimeError("queue_callback: final callbacks can only be installed during a backward pass")
    stack[-1].append(callback)


def queue_callback_once(key, callback) -> None:
    """queue_callback, unless a callback with the same `key` is already queued for this pass (several
    hooks of one pass asking for the same end-of-pass work)."""
    stack = _callback_stack()
    if not stack:
        raise RuntimeError("queue_callback: final callbacks can only be installed during a backward pass")
    if any(getattr(c, "once_key", None) == key for c in stack[-1]):
        return
    entry = functools.partial(callback)
    entry.once_key = key
    stack[-1].append(entry)


def backward(tensors: Sequence, grad_tensors=None, retain_graph=None, create_graph: bool = False,
             inputs=None) -> None:
    """ember.autograd.backward: accumulate gradients of `tensors` into the leaves' `.grad`."""
    _RUNS.n = getattr(_RUNS, "n", 0) + 1
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    if grad_tensors is not None and isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        callbacks = _callback_stack()
        callbacks.append([])        # the leaves' post-accumulate hooks below run in this pass
        try:
            _accumulate_into_inputs(tensors, grad_tensors, retain_graph, create_graph, inputs)
            _drain(callbacks[-1])
        finally:
            callbacks.pop()
        return
    run_backward(tensors, grad_tensors, retain_graph, create_graph)


def _accumulate_into_inputs(tensors, grad_tensors, retain_graph, create_graph, inputs) -> None:
    """backward(inputs=...): the gradients of `inputs` only, accumulated into their `.grad`."""
    grads = run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused=True,
                         accumulate=False, own_callbacks=False)
    for inp, g in zip(inputs, grads):
        if g is None:
            continue
        prev = set_grad_enabled_state(create_graph)
        try:
            with graph.ACCUMULATE_LOCK:
                if inp._ag.grad is None:
                    inp._ag.grad = g.clone() if create_graph else g.detach().clone()
                else:
                    inp._ag.grad = inp._ag.grad + g
        finally:
            set_grad_enabled_state(prev)
        if inp._ag.grad_fn is None:
            run_post_accumulate_hooks(inp)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool = False, materialize_grads: bool = False):
    """ember.autograd.grad: gradients of `outputs` with respect to `inputs`, not accumulated."""
    _RUNS.n = getattr(_RUNS, "n", 0) + 1
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    if grad_outputs is not None:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    result = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                          allow_unused=allow_unused or materialize_grads, accumulate=False)
    if materialize_grads:
        result = tuple(g if g is not None else F.zeros_like(i) for g, i in zip(result, inputs))
    return result
