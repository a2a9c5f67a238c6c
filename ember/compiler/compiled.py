"""`CompiledCode`: the compiled entries of one callable, chosen by guards, compiled on a miss.

Each entry is either a compiled program (the capture's ExportedProgram and the backend's callable)
or, after a graph break, the callable itself run eagerly. A call computes its guard key
(guards.py) and runs the entry compiled for it; a miss compiles a new entry (a recompile, logged
with the guard that failed). After `recompile_limit` recompiles a miss runs eagerly, with one
warning, as torch does. With `dynamic=None` (the default) a dimension whose size differs from
the previous compile's is made dynamic for the next one; `dynamic=True` makes every dimension of
size 2 or more dynamic from the first compile.
"""
from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

from ember.frontend.tensor import Tensor
from ember.utils.pytree import tree_flatten, tree_unflatten

from . import logs
from .backends import lookup_backend
from .breaks import GraphBreak, GraphBreakError
from .capture import CaptureBreak, capture
from .guards import difference, guard_key

__all__ = ["CompiledCode", "reset"]

_LIVE: "weakref.WeakSet[CompiledCode]" = weakref.WeakSet()
# one compile at a time: a capture sets process-wide hooks (the allocation hook, the module hooks)
_COMPILING = threading.RLock()


@dataclass
class Entry:
    key: tuple
    program: object = None               # the ExportedProgram, None for an eager entry
    run: Callable | None = None          # the backend's callable over (state, user inputs)
    graph_break: GraphBreak | None = None
    shapes: list = field(default_factory=list)   # the example's tensor shapes per leaf (None: not a tensor)
    branches: int = 0                            # branches on tensor values decided in the capture
    variants: list = field(default_factory=list)  # entries for the same key whose branches go other ways
    state: list = field(default_factory=list)    # (dict, name) per state input: where it is read each call
    tensor_leaves: tuple = ()                    # the positions of the tensor leaves (the graph's inputs)


