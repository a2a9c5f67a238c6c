"""MemoryTracker: records every storage allocation and release, on any backend, with its role.

An allocation is a new `Storage` (ember/frontend/tensor.py `make_tensor`, hook `ALLOC_HOOK`);
its release is the moment the last reference to that Storage goes, which is when the backend
array is freed too (tensors and their views hold both). The tracker sees it by switching the
storage's class to `_TrackedStorage`, whose `__del__` reports the release: cheaper per
allocation than a weakref with a callback, and untracked storages keep the plain class, so a
program not tracking pays nothing. On meta nothing is
allocated but every Storage carries the byte size the array would have, so the same sequence
predicts what a real device measures.

Each storage gets one record; its category is the most specific role it is seen to play while
alive, so an AdamW moment allocated as `zeros_like` inside `step()` counts as optimizer state
from its allocation on. Roles, most specific first:

    parameters       storages of nn.Parameter objects (seen via `model=`/`optimizer=`, else in module forwards)
    gradients        `.grad` of parameters (seen before optimizer steps and at exit)
    optimizer_state  tensors in `optimizer.state` (seen at entry, after steps that allocated, at exit)
    inputs           tensors passed to a module's forward that were allocated outside any module, and
                     tensors made before the block (counted from their first use by an op)
    activations      storages of tensors the autograd graph saves for backward (hook `SAVE_HOOK`)
    other            storages alive at entry with no known role (buffers)
    temporaries      everything else
    scratch          what a kernel allocates and frees inside one call, as its backend declares it
                     (`Backend.workspace`; on meta, the predicted device's): alive from the kernel's
                     return until its outputs are recorded
"""
from __future__ import annotations

import sys
from typing import Any

from ember.dispatcher import replace_kernels, report_workspace
from ember.dispatcher.plugins import REGISTRY
from ember.frontend.autograd import graph as _graph
from ember.frontend.mode import DispatchMode
from ember.frontend.tensor import Storage, Tensor
from ember.utils.tensor_tree import tensors_in

from .attribution import GLOBAL_PLACE as _GLOBAL_PLACE
from .attribution import ModuleAttribution

CATEGORIES = ("parameters", "gradients", "optimizer_state", "inputs", "activations", "other", "temporaries", "scratch")
_RANK = {c: i for i, c in enumerate(CATEGORIES)}
_RANK_ACTIVATIONS = _RANK["activations"]
_RANK_INPUTS = _RANK["inputs"]
_RANK_TEMPORARIES = _RANK["temporaries"]
_RANK_SCRATCH = _RANK["scratch"]
_RANK_OTHER = _RANK["other"]
_RANK_PARAMETERS = _RANK["parameters"]
_RANK_GRADIENTS = _RANK["gradients"]
_RANK_OPTIMIZER_STATE = _RANK["optimizer_state"]


class _Record:
    """One storage, as the results present it: size, role, where and when it was allocated and
    freed (event indices; t_free None while alive)."""

    __slots__ = ("nbytes", "category", "module", "phase", "op", "device", "t_alloc", "t_free")

    def __init__(self, nbytes: int, category: str, module: str, phase: str, op: str, device: str, t: int) -> None:
        self.nbytes = nbytes
        self.category = category
        self.module = module
        self.phase = phase
        self.op = op
        self.device = device
        self.t_alloc = t
        self.t_free: int | None = None


#: the tracker recording now (trackers do not nest); read by `_TrackedStorage.__del__`
_ACTIVE: "MemoryTracker | None" = None


class _TrackedStorage(Storage):
    """A Storage whose release the active tracker records (its class is switched at allocation)."""

    __slots__ = ()

    def __del__(self) -> None:
        tracker = _ACTIVE
        if tracker is not None:
            index = tracker._live.pop(id(self), None)
            if index is not None:
                tracker._events.append(~index)
                tracker.current_bytes -= tracker._info[index][0]


class _OpMode(DispatchMode):
    """Remembers the op being dispatched, to name the op of each allocation."""

    def __init__(self, tracker: "MemoryTracker") -> None:
        self.tracker = tracker

    def __ember_dispatch__(self, op, args: tuple):
        tr = self.tracker
        live = tr._live
        for a in args:            # tensors made before the block are counted from their first use
            st = getattr(a, "_storage", None)
            if st is not None:
                if id(st) not in live:
                    tr._add(st, _RANK_INPUTS, "<existing>")
            elif a.__class__ in (list, tuple):
                for t in a:
                    st = getattr(t, "_storage", None)
                    if st is not None and id(st) not in live:
                        tr._add(st, _RANK_INPUTS, "<existing>")
        prev = tr._op
        tr._op = op.name
        try:
            return op(*args)
        finally:
            tr._op = prev


