"""Recording a whole step: the ops one real call runs, forward, backward and optimizer update alike.

`mode="reduce-overhead"` on a function replays the kernel sequence of a whole step, as a CUDA graph
captured around a training step does: `record(fn, args, kwargs)` runs the function for real (its
results and side effects are the call's own) under `StepRecorder`, a dispatch mode that sees every
op the call makes at the top level, the autograd engine's derivative formulas and the optimizer's
update included (the mode is active while `loss.backward()` and `optimizer.step()` run), and writes
each into an ember.fx graph over *sources*:

- `("arg", i)`: the array of the call's i-th flattened input;
- `("grad", p)`: the `.grad` of the tensor `p` at the start of the call, read from `p` each replay (a
  step that accumulates gradients over calls reads the gradient the previous call left);
- `("object", t)`: a tensor made before the call and reached some other way (a parameter, an optimizer's
  state, a tensor the function closes over), read through the same Tensor object each replay: in-place
  updates are seen, rebinding a name is not (pass such a tensor as an argument);
- `("hyper", (group, "lr"))`: the learning rate the update of one of ember's optimizers reads, from its
  parameter group each replay (a schedule changing it needs no new recording).

At the end it lists what the call left in Python that a replay must redo: the `.grad` each leaf holds
(a gradient made by the call is reassigned to the replay's array). What cannot be replayed makes the
recording refuse (`Recording.refused` says why): reading a tensor's values in Python (`.item()`, a
branch on a tensor, printing), random ops, ops under autocast, reading a tensor made during the call
but not by a recorded op (from Python or numpy data, or kept by an op for its backward), or results
still waiting for a backward that the call did not run.
"""
from __future__ import annotations

import contextlib
import operator
import threading
import weakref
from dataclasses import dataclass, field

from ember.dispatcher.state import STATE
from ember.export.fake import meta_like
from ember.export.trace import view_base
from ember.frontend import random as random_module
from ember.frontend import tensor as tensor_module
from ember.frontend.mode import DispatchMode
from ember.frontend.tensor import Tensor
from ember.fx import Graph, Node
from ember.utils.pytree import tree_flatten

from .fusion import values_written

__all__ = ["record", "Recording", "StepRecorder", "CallObserver", "observing"]


@dataclass
class Recording:
    """What `record` saw: the graph (its outputs: the function's tensor results, then the gradients to
    reassign), the source of each placeholder, and the Python state a replay redoes."""

    graph: Graph
    sources: list = field(default_factory=list)      # per placeholder: ("arg", i) | ("grad", leaf ref) | ("object", t)
    #                                                  | ("hyper", (group, key)): a number read from an optimizer group
    outputs: list = field(default_factory=list)      # per flattened result: "tensor" or ("value", v)
    regrads: list = field(default_factory=list)      # (leaf reference, dtype) per gradient output, in order
    ungrads: list = field(default_factory=list)      # (leaf reference) per leaf whose .grad the call set to None
    optimizers: list = field(default_factory=list)   # the optimizers whose step ran
    modules: list = field(default_factory=list)      # (module, its training flag when its forward ran) per module
    written: dict = field(default_factory=dict)      # placeholder position -> the in-place writes into it
    arg_aliases: tuple = ()                          # per tensor input, the first input over the same array
    refused: str | None = None                       # why the call cannot be replayed
    not_a_step: bool = False                         # refused because its results await a backward
    switched: set = field(default_factory=set)       # ids of the modules the step's own Python switched
    result: object = None                            # the call's own result