class CompiledCode:
    def __init__(self, fn: Callable, module, settings: dict) -> None:
        self.fn = fn
        self.module = module
        self.fullgraph = settings["fullgraph"]
        self.dynamic = settings["dynamic"]
        self.backend = lookup_backend(settings["backend"])
        # the default backend replays programs natively (native.py, joint.py); "aot_eager" captures the
        # joint graph too, and dispatches its ops
        self.native = settings["backend"] in ("inductor", "ember")
        self.aot = settings["backend"] == "aot_eager"
        self.recompile_limit = settings["recompile_limit"]
        self.entries: dict[tuple, Entry] = {}
        self.compiles = 0
        self.dynamic_dims: dict[int, set[int]] = {}
        self.graph_breaks: list[GraphBreak] = []
        self._limit_warned = False
        # the modules whose training flags are guards, listed once (a submodule added later is not seen)
        self._module_list = list(module.modules()) if module is not None else []
        self._specs: dict[int, object] = {}      # the input structure of n positional tensors and no keywords
        # reduce-overhead on a function: whole steps recorded and replayed (step.py)
        self.steps = None
        self._broken = None
        if settings.get("mode") == "reduce-overhead" and module is None and self.native:
            from .step import StepReplays

            self.steps = StepReplays(self, self._call)
        _LIVE.add(self)

    def __call__(self, args: tuple, kwargs: dict):
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            leaves = list(args)                  # the common call: its structure is known without a walk
            spec = self._specs.get(len(args))
            if spec is None:
                spec = self._specs[len(args)] = tree_flatten((args, kwargs))[1]
        else:
            leaves, spec = tree_flatten((args, kwargs))
        key = (spec, guard_key(leaves, self.dynamic_dims, self._module_list))
        if self.steps is not None:
            return self.steps(key, leaves, args, kwargs)
        return self._call(key, leaves, args, kwargs)

    def _call(self, key: tuple, leaves: list, args: tuple, kwargs: dict):
        entry = self.entries.get(key)
        if entry is None:
            with _COMPILING:
                entry = self.entries.get(key) or self._compile(key, leaves, args, kwargs)
            if entry is None:                       # past the recompile limit: eager
                return self.fn(*args, **kwargs)
        if entry.run is None:
            if entry.graph_break is not None and self.native:
                # a program the capture cannot take whole (a training step: backward and the optimizer inside)
                # is recorded as it runs and replayed (step.py), where the recording takes it; else eager
                return self._break_steps()(key, leaves, args, kwargs)
            return self.fn(*args, **kwargs)
        if not entry.branches:
            return self._run(entry, leaves, args, kwargs)
        return self._run_branching(entry, leaves, args, kwargs)

    def _run(self, entry: Entry, leaves: list, args: tuple, kwargs: dict):
        program = entry.program
        values = [d[name] for d, name in entry.state]
        if program.range_constraints:            # sizes in their ranges, the shape guards
            values += program.user_leaves(args, kwargs)
        else:                                    # the key matched: every guard of a static program holds
            values += [leaves[i] for i in entry.tensor_leaves]
        return tree_unflatten(list(entry.run(*values)), program.out_spec)

    def _run_branching(self, entry: Entry, leaves: list, args: tuple, kwargs: dict):
        """A program with decided branches (branches.py): the variant whose branches go this call's way,
        captured now (a recompile) when none does; eager past the recompile limit."""
        from .branches import BranchGuardFailed

        for variant in [entry] + entry.variants:
            try:
                return self._run(variant, leaves, args, kwargs)
            except BranchGuardFailed:
                continue
        with _COMPILING:
            if self.compiles >= self.recompile_limit:
                return self.fn(*args, **kwargs)
            logs.log("recompiles", f"recompiling {self._name()}: a branch on a tensor's value went the other way")
            variant = self._capture(leaves, args, kwargs)
            self.compiles += 1
            entry.variants.append(variant)
        if variant.run is None:
            return self.fn(*args, **kwargs)
        return self._run(variant, leaves, args, kwargs)

    def _break_steps(self):
        """The StepReplays of this callable's graph-broken entries (made on first use), whose calls the
        recording refuses run eagerly."""
        if self._broken is None:
            from .step import StepReplays

            self._broken = StepReplays(self, lambda key, leaves, args, kwargs: self.fn(*args, **kwargs))
        return self._broken

    # -- compiling -----------------------------------------------------------------------------
    def _compile(self, key: tuple, leaves: list, args: tuple, kwargs: dict) -> Entry | None:
        if self.compiles > self.recompile_limit:
            return None
        if self.compiles == self.recompile_limit:
            self.compiles += 1
            self._warn_limit("calls failing every guard now run eagerly")
            return None
        if self.entries:
            previous = next(reversed(self.entries.values()))
            reason = difference(previous.key[1], key[1])
            logs.log("recompiles", f"recompiling {self._name()}: {reason}")
            if self.dynamic is None:
                self._widen(previous, leaves)
        elif self.dynamic:
            self._widen_all(leaves)
        entry = self._capture(leaves, args, kwargs)
        # the key again: dimensions may have become dynamic (a size that changed) or static again (one the
        # program fixed), and an entry with that key may exist already
        entry.key = key = (key[0], guard_key(leaves, self.dynamic_dims, self._module_list))
        if key not in self.entries:
            self.compiles += 1
            self.entries[key] = entry
        return self.entries[key]

    def _warn_limit(self, then: str) -> None:
        """Warn, once per compiled callable, that it hit the recompile limit and what its calls do `then`
        (the warning points at the user's call: five frames up, from _compile or StepReplays._record)."""
        if not self._limit_warned:
            self._limit_warned = True
            warnings.warn(f"ember.compile: {self._name()} hit the recompile limit ({self.recompile_limit}); {then}",
                          stacklevel=5)

    def _capture(self, leaves: list, args: tuple, kwargs: dict) -> Entry:
        shapes = [tuple(v.shape) if isinstance(v, Tensor) else None for v in leaves]
        decided: list = []
        try:
            program = self._capture_specialising(leaves, args, kwargs, decided)
        except CaptureBreak as exc:
            self.graph_breaks.append(exc.graph_break)
            logs.log("graph_breaks", f"{self._name()}: {exc.graph_break}")
            if self.fullgraph:
                raise GraphBreakError(f"ember.compile(fullgraph=True): {self._name()} cannot be captured whole: "
                                      f"{exc.graph_break}") from None
            return Entry((), graph_break=exc.graph_break, shapes=shapes)
        for graph_break in decided:             # decided branches: breaks in torch's count, checked here
            self.graph_breaks.append(graph_break)
            logs.log("graph_breaks", f"{self._name()}: {graph_break}")
        logs.log("graph", f"{self._name()}:\n{program.graph}")
        state = self._state_places(program)
        example = [d[name] for d, name in state] + program.user_leaves(args, kwargs)
        run = self._native(program, example) if self.native else None
        if run is None and (self.native or self.aot) and self._wants_joint(leaves, example):
            joint = self._joint(args, kwargs)
            if joint is not None:
                program, run = joint
        return Entry((), program, run or self.backend(program.graph_module, example), shapes=shapes, state=state,
                     tensor_leaves=tuple(i for i, v in enumerate(leaves) if isinstance(v, Tensor)),
                     branches=len(decided))

    def _wants_joint(self, leaves: list, example: list) -> bool:
        """Whether to capture the backward too: autograd records, parameters need gradients (user inputs do
        not: their gradients are not captured), sizes are static and autocast is off."""
        from ember.dispatcher.state import STATE
        from ember.frontend.autograd.grad_mode import is_grad_enabled

        return (is_grad_enabled() and not STATE.autocast and not self.dynamic_dims
                and any(isinstance(v, Tensor) and v.requires_grad for v in example)
                and not any(isinstance(v, Tensor) and v.requires_grad for v in leaves))

    def _joint(self, args: tuple, kwargs: dict):
        """(the joint program, its runner) (joint.py), or None when it does not fit native replay."""
        from ember.dispatcher import ALL_OPS
        from ember.dispatcher import keys as K

        from .joint import JointCaptureMode, joint_runner
        from .native import kept_ops

        tensors = [v for v in tree_flatten((args, kwargs))[0] if isinstance(v, Tensor)]
        if not tensors:
            return None
        # the forward keeps explicit ops whole, with their own derivative formulas: decomposing one would
        # differentiate its pieces instead (a layer norm's backward from means and products); one without a
        # native kernel is decomposed after the capture (decompose.py). The backward's ops are not
        # differentiated: it keeps only the ops with a native kernel
        native = kept_ops(tensors[0]._keys & K.BACKEND_MASK)
        table = {**native, **{name: None for name, op in ALL_OPS.items() if op.impl == "explicit"}}
        modes: list = []

        def make_mode(graph, lift):
            modes.append(JointCaptureMode(graph, lift, table, native))
            return modes[-1]
        try:
            program = capture(self.fn, self.module, args, kwargs, None, make_mode,
                              branches=None if self.fullgraph else [])
        except CaptureBreak:
            return None
        example = [d[name] for d, name in self._state_places(program)] + program.user_leaves(args, kwargs)
        if self.aot:
            from .replay import dispatched_runner

            run = joint_runner(program, modes[0], example, program.out_spec.num_leaves, dispatched_runner)
        else:
            # explicit ops without a native kernel (most on opencl): their pieces, the formulas already fixed
            graph, mode = _decomposed_joint(program.graph, modes[0], native)
            if graph is None:
                return None
            run = joint_runner(SimpleNamespace(graph=graph, range_constraints=program.range_constraints), mode,
                               example, program.out_spec.num_leaves)
        return (program, run) if run is not None else None

    def _native(self, program, example: list):
        """The native replay of a program run without autograd or autocast (native.py), else None."""
        from ember.dispatcher.state import STATE
        from ember.frontend.autograd.grad_mode import is_grad_enabled

        if STATE.autocast or (is_grad_enabled() and any(isinstance(v, Tensor) and v.requires_grad for v in example)):
            return None
        from .native import kept_ops, native_replay

        run = native_replay(program, example)
        tensors = [v for v in example if isinstance(v, Tensor)]
        if run is None and tensors and not program.range_constraints:
            from ember.dispatcher import keys as K

            try:
                decomposed = program.run_decompositions(kept_ops(tensors[0]._keys & K.BACKEND_MASK))
            except Exception:               # a program the decomposing capture cannot take: not replayed
                return None
            run = native_replay(decomposed, example) if _same_inputs(program, decomposed) else None
        return run

    def _capture_specialising(self, leaves: list, args: tuple, kwargs: dict, decided: list):
        """The capture; a dynamic dimension the program fixes (a Linear's features) becomes static and the
        capture runs again, as torch.compile specialises it (where ember.export refuses). `decided` gets a
        GraphBreak per branch on a tensor's value the capture decided (none with fullgraph, which refuses)."""
        from ember.export.symbolic import SpecializedError

        while True:
            decided.clear()
            try:
                return capture(self.fn, self.module, args, kwargs, self._dims(leaves),
                               branches=None if self.fullgraph else decided)
            except SpecializedError as exc:
                for name in exc.names:
                    i, d = (int(n) for n in name[1:].split("_"))
                    self.dynamic_dims[i].discard(d)
                if not any(self.dynamic_dims.values()):
                    self.dynamic_dims.clear()

    # -- dynamic dimensions --------------------------------------------------------------------
    def _widen(self, previous: Entry, leaves: list) -> None:
        """Make dynamic the dimensions whose sizes differ from `previous`'s (both 2 or more)."""
        for i, (old, v) in enumerate(zip(previous.shapes, leaves)):
            if old is None or not isinstance(v, Tensor) or len(old) != v.dim():
                continue
            for d, (a, b) in enumerate(zip(old, v.shape)):
                if a != b and a > 1 and b > 1:
                    self.dynamic_dims.setdefault(i, set()).add(d)

    def _widen_all(self, leaves: list) -> None:
        for i, v in enumerate(leaves):
            if isinstance(v, Tensor):
                self.dynamic_dims[i] = set(range(v.dim()))

    def _dims(self, leaves: list) -> list | None:
        """The Dims of this capture per leaf (dynamic dimensions whose size here is 2 or more)."""
        if not self.dynamic_dims:
            return None
        from ember.export import Dim

        dims = []
        for i, v in enumerate(leaves):
            chosen = {d: Dim(f"s{i}_{d}") for d in self.dynamic_dims.get(i, ()) if isinstance(v, Tensor)
                      and v.shape[d] > 1}
            dims.append(chosen or None)
        return dims

    # -- helpers ---------------------------------------------------------------------------------
    def _state_places(self, program) -> list:
        """Where each state input of `program` is read on every call: the owning module's parameter or
        buffer dict (an optimizer's in-place update, a reassigned parameter, a load_state_dict are seen),
        or the program's constants."""
        from ember.export.graph_signature import InputKind

        places = []
        for spec in program.graph_signature.input_specs:
            if spec.kind is InputKind.USER_INPUT:
                continue
            if spec.kind is InputKind.CONSTANT_TENSOR or self.module is None:
                places.append((program.constants, spec.target))
                continue
            *path, name = spec.target.split(".")
            owner = self.module
            for atom in path:
                owner = getattr(owner, atom)
            places.append((owner._parameters if spec.kind is InputKind.PARAMETER else owner._buffers, name))
        return places

    def _name(self) -> str:
        fn = self.fn
        return getattr(fn, "__qualname__", None) or type(fn).__name__