class MemoryTracker:
    """Context manager recording storage allocations and releases; see `ember.memory.track`.

    Recording keeps plain columns (lists of ints and strings, one entry per storage) and a list
    of events (index: allocation, ~index: release): a few appends per allocation and nothing for
    the garbage collector to traverse, which matters once a long run has recorded millions.
    `records`, `events` and the reports are built from them when asked.
    """

    def __init__(self, model=None, optimizer=None, device=None, ops: bool = True, target: str | None = None) -> None:
        self.model = model
        self.optimizer = optimizer
        self.device = None if device is None else str(device)
        self.current_bytes = 0
        self.peak_bytes = 0
        self._peak_t = -1
        # one entry per recorded storage, by its index
        self._info: list[tuple[int, int, str, str]] = []    # (bytes, place, op, device); place indexes _places
        self._category: list[int] = []          # rank in CATEGORIES (upgraded while alive)
        self._events: list[int] = []            # index: allocated, ~index: released
        self._live: dict[int, int] = {}         # id(storage) -> index, while alive
        self._places: list[tuple[str, str]] = []
        self._place_index: dict[tuple[str, str], int] = {}
        self._place_now = self._intern_place(("Global", "global"))     # kept current by _modules and the step hooks
        self._devices: dict[Any, str | None] = {}       # device -> its name, None when not tracked
        self._last_device: Any = None
        self._last_device_name: str | None = None
        self._op = ""
        self._target = target
        self._workspace: list = []              # scratch storages of the kernel running now (meta)
        self._workspace_outputs = 0             # its outputs not yet recorded
        self._reporting: list = []              # (backend key, kernels parked by report_workspace) of tracked backends
        self._workspace_target = None           # the backend whose scratch a meta run predicts (_target_backend)
        self._predicting_workspace = False      # meta's kernels report its scratch now (predict_workspace)
        self._place_before_step = _GLOBAL_PLACE
        self._in_step = False                   # inside optimizer.step(): its place, even within a backward
        self._recorded_before_step = 0
        self._modules = ModuleAttribution(self)
        self._mode = _OpMode(self) if ops else None
        self._mode_entered = False
        self._handles: list = []
        self._backends: list = []
        self._meta_backend = None               # set while meta runs composites as cpu does (_track_meta)
        # with `optimizer=` (which classifies gradients at every step), the modules of `model=`, scanned at
        # entry and exit: their parameters, gradients and buffers are not rescanned at every call
        self._scanned_modules: set[int] = set()

    # -- recording ------------------------------------------------------------------------------
    def _place_of(self, recorded: int) -> int:
        """The place index of a recorded place (~seq of the running node for an allocation in backward)."""
        return recorded if recorded >= 0 else self._modules.backward_place(~recorded)

    def _intern_place(self, place: tuple[str, str]) -> int:
        index = self._place_index.get(place)
        if index is None:
            index = self._place_index[place] = len(self._places)
            self._places.append(place)
        return index

    def _device_name(self, device) -> str | None:
        if device.type == "meta":
            self._track_meta()
        name = str(device)
        if self.device is not None and name != self.device and device.type != self.device:
            name = None
        self._devices[device] = name
        return name

    def _add(self, storage, rank: int = _RANK_TEMPORARIES, op: str | None = None) -> int | None:
        """Record a storage alive from now on, in category `rank`, allocated by `op` (default: the
        op running now); its index (None: not on the tracked device). This is `ALLOC_HOOK`, called
        for every new storage: kept to a few appends."""
        device = storage.device
        if device is self._last_device:       # devices hash in Python: one identity check first
            dev = self._last_device_name
        else:
            try:
                dev = self._devices[device]
            except KeyError:
                dev = self._device_name(device)
            self._last_device, self._last_device_name = device, dev
        if dev is None:
            return None
        nbytes = storage.nbytes
        index = len(self._category)
        self._category.append(rank)
        node = _graph.RUNNING.node              # in backward: ~seq of the node, its module found when asked
        place = self._place_now if node is None or self._in_step else ~node.seq     # a step run from a hook: the step's
        self._info.append((nbytes, place, self._op if op is None else op, dev))
        events = self._events
        events.append(index)
        current = self.current_bytes = self.current_bytes + nbytes
        if current > self.peak_bytes:
            self.peak_bytes = current
            self._peak_t = len(events) - 1
        self._live[id(storage)] = index
        if storage.__class__ is Storage:
            storage.__class__ = _TrackedStorage     # its __del__ reports the release
        if self._workspace:             # a kernel's scratch lives until its last output is recorded
            self._workspace_outputs -= 1
            if self._workspace_outputs <= 0:
                self._workspace = []
        return index

    def _kernel_workspace(self, sizes: tuple[int, ...], outputs: int, device) -> None:
        """Scratch a kernel allocates inside the call now running (declared by its backend, or on meta by
        the predicted one: `report_workspace`), on `device`, alive until the call's `outputs` new storages
        are recorded (they are made right after the kernel)."""
        self._workspace = []                    # a kernel before whose outputs were not all new storages
        storages = [Storage(nbytes, device) for nbytes in sizes]
        for storage in storages:
            self._add(storage, _RANK_SCRATCH, self._op)
        self._workspace = storages
        self._workspace_outputs = outputs

    def _workspace_sink(self, device_type: str):
        from ember.core.device import device

        dev = device(device_type)
        return lambda sizes, outputs: self._kernel_workspace(sizes, outputs, dev) if sizes else None

    def _classify(self, tensors, rank: int) -> None:
        """Give the tensors' storages role `rank` (upgrade, or record as alive from now on): one
        lookup per tensor already known, as most are at every step."""
        live, cats = self._live, self._category
        for t in tensors:
            index = live.get(id(t._storage))
            if index is None:
                self._add(t._storage, rank, "<existing>")
            elif rank < cats[index]:
                cats[index] = rank

    def _on_save(self, storage) -> None:
        index = self._live.get(id(storage))
        if index is None:                   # made before the block (without `ops`, not seen before)
            self._add(storage, _RANK_INPUTS, "<existing>")
        elif _RANK_ACTIVATIONS < self._category[index]:
            self._category[index] = _RANK_ACTIVATIONS

    def _scan_module(self, mod, recurse: bool) -> None:
        """Classify a module's parameters, their gradients and its buffers (`recurse`: its submodules' too)."""
        params = [p for p in (mod.parameters() if recurse else mod._parameters.values()) if p is not None]
        if params:
            self._classify(params, _RANK_PARAMETERS)
            self._classify_grads(params)
        buffers = mod.buffers() if recurse else mod._buffers.values()
        self._classify([b for b in buffers if b is not None], _RANK_OTHER)

    def _scan_optimizer(self, opt) -> None:
        """Classify the optimizer's parameters, their gradients and its state (before and after
        every step: gradients and lazily created state appear between steps)."""
        params = [p for group in opt.param_groups for p in group["params"]]
        self._classify(params, _RANK_PARAMETERS)
        self._classify_grads(params)
        self._classify(tensors_in(list(opt.state.values())), _RANK_OPTIMIZER_STATE)

    def _classify_grads(self, params) -> None:
        self._classify([g for g in (p.grad for p in params) if g is not None], _RANK_GRADIENTS)

    def _on_module_forward(self, mod, args) -> None:
        """A module's forward starts: its parameters and buffers (unless `model=` listed them at entry),
        and the inputs made outside any module."""
        if id(mod) not in self._scanned_modules:
            self._scan_module(mod, recurse=False)
        live, cats, info, places = self._live, self._category, self._info, self._places
        for a in args:
            if a.__class__ is not Tensor:           # nested or not a tensor: the general walk
                inputs = tensors_in(args)
                break
        else:
            inputs = args
        for t in inputs:
            index = live.get(id(t._storage))
            if index is None:
                self._add(t._storage, _RANK_INPUTS, "<existing>")
            elif cats[index] >= _RANK_OTHER and places[self._place_of(info[index][1])][0] == "Global":
                cats[index] = _RANK_INPUTS

    def _step_pre_hook(self, opt, args, kwargs) -> None:
        # the gradients are new since the last step; the parameters and the state were classified at
        # entry and after any step that allocated (a tensor put in their place between steps is
        # classified at exit, if still alive)
        self._classify_grads([p for group in opt.param_groups for p in group["params"]])
        self._place_before_step = self._place_now
        self._place_now = self._step_place
        self._in_step = True
        self._recorded_before_step = len(self._category)

    def _step_post_hook(self, opt, args, kwargs) -> None:
        self._place_now = self._place_before_step
        self._in_step = False
        if len(self._category) > self._recorded_before_step:    # new state can only be a new storage
            self._scan_optimizer(opt)

    def __enter__(self) -> "MemoryTracker":
        from ember.frontend import tensor as tensor_mod
        from ember.frontend.autograd import graph

        if tensor_mod.ALLOC_HOOK is not None:
            raise RuntimeError("ember.memory.track: another memory tracker is already recording (trackers do not nest)")
        try:
            self._install(tensor_mod, graph)
        except BaseException:               # nothing half-installed stays behind (wrappers, hooks, switches)
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _install(self, tensor_mod, graph) -> None:
        # load cpu and meta first: meta tensors made inside the block are then predicted like cpu's, and
        # no plugin loads later (a load reinstalls every backend's kernels, which would undo the kernel
        # swaps that scanning a meta model below starts)
        for name in ("cpu", "meta"):
            if name in REGISTRY.records:
                REGISTRY.load(name)
        self._workspace_target = self._target_backend()
        if self.model is not None:          # what exists now is listed under the module holding it
            for mod in self.model.modules():
                self._place_now = self._modules.places(mod)[0]
                self._scan_module(mod, recurse=False)
                if self.optimizer is not None:          # which classifies the gradients at every step
                    self._scanned_modules.add(id(mod))
            self._place_now = _GLOBAL_PLACE
        if self.optimizer is not None:
            self._scan_optimizer(self.optimizer)
            self._step_place = self._intern_place((f"optimizer.{type(self.optimizer).__name__}", "optimizer"))
            self._handles += [self.optimizer.register_step_pre_hook(self._step_pre_hook),
                              self.optimizer.register_step_post_hook(self._step_post_hook)]
        if self.model is not None:
            self._modules.wrap(self.model)
        else:
            self._modules.__enter__()
        if self._mode is not None:
            self._mode.__enter__()
            self._mode_entered = True
        self._backends = [rec.backend for rec in REGISTRY.records.values()
                          if rec.state == "available" and rec.backend.device_type != "meta"]
        for backend in self._backends:
            backend.set_memory_tracking(True)
            if backend.workspace_ops:           # its kernels' declared scratch, as a meta run predicts it
                self._reporting.append((backend.key, report_workspace(backend.key, backend,
                                                                      self._workspace_sink(backend.device_type))))
        if self._target is not None or self.device == "meta" or self._meta_at_entry():
            self._track_meta()
        global _ACTIVE
        _ACTIVE = self
        tensor_mod.ALLOC_HOOK = self._add
        graph.SAVE_HOOK = self._on_save

    def _meta_at_entry(self) -> bool:
        """Whether the model's or the optimizer's tensors are on meta (a prediction run)."""
        params = [] if self.model is None else list(self.model.parameters())
        if self.optimizer is not None:
            params += [p for group in self.optimizer.param_groups for p in group["params"]]
        return any(p._device.type == "meta" for p in params)

    def _track_meta(self) -> None:
        """Have meta run composite ops as cpu does (the meta backend's set_memory_tracking), so a meta
        run allocates what a cpu run does. At entry for a prediction run; otherwise when the first
        meta storage is seen (`_device_name`), which with `ops=True` is before the first op on meta
        runs. Tracking a cpu run never pays for the swap."""
        if self._meta_backend is None and "meta" in REGISTRY.records:
            self._meta_backend = REGISTRY.load("meta").backend
            self._meta_backend.set_memory_tracking(True)
            if self._workspace_target is not None:      # meta's kernels report the target's scratch
                self._meta_backend.predict_workspace(self._workspace_target, self._workspace_sink("meta"))
                self._predicting_workspace = True

    def _target_backend(self):
        """The backend whose kernels' scratch a meta run adds: `target`'s, by default cpu's (None where
        cpu is not installed); raises BackendUnavailableError naming why a named target cannot be loaded."""
        from ember.core.device import device

        if self._target is None or device(self._target).type == "cpu":
            return REGISTRY.load("cpu").backend if "cpu" in REGISTRY.records else None
        return REGISTRY.backend_for(device(self._target))

    def __exit__(self, *exc) -> None:
        from ember.frontend import tensor as tensor_mod
        from ember.frontend.autograd import graph

        global _ACTIVE
        _ACTIVE = None
        tensor_mod.ALLOC_HOOK = None
        graph.SAVE_HOOK = None
        if self._predicting_workspace:
            self._predicting_workspace = False
            REGISTRY.load("meta").backend.predict_workspace(None, None)
            self._workspace = []
        for key, parked in self._reporting:
            replace_kernels(key, parked)
        self._reporting = []
        for backend in self._backends:
            backend.set_memory_tracking(False)
        self._backends = []
        if self._meta_backend is not None:
            self._meta_backend.set_memory_tracking(False)
            self._meta_backend = None
        try:
            if self._mode_entered:
                self._mode_entered = False
                self._mode.__exit__(*exc)
            if self.model is not None:
                self._scan_module(self.model, recurse=True)
            if self.optimizer is not None:
                self._scan_optimizer(self.optimizer)
        finally:                           # the model's forward and the hooks are restored whatever happens
            self._modules.unwrap()
            self._modules.__exit__(*exc)
            for h in self._handles:
                h.remove()
            self._handles = []
            self._live.clear()             # storages outliving the block stay live in the record

    # -- results --------------------------------------------------------------------------------
    def _records_and_events(self) -> tuple[list[_Record], list[tuple[int, _Record]]]:
        """The columns as records (allocation order) and the events as (+1 | -1, record) pairs."""
        places, cats, place_of = self._places, self._category, self._place_of
        records = [_Record(n, CATEGORIES[cats[i]], *places[place_of(place)], op, dev, -1)
                   for i, (n, place, op, dev) in enumerate(self._info)]
        events = []
        for t, e in enumerate(self._events):
            if e >= 0:
                r = records[e]
                r.t_alloc = t
                events.append((1, r))
            else:
                r = records[~e]
                r.t_free = t
                events.append((-1, r))
        return records, events

    @property
    def records(self) -> list[_Record]:
        """One record per recorded storage, in allocation order."""
        return self._records_and_events()[0]

    @property
    def events(self) -> list[tuple[int, _Record]]:
        """Allocations (+1) and releases (-1) in order, each with its storage's record."""
        return self._records_and_events()[1]

    def _live_at_peak(self) -> list[int]:
        """Indices of the storages alive at the overall peak."""
        alive: set[int] = set()
        for e in self._events[:self._peak_t + 1]:
            if e >= 0:
                alive.add(e)
            else:
                alive.discard(~e)
        return sorted(alive)

    @property
    def breakdown(self) -> dict[str, dict[str, int]]:
        """Bytes per category: `at_peak` (live at the overall peak), `max` (each category's own peak) and
        `at_end` (live when the block ended: for a training step, the state it leaves for the next)."""
        nbytes, cats = [info[0] for info in self._info], self._category
        at_peak = [0] * len(CATEGORIES)
        for i in self._live_at_peak():
            at_peak[cats[i]] += nbytes[i]
        cur = [0] * len(CATEGORIES)
        mx = [0] * len(CATEGORIES)
        for e in self._events:
            i = e if e >= 0 else ~e
            c = cats[i]
            cur[c] += nbytes[i] if e >= 0 else -nbytes[i]
            if cur[c] > mx[c]:
                mx[c] = cur[c]
        return {c: {"at_peak": at_peak[k], "max": mx[k], "at_end": cur[k]} for k, c in enumerate(CATEGORIES)}

    @property
    def by_module(self) -> dict[str, dict[str, int]]:
        """Per module (innermost running module at allocation; optimizer steps as `optimizer.<Class>`):
        bytes of storages allocated in forward, in backward (or the step), and bytes live at the peak
        (kernel scratch included there)."""
        out: dict[str, dict[str, int]] = {}
        at_peak = set(self._live_at_peak())
        for i, r in enumerate(self.records):
            d = out.setdefault(r.module, {"forward": 0, "backward": 0, "at_peak": 0})
            key = "backward" if r.phase in ("backward", "optimizer") else "forward"
            if r.op != "<existing>" and r.category != "scratch":
                d[key] += r.nbytes
            if i in at_peak:
                d["at_peak"] += r.nbytes
        return out

    @property
    def timeline(self) -> list[dict[str, Any]]:
        """One entry per event: time index t, kind ("alloc" | "free"), signed bytes, current total, id (the
        storage's record index), category, module, phase ("forward", "backward", "optimizer", "global"), op, device."""
        out, cur = [], 0
        records = self.records
        for t, e in enumerate(self._events):
            i, sign = (e, 1) if e >= 0 else (~e, -1)
            r = records[i]
            cur += sign * r.nbytes
            out.append({"t": t, "kind": "alloc" if sign > 0 else "free", "bytes": sign * r.nbytes, "current": cur,
                        "id": i, "category": r.category, "module": r.module, "phase": r.phase,
                        "op": r.op, "device": r.device})
        return out

    def simulate(self, allocator: str = "cuda-caching", device: str | None = None) -> dict[str, int]:
        """The timeline replayed through an allocator model (ember/memory/allocators.py):
        peak_allocated and peak_reserved as the modelled allocator would report them."""
        from .allocators import simulate

        return simulate(self.timeline, allocator, device)

    def report(self) -> str:
        from .report import report

        return report(self)

    def to_json(self, path: str | None = None) -> str:
        from .report import to_json

        return to_json(self, path)

    def plot(self, path: str) -> None:
        from .report import plot

        plot(self, path)