class StepRecorder(DispatchMode):
    """The dispatch mode of `record`: runs each op for real and adds it to `graph`."""

    def __init__(self, leaves: list) -> None:
        self.graph = Graph()
        self.sources: list = []
        self.node_of: dict[int, Node] = {}         # id(native array) -> the node whose value it is
        self._alive: list = []                     # the arrays mapped (their ids stay unique)
        self._arg_of: dict[int, int] = {}          # id(an input's array) -> its first position
        for i, v in enumerate(leaves):
            if isinstance(v, Tensor):
                self._arg_of.setdefault(id(v._data), i)
        self.arg_tensor = {id(v): i for i, v in enumerate(leaves) if isinstance(v, Tensor)}
        self.first_arrays: list = []               # (tensor, its array when first met) per source read by reference
        self.results: list = []                    # (weak reference, node) per tensor an op made
        self.made: set[int] = set()                # storages made during the call
        self.made_inside: set[int] = set()         # ... while an op ran (kept by it for its backward, say)
        self.leaves: dict[int, tuple] = {}         # id(leaf) -> (leaf, its .grad when first seen)
        self._grad_owner: dict[int, Tensor] = {}   # id(a gradient's array) -> the leaf holding it
        self.inside = 0                            # > 0 while an op runs (its own reads of values are its own)
        self.ran_backward = False                  # whether the call ran a backward pass
        self.observer: CallObserver | None = None   # the optimizers and modules the call runs (record())
        self.refused: str | None = None

    def refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why

    # -- values --------------------------------------------------------------------------------
    def node(self, t: Tensor) -> Node:
        """The node whose value `t` is; a new placeholder for a tensor first met here."""
        found = self.node_of.get(id(t._data))
        if found is not None:
            return found
        self._note_leaf(t)
        i = self._arg_of.get(id(t._data))
        if i is not None:
            source = ("arg", i)
        elif id(t._storage) in self.made:        # made during the call, not by a recorded op
            source = ("object", t)
            if id(t._storage) in self.made_inside:
                self.refuse("the step reads a tensor an op made besides its results (one it kept for its "
                            "backward), which a replay would not make again")
            else:
                self.refuse("the step makes a tensor from Python or numpy data (ember.tensor(...), say), whose "
                            "values a replay would not read again: pass it as an argument")
        else:
            owner = self._grad_owner.get(id(t._data))
            source = ("grad", self.leaf_ref(owner)) if owner is not None else ("object", t)
        node = self.graph.placeholder(f"source_{len(self.sources)}")
        node.meta["val"] = meta_like(t)
        self.sources.append(source)
        self.first_arrays.append((t, t._data))
        self._bind(t._data, node)
        return node

    def leaf_ref(self, leaf: Tensor) -> tuple:
        """Where a replay finds `leaf`: ("arg", i) for the call's i-th input (a new tensor each call), else
        ("object", the tensor)."""
        i = self.arg_tensor.get(id(leaf))
        return ("arg", i) if i is not None else ("object", leaf)

    def _note_leaf(self, t: Tensor) -> None:
        ag = t._ag
        if ag is None or ag.grad_fn is not None or id(t) in self.leaves:
            return
        self.leaves[id(t)] = (t, ag.grad)
        if ag.grad is not None and id(ag.grad._storage) not in self.made:
            self._grad_owner[id(ag.grad._data)] = t

    def _result(self, t: Tensor, node: Node) -> None:
        """`t`, an op's result, is `node`'s value (an in-place op's is its argument's, already known)."""
        if id(t._data) not in self.node_of:
            self.results.append((weakref.ref(t), node))
        self._bind(t._data, node)

    def _bind(self, array, node: Node) -> None:
        self.node_of.setdefault(id(array), node)
        self._alive.append(array)

    def _convert(self, value):
        if isinstance(value, Tensor):
            return self.node(value)
        if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
            return type(value)(self._convert(v) for v in value)
        return value

    # -- ops -----------------------------------------------------------------------------------
    def __ember_dispatch__(self, op, args: tuple):
        if op.impl == "composite" and op.backward_cls is None and _records_autograd(args):
            # autograd differentiates a composite through its pieces (autograd_kernel.py), keeping the pieces'
            # values for the backward: recorded piece by piece, so the backward's reads are of recorded values
            if op.shape_rule is not None:
                op.shape_rule(op, *args)
            with self:
                return op.decomposition(*args)
        graph_args = self._learning_rate(op, args, tuple(self._convert(a) for a in args))
        for a in args:                          # leaves met as arguments (their gradients' owners)
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, Tensor):
                    self._note_leaf(t)
        if STATE.autocast:                      # the casts happen below this mode: not recorded
            self.refuse(f"{op.name} runs under autocast, whose casts a replay would not make")
        draws = random_module.draws()
        self.inside += 1
        try:
            result = op(*args)
        finally:
            self.inside -= 1
        if random_module.draws() != draws or op.generator_arg is not None:
            self.refuse(f"{op.name} draws random numbers")
        node = self.graph.call_function(op, graph_args)
        if isinstance(result, Tensor):
            node.meta["val"] = meta_like(result)
            self._result(result, node)
        elif isinstance(result, (tuple, list)):
            metas = []
            for i, r in enumerate(result):
                if isinstance(r, Tensor):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    item.meta["val"] = meta_like(r)
                    self._result(r, item)
                    metas.append(item.meta["val"])
                else:
                    metas.append(r)
            node.meta["val"] = tuple(metas)
        else:
            node.meta["val"] = result
        return result

    def _learning_rate(self, op, args: tuple, graph_args: tuple) -> tuple:
        """An optimizer's update (an op writing lists of tensors in place, with an `lr` argument, called by a
        step) reads its group's learning rate on each replay: a ("hyper", (group, "lr")) source, so a
        schedule changing it between calls needs no new recording."""
        # ember's own optimizers pass their group's lr as it is; another optimizer may scale it in ways the
        # recording cannot see (its update's lr then stays a constant, and lr a guard)
        stepping = self.observer.stepping if self.observer is not None else ()
        if not stepping or not op.written_lists or "lr" not in op.arg_names or \
                not type(stepping[-1]).__module__.startswith("ember.optim."):
            return graph_args
        at = op.arg_names.index("lr")
        params = args[0] if args and isinstance(args[0], (list, tuple)) else ()
        if at >= len(args) or not params or not isinstance(args[at], float):
            return graph_args
        for group in stepping[-1].param_groups:
            members = {id(p) for p in group["params"]}
            if all(id(p) in members for p in params):
                if isinstance(group["lr"], Tensor) or group["lr"] != args[at]:    # (one the step transformed)
                    return graph_args
                node = self.graph.placeholder(f"source_{len(self.sources)}")
                node.meta["val"] = args[at]
                self.sources.append(("hyper", (group, "lr")))
                return graph_args[:at] + (node,) + graph_args[at + 1:]
        return graph_args

    def host_read(self, t: Tensor) -> None:
        """ember.frontend.tensor's HOST_READ_HOOK: Python reading a tensor's values outside any op."""
        if not self.inside:
            self.refuse("the step reads a tensor's values in Python (.item(), bool(), .tolist(), printing)")