def _decomposed_joint(graph, mode, native: dict):
    """(the joint graph with the ops outside `native` decomposed (decompose.py), the capture's record of
    tangents and differentiable inputs on its placeholders), or (None, None); `graph` and `mode` themselves
    when every op is native."""
    from .decompose import decomposed

    new = decomposed(graph, native)
    if new is None:
        return None, None
    if new is graph:
        return graph, mode
    by_name = {n.name: n for n in new.nodes if n.op == "placeholder"}
    return new, SimpleNamespace(tangents=[by_name[t.name] for t in mode.tangents], tangent_of=mode.tangent_of,
                                differentiable=[(by_name[n.name], v) for n, v in mode.differentiable])


def _same_inputs(a, b) -> bool:
    """Whether two programs take the same inputs in the same order (a decomposed program may lift others)."""
    return [(s.kind, s.target) for s in a.graph_signature.input_specs] == \
        [(s.kind, s.target) for s in b.graph_signature.input_specs]


def reset() -> None:
    """Forget every compiled entry of every compiled callable (torch._dynamo.reset)."""
    for code in list(_LIVE):
        code.entries.clear()
        for steps in (code.steps, code._broken):
            if steps is not None:
                steps.slots.clear()
        code.compiles = 0
        code.dynamic_dims.clear()
        code.graph_breaks.clear()
        code._limit_warned = False
