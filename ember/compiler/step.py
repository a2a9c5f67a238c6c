"""`mode="reduce-overhead"` on a function: a whole step recorded once, then replayed natively.

A training step (`zero_grad`, forward, `loss.backward()`, `optimizer.step()`) is more than one graph
to a tracing capture: the backward and the update run in Python outside the forward. So, as a CUDA
graph captured around a whole step does, `StepReplays` records what one real call runs (recording.py)
and replays that kernel sequence on later calls, with no dispatcher, no autograd bookkeeping and no
optimizer Python on the path; pointwise chains are fused as in any native replay (fusion.py).

Per guard key (guards.py: the inputs' shapes, dtypes and devices, grad mode, autocast): the first
call runs eagerly (a warm-up: optimizers make their state on their first step, which a replay must
not redo; it also notes the optimizers that step and the parameters its ops read); then a program is
recorded per *pattern* of those parameters (whether each requires grad and has a gradient: a step
recorded with gradients absent makes them afresh, one recorded with them present adds to them), and
later calls replay the program of their pattern. A replay first checks what the recording read
outside the guard key: every source tensor's shape, which inputs are one tensor, the
hyper-parameters, parameter lists and state of the optimizers that stepped, and the training flags of
the modules that ran (a module the step switches itself, `model.train()` inside, is switched by the
replay instead); when one changed, the call runs eagerly as a new warm-up and the next is
recorded (a recompile, counted against `recompile_limit`). A step the recording refuses
(recording.py lists why) runs eagerly; a function whose results await a backward (no whole step)
takes the default compiled path. A replay's results are the step's arrays in new Tensors, detached
(their backward already ran); each gradient the step made becomes its leaf's `.grad` again (an
input's: this call's input), and the version counters of what it wrote advance by its writes.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

from ember.frontend.mode import DispatchMode
from ember.frontend.tensor import Tensor, make_tensor
from ember.nn.parameter import Parameter
from ember.optim.optimizer import _number
from ember.utils.pytree import tree_flatten, tree_unflatten

from . import logs
from .recording import Recording, arg_aliases, observing, record

__all__ = ["StepReplays", "StepProgram"]

class _Stale(Exception):
    """A replay found state the recording did not see (a source's shape, a hyper-parameter)."""


class StepProgram:
    """A Recording made runnable: `program(leaves)` replays the step on this call's inputs (raises _Stale
    when something read outside the guard key changed).

    The replay takes its inputs grouped by source (`order`): the tensors read by reference first (most
    of a step's: parameters, optimizer state), whose arrays are read in one pass and checked only when
    one is not the array the previous call read, then the call's inputs, then gradients read from
    their leaves, then learning rates read from their parameter groups."""

    def __init__(self, recording: Recording, run_for, key: int, device, live: set = frozenset()) -> None:
        self.graph = recording.graph                  # what was recorded (printed by EMBER_LOGS=graph)
        self.sources = recording.sources
        placeholders = [n for n in recording.graph.nodes if n.op == "placeholder"]
        shape = {id(n): tuple(n.meta["val"].shape) for n in placeholders if isinstance(n.meta["val"], Tensor)}
        by_kind: dict = {"object": [], "arg": [], "grad": [], "hyper": []}
        for (kind, ref), node in zip(recording.sources, placeholders):
            by_kind[kind].append((ref, node))
        self.order = [node for kind in ("object", "arg", "grad", "hyper") for _, node in by_kind[kind]]
        self._run = run_for(self.order)
        self._objects = [ref for ref, _ in by_kind["object"]]
        self._object_shapes = [shape[id(n)] for _, n in by_kind["object"]]
        self._last = [None] * len(self._objects)
        self._args = [(ref, shape[id(n)]) for ref, n in by_kind["arg"]]
        self._grads = [(ref, shape[id(n)]) for ref, n in by_kind["grad"]]
        # the learning rates read from their groups on each call (those the replay's graph still reads: a
        # decomposition re-traced for the backend may have made one a constant, which is then a guard)
        self._hypers = [ref for ref, n in by_kind["hyper"]]
        dynamic = {(id(group), key) for (group, key), n in by_kind["hyper"] if n.name in live}
        self._aliases = recording.arg_aliases
        position = {id(n): i for i, n in enumerate(placeholders)}
        writes = {id(placeholders[i]): count for i, count in recording.written.items()}
        # (where the tensor is, how many in-place writes the step makes into it) per written source
        self._written = [((kind, ref), writes[id(n)]) for kind in ("object", "arg", "grad")
                         for ref, n in by_kind[kind] if id(n) in writes]
        self._key, self._device = key, device
        self._outputs = recording.outputs
        self._out_spec = tree_flatten(recording.result)[1]
        outputs = recording.graph.output_node.args[0]
        self._out_dtypes = [n.meta["val"].dtype for n in outputs]
        # an output that is a source is returned as that tensor: (kind, ref) for those, None for the rest
        self._out_sources = [recording.sources[position[id(n)]] if n.op == "placeholder" else None for n in outputs]
        self._regrads = [leaf for leaf, _ in recording.regrads]
        self._ungrads = recording.ungrads
        self._optimizers = _OptimizerGuard(recording.optimizers, dynamic)
        # a module the step itself switches (train()/eval() inside) is switched by the replay too, to the flag
        # the call left; the others are guards: their flag when their forward ran
        switched = recording.switched
        self._modules = [m for m, _ in recording.modules if id(m) not in switched]
        self._training = tuple(flag for m, flag in recording.modules if id(m) not in switched)
        self._switched = [(m, m.training) for m, _ in recording.modules if id(m) in switched]
        self._single = self._outputs == ["tensor"] and self._out_spec.kind == "leaf"

    def __call__(self, leaves: list):
        arrays = list(map(_DATA, self._objects))
        if not all(map(operator.is_, arrays, self._last)):
            if any(a.shape != s for a, s in zip(arrays, self._object_shapes)):
                raise _Stale("a tensor the step reads has another shape")
            self._last = arrays[:]
        for i, s in self._args:
            a = leaves[i]._data
            if a.shape != s:
                raise _Stale("an input has another shape")
            arrays.append(a)
        if self._aliases and arg_aliases(leaves) != self._aliases:
            raise _Stale("the inputs that are one tensor are others than when the step was recorded")
        for leaf, s in self._grads:
            g = _grad(_leaf(leaf, leaves))
            if g is None or g._data.shape != s:
                raise _Stale("a gradient the step reads is gone or has another shape")
            arrays.append(g._data)
        for group, name in self._hypers:
            arrays.append(_number(group[name]))
        if not self._optimizers.holds():
            raise _Stale("an optimizer's hyper-parameters, parameters or state changed")
        if self._modules and tuple(m.training for m in self._modules) != self._training:
            raise _Stale("a module's training flag changed")
        results = self._run(*arrays)
        self._advance_versions(leaves)
        for module, flag in self._switched:
            module.training = flag
        key, device = self._key, self._device
        made = [make_tensor(a, dt, device, key, None) if s is None else _source_tensor(s, leaves)
                for a, dt, s in zip(results, self._out_dtypes, self._out_sources)]
        n = len(made) - len(self._regrads)
        for leaf, g in zip(self._regrads, made[n:]):
            _leaf(leaf, leaves)._ag.grad = g
        for leaf in self._ungrads:
            leaf = _leaf(leaf, leaves)
            if leaf._ag is not None:
                leaf._ag.grad = None
        if self._single:                    # the common step: it returns its loss
            return made[0]
        made = iter(made[:n])
        return tree_unflatten([next(made) if o == "tensor" else o[1] for o in self._outputs], self._out_spec)

    def _advance_versions(self, leaves: list) -> None:
        """The version counters of the tensors the step wrote in place, by as many writes as eager ops made."""
        for source, count in self._written:
            _source_tensor(source, leaves)._storage.version += count


_DATA = operator.attrgetter("_data")


def _leaf(ref: tuple, leaves: list) -> Tensor:
    """The leaf a recording's reference names: ("arg", i), this call's i-th input, or ("object", tensor)."""
    kind, value = ref
    return leaves[value] if kind == "arg" else value


def _source_tensor(source: tuple, leaves: list) -> Tensor:
    kind, ref = source
    if kind == "hyper":
        group, name = ref
        return group[name]
    return leaves[ref] if kind == "arg" else _grad(_leaf(ref, leaves)) if kind == "grad" else ref


class _OptimizerGuard:
    """What a recorded update depends on besides tensors, checked each replay: per optimizer that stepped,
    its state dict's identity (load_state_dict replaces it), and per parameter group its parameters and
    its other entries (lr, betas, weight_decay, ...; a tensor entry by identity)."""

    def __init__(self, optimizers: list, dynamic: set = frozenset()) -> None:
        self._checks = []
        for opt in optimizers:
            groups = []
            for g in opt.param_groups:
                keys = [k for k in g if k != "params" and not isinstance(g[k], Tensor) and (id(g), k) not in dynamic]
                tensor_keys = [k for k in g if k != "params" and isinstance(g[k], Tensor)]
                values = _getter(keys)
                groups.append((g, values, values(g), tensor_keys, _ids(g, tensor_keys),
                               tuple(map(id, g["params"]))))
            self._checks.append((opt, opt.state, len(opt.param_groups), groups))

    def holds(self) -> bool:
        for opt, state, n_groups, groups in self._checks:
            if opt.state is not state or len(opt.param_groups) != n_groups:
                return False
            for (g, values, before, tensor_keys, tensor_ids, params), now in zip(groups, opt.param_groups):
                try:
                    if now is not g or values(g) != before or tuple(map(id, g["params"])) != params \
                            or (tensor_keys and _ids(g, tensor_keys) != tensor_ids):
                        return False
                except KeyError:            # an entry was removed
                    return False
        return True


def build(recording: Recording, leaves: list) -> StepProgram | None:
    """The StepProgram of `recording`, or None when its graph does not fit native replay (native.py)."""
    from .decompose import decomposed
    from .native import backend_of, kept_ops, native_runner

    tensors = [_source_tensor(source, leaves) for source in recording.sources]
    found = backend_of(tensors)
    if found is None:
        return None
    graph = decomposed(recording.graph, kept_ops(found[0]))
    if graph is None:
        return None
    nodes = list(graph.nodes)
    outputs = list(nodes[-1].args[0])
    by_name = {n.name: n for n in nodes if n.op == "placeholder"}

    def run_for(order: list):
        """The native runner taking the placeholders' values in `order` (the recording's placeholders)."""
        return native_runner(nodes, [by_name[n.name] for n in order], outputs, *found,
                             wrap=[False] * len(outputs), writes_inputs=True)
    live = {n.name for n in nodes if n.op == "placeholder" and n.users}
    program = StepProgram(recording, run_for, *found, live=live)
    return program if program._run is not None else None


def _grad(leaf: Tensor):
    ag = leaf._ag
    return ag.grad if ag is not None else None


def _getter(keys: list):
    """A function of a parameter group returning the tuple of its entries at `keys` (itemgetter's speed)."""
    if len(keys) > 1:
        return operator.itemgetter(*keys)
    return (lambda g, key=keys[0]: (g[key],)) if keys else (lambda g: ())


def _ids(group: dict, keys: list) -> tuple:
    return tuple(id(group[k]) for k in keys)


@dataclass
class _Slot:
    programs: dict = field(default_factory=dict)       # the recorded programs by _pattern of `watch`
    refused: bool = False
    not_a_step: bool = False                           # refused because its results await a backward
    optimizers: list = field(default_factory=list)     # those the warm-up call stepped
    modules: list = field(default_factory=list)        # the modules whose forward the warm-up ran
    watch: list | None = None                          # the parameters and leaves the warm-up read (None: none yet)

    @property
    def program(self) -> StepProgram | None:
        """The program recorded first (for reading: tests, logs)."""
        return next(iter(self.programs.values()), None)


def _pattern(watch: list) -> tuple:
    """Per watched tensor, whether it requires grad and whether it has a gradient: a recording made with
    gradients absent (made afresh by the backward) must not replay where they are there (accumulated into)."""
    return tuple((t.requires_grad, _grad(t) is not None) for t in watch)


class _LeafWatch(DispatchMode):
    """The parameters and leaf tensors requiring grad that the ops of a call read (the call's own inputs
    aside: they are new each call)."""

    def __init__(self, inputs: list) -> None:
        self.seen: dict[int, Tensor] = {}
        self._inputs = {id(v) for v in inputs}

    def __ember_dispatch__(self, op, args: tuple):
        for a in args:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, Tensor) and id(t) not in self._inputs and id(t) not in self.seen and (
                        isinstance(t, Parameter) or (t._ag is not None and t._ag.grad_fn is None)):
                    self.seen[id(t)] = t
        return op(*args)