def arg_aliases(leaves: list) -> tuple:
    """Per tensor input, the position of the first input over the same array (a recording reads two inputs
    that are one tensor as one value, so a replay needs them the same again)."""
    first: dict = {}
    return tuple(first.setdefault(id(v._data), i) for i, v in enumerate(leaves) if isinstance(v, Tensor))


def _records_autograd(args: tuple) -> bool:
    """Whether eager autograd records a call with `args` (grad mode on, a tensor requiring grad)."""
    from ember.frontend.autograd.grad_mode import is_grad_enabled

    if not is_grad_enabled():
        return False
    for a in args:
        if isinstance(a, Tensor) and a.requires_grad:
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(t, Tensor) and t.requires_grad for t in a):
            return True
    return False


class CallObserver:
    """What one thread's call does in Python that a recording depends on, seen through process-wide hooks
    that answer that thread only: the optimizers that step (in order, and the one stepping now) and the
    modules whose forward runs, each with its training flag then."""

    def __init__(self) -> None:
        self.optimizers: list = []
        self.stepping: list = []                   # the optimizers whose step is running (innermost last)
        self.modules: dict[int, tuple] = {}        # id(module) -> (module, its training flag at its forward)
        self.thread = threading.get_ident()

    def _stepped(self, optimizer, args, kwargs) -> None:
        if threading.get_ident() == self.thread:
            if all(o is not optimizer for o in self.optimizers):
                self.optimizers.append(optimizer)
            self.stepping.append(optimizer)

    def _stepped_out(self, optimizer, args, kwargs) -> None:
        if threading.get_ident() == self.thread and self.stepping:
            self.stepping.pop()

    def _entered(self, module, args) -> None:
        if threading.get_ident() == self.thread:
            self.modules.setdefault(id(module), (module, module.training))


@contextlib.contextmanager
def observing():
    """A CallObserver of this thread while the block runs."""
    from ember.nn.modules.hooks import register_module_forward_pre_hook
    from ember.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    observer = CallObserver()
    hooks = [register_optimizer_step_pre_hook(observer._stepped),
             register_optimizer_step_post_hook(observer._stepped_out),
             register_module_forward_pre_hook(observer._entered)]
    try:
        yield observer
    finally:
        for h in hooks:
            h.remove()