class StepReplays:
    """The reduce-overhead path of one compiled function: a recorded step per guard key (see the module
    docstring). `fallback(key, leaves, args, kwargs)` is the default compiled path."""

    def __init__(self, code, fallback) -> None:
        self.code = code
        self.fallback = fallback
        self.slots: dict[tuple, _Slot] = {}

    def __call__(self, key: tuple, leaves: list, args: tuple, kwargs: dict):
        slot = self.slots.get(key)
        if slot is None:
            slot = self.slots[key] = _Slot()
        if slot.refused:
            # a function that is no whole step (its results await a backward) takes the default path; a step
            # the recording refused runs eagerly (the default path's capture would break on its backward
            # anyway, after running its Python once more)
            if slot.not_a_step:
                return self.fallback(key, leaves, args, kwargs)
            return self.code.fn(*args, **kwargs)
        if slot.watch is None:
            return self._warm_up(slot, leaves, args, kwargs)
        pattern = _pattern(slot.watch)
        program = slot.programs.get(pattern)
        if program is not None:
            try:
                return program(leaves)
            except _Stale as exc:
                # something the step reads changed (a new parameter group, a load_state_dict): run this call
                # eagerly as a new warm-up (optimizers make new state on their first step) and record the next
                del slot.programs[pattern]
                logs.log("recompiles", f"recording {self.code._name()} again: {exc}")
                return self._warm_up(slot, leaves, args, kwargs)
        return self._record(slot, pattern, leaves, args, kwargs)

    def _warm_up(self, slot: _Slot, leaves: list, args: tuple, kwargs: dict):
        """An eager call noting the optimizers that step and the parameters and leaves its ops read, whose
        gradients' presence and requires_grad then choose the recorded program (gradients accumulated over
        calls, or made afresh; a parameter frozen or not)."""
        watch = _LeafWatch(leaves)
        with observing() as observer, watch:
            result = self.code.fn(*args, **kwargs)
        slot.optimizers, slot.modules = observer.optimizers, [m for m, _ in observer.modules.values()]
        slot.watch = list(watch.seen.values())
        return result

    def _record(self, slot: _Slot, pattern: tuple, leaves: list, args: tuple, kwargs: dict):
        from .compiled import _COMPILING

        code = self.code
        if code.compiles >= code.recompile_limit:
            code._warn_limit("its calls now run eagerly")
            return code.fn(*args, **kwargs)
        with _COMPILING:
            before = _OptimizerGuard(slot.optimizers)
            flags = {id(m): m.training for m in slot.modules}
            recording = record(code.fn, args, kwargs)
            # the modules whose flag at their forward is not the flag they had when the call began: switched by
            # the step's own Python (train() or eval() inside)
            recording.switched = {id(m) for m, flag in recording.modules if flags.get(id(m), flag) != flag}
            if recording.refused is None and not before.holds():
                # a replay runs no Python: an LR scheduler stepping inside the step would never step again
                recording.refused = ("the step changes an optimizer's hyper-parameters (an LR scheduler stepping "
                                     "inside it, say), which a replay would not")
            if recording.refused is None:
                program = build(recording, leaves)
                if program is None:
                    recording.refused = "an op of the step has no native kernel to replay"
                else:
                    slot.programs[pattern] = program
                    code.compiles += 1
        if recording.refused is not None:
            slot.refused = True
            slot.not_a_step = recording.not_a_step
            logs.log("graph_breaks", f"{code._name()}: the step is not replayed whole: {recording.refused}")
        else:
            logs.log("graph", f"{code._name()} (the recorded step):\n{recording.graph}")
        return recording.result