def record(fn, args: tuple, kwargs: dict) -> Recording:
    """Run `fn(*args, **kwargs)` once for real under a StepRecorder; the Recording of what it did (its
    `result` is the call's own result, whether or not the call can be replayed)."""
    leaves = tree_flatten((args, kwargs))[0]
    recorder = StepRecorder(leaves)
    # the hooks are process-wide: each answers the recording thread only (others run as they would)
    me = threading.get_ident()
    previous_alloc, previous_read = tensor_module.ALLOC_HOOK, tensor_module.HOST_READ_HOOK

    def alloc(storage) -> None:
        if threading.get_ident() == me:
            recorder.made.add(id(storage))
            if recorder.inside:
                recorder.made_inside.add(id(storage))
            else:                           # (an id freed inside an op and reused here)
                recorder.made_inside.discard(id(storage))
        if previous_alloc is not None:
            previous_alloc(storage)

    def host_read(t) -> None:
        if threading.get_ident() == me:
            recorder.host_read(t)
        elif previous_read is not None:
            previous_read(t)
    tensor_module.ALLOC_HOOK, tensor_module.HOST_READ_HOOK = alloc, host_read
    from ember.frontend.autograd.engine import backward_runs

    runs = backward_runs()
    try:
        with observing() as recorder.observer, recorder:
            result = fn(*args, **kwargs)
        recorder.ran_backward = backward_runs() != runs
    finally:
        tensor_module.ALLOC_HOOK, tensor_module.HOST_READ_HOOK = previous_alloc, previous_read
    observer = recorder.observer
    recording = Recording(recorder.graph, recorder.sources, result=result, optimizers=observer.optimizers,
                          modules=list(observer.modules.values()), arg_aliases=arg_aliases(leaves))
    _finish(recorder, recording, result)
    return recording


def _finish(recorder: StepRecorder, recording: Recording, result) -> None:
    """The graph's outputs (the results' tensors, then the gradients to reassign), the written sources,
    and the reasons to refuse found at the end. Leaves are named by `StepRecorder.leaf_ref`."""
    graph = recording.graph
    leaf_ref = recorder.leaf_ref

    # a tensor read by reference that was a leaf's .grad when the call began is read from the leaf on each
    # replay (whichever was met first: the gradient is read before its leaf, say, by a hand-written update)
    recording.sources = [("grad", leaf_ref(recorder._grad_owner[id(ref._data)]))
                         if kind == "object" and id(ref._data) in recorder._grad_owner else (kind, ref)
                         for kind, ref in recording.sources]
    for t, array in recorder.first_arrays:
        if t._data is not array:
            recorder.refuse("the step rebinds a tensor's data (`.data = ...`), which a replay would not")
    outputs = []
    pending = False
    for v in tree_flatten(result)[0]:
        if isinstance(v, Tensor):
            outputs.append(recorder.node(v))
            recording.outputs.append("tensor")
            pending |= v.requires_grad
        else:
            recording.outputs.append(("value", v))
    for leaf, before in recorder.leaves.values():
        ag = leaf._ag
        now = ag.grad if ag is not None else None
        if now is before:
            continue
        if now is None:
            recording.ungrads.append(leaf_ref(leaf))
            continue
        node = recorder.node_of.get(id(now._data))
        if node is None or node.op == "placeholder":
            recorder.refuse("the step sets a .grad to a tensor made outside its ops")
            continue
        outputs.append(node)
        recording.regrads.append((leaf_ref(leaf), now.dtype))
    if pending and not recorder.ran_backward:
        recording.not_a_step = recorder.refused is None     # (when this is the reason it refuses)
        recorder.refuse("the results need a backward the call does not run (not a whole step)")
    # a tensor an op made that outlives the call, other than what the replay hands back, was kept in Python
    # (an optimizer's new state, a running average in a dict): a replay would leave it as it is
    handed_back = set(outputs)
    for ref, node in recorder.results:
        if ref() is not None and node not in handed_back:
            recorder.refuse("the step keeps a tensor it made (new optimizer state, a value stored in a dict or "
                            "an attribute), which a replay would not update")
            break
    graph.output(tuple(outputs))
    graph.eliminate_dead_code()
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {n: i for i, n in enumerate(placeholders)}
    written: dict = {}
    for node in graph.nodes:
        if node.op == "call_function":
            for t in values_written(node):
                base = view_base(t)
                if base in position:
                    written[position[base]] = written.get(position[base], 0) + 1
    recording.written = written
    recording.refused = recorder.refused
