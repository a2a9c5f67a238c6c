"""MemoryTracker: records every storage allocation and release, on any backend, with its role.

An allocation is a new `Storage` (ember/frontend/tensor.py `make_tensor`, hook `ALLOC_HOOK`);
its release is the moment the last reference to that Storage goes (a weakref callback), which
is when the backend array is freed too (tensors and their views hold both). On meta nothing is
allocated but every Storage carries the byte size the array would have, so the same sequence
predicts what a real device measures.

Each storage gets one record; its category is the most specific role it is seen to play while
alive, so an AdamW moment allocated as `zeros_like` inside `step()` counts as optimizer state
from its allocation on. Roles, most specific first:

    parameters       storages of nn.Parameter objects (seen in module forwards, `model=`)
    gradients        `.grad` of parameters (seen at optimizer steps and at exit)
    optimizer_state  tensors in `optimizer.state` (seen after each step)
    inputs           tensors passed to a module's forward that were allocated outside any module, and
                     tensors made before the block (counted from their first use by an op)
    activations      storages of tensors the autograd graph saves for backward (hook `SAVE_HOOK`)
    other            storages alive at entry with no known role (buffers)
    temporaries      everything else
"""
from __future__ import annotations

import weakref
from typing import Any

from ember.dispatcher.plugins import REGISTRY
from ember.frontend.mode import DispatchMode

CATEGORIES = ("parameters", "gradients", "optimizer_state", "inputs", "activations", "other", "temporaries")
_RANK = {c: i for i, c in enumerate(CATEGORIES)}


class _Record:
    """One storage: size, role, where and when it was allocated and freed (event indices)."""

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
                    tr._add(st, "inputs", "<existing>")
            elif a.__class__ in (list, tuple):
                for t in a:
                    st = getattr(t, "_storage", None)
                    if st is not None and id(st) not in live:
                        tr._add(st, "inputs", "<existing>")
        prev = tr._op
        tr._op = op.name
        try:
            return op(*args)
        finally:
            tr._op = prev


def _tensors(value, out: list) -> list:
    from ember.frontend.tensor import Tensor

    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out


class MemoryTracker:
    """Context manager recording storage allocations and releases; see `ember.memory.track`."""

    def __init__(self, model=None, optimizer=None, device=None) -> None:
        from ember.utils.module_tracker import ModuleTracker

        self.model = model
        self.optimizer = optimizer
        self.device = None if device is None else str(device)
        self.records: list[_Record] = []
        self.events: list[tuple[int, _Record]] = []     # (+1 alloc | -1 free, record)
        self.current_bytes = 0
        self.peak_bytes = 0
        self._peak_t = -1
        self._live: dict[int, tuple[_Record, Any]] = {}   # id(storage) -> (record, weakref)
        self._where_cache: dict[tuple, tuple[str, str]] = {}
        self._op = ""
        self._phase_override: str | None = None
        self._modules = ModuleTracker()
        self._mode = _OpMode(self)
        self._handles: list = []
        self._backends: list = []
        self._active = False

    # -- recording ------------------------------------------------------------------------------
    def _where(self) -> tuple[str, str]:
        if self._phase_override is not None:
            return self._phase_override, "optimizer"
        names = self._modules.parents
        key = (tuple(names), self._modules.is_bw)          # asked at every allocation: cached
        where = self._where_cache.get(key)
        if where is None:
            name = max(names, key=lambda n: (n != "Global", n.count("."), len(n))) if names else "Global"
            where = name, ("backward" if key[1] else "forward") if name != "Global" else "global"
            self._where_cache[key] = where
        return where

    def _add(self, storage, category: str, op: str) -> _Record | None:
        dev = str(storage.device)
        if self.device is not None and dev != self.device and storage.device.type != self.device:
            return None
        module, phase = self._where()
        t = len(self.events)
        rec = _Record(int(storage.nbytes), category, module, phase, op, dev, t)
        self.records.append(rec)
        self.events.append((1, rec))
        self.current_bytes += rec.nbytes
        if self.current_bytes > self.peak_bytes:
            self.peak_bytes = self.current_bytes
            self._peak_t = t
        key = id(storage)         # a weakref callback (cheaper than weakref.finalize) frees it
        self._live[key] = (rec, weakref.ref(storage, lambda _ref, key=key, free=self._free: free(key)))
        return rec

    def _free(self, key: int) -> None:
        entry = self._live.pop(key, None)
        if entry is None:
            return
        rec = entry[0]
        rec.t_free = len(self.events)
        self.events.append((-1, rec))
        self.current_bytes -= rec.nbytes

    def _on_alloc(self, storage) -> None:
        self._add(storage, "temporaries", self._op)

    def _role(self, storage, category: str, op: str = "<existing>") -> None:
        """Give a storage a role: upgrade its record, or record it as alive from now on."""
        entry = self._live.get(id(storage))
        if entry is None:
            self._add(storage, category, op)
            return
        rec = entry[0]
        if _RANK[category] < _RANK[rec.category]:
            rec.category = category

    def _on_save(self, storage) -> None:
        entry = self._live.get(id(storage))
        if entry is not None and _RANK["activations"] < _RANK[entry[0].category]:
            entry[0].category = "activations"

    def _scan_module(self, mod, recurse: bool) -> None:
        for p in mod.parameters(recurse=recurse):
            self._role(p._storage, "parameters")
            g = p.grad
            if g is not None:
                self._role(g._storage, "gradients")
        for b in mod.buffers(recurse=recurse):
            self._role(b._storage, "other")

    def _scan_optimizer(self, opt) -> None:
        for group in opt.param_groups:
            for p in group["params"]:
                self._role(p._storage, "parameters")
                if p.grad is not None:
                    self._role(p.grad._storage, "gradients")
        for state in opt.state.values():
            for t in _tensors(state, []):
                self._role(t._storage, "optimizer_state")

    def _fw_pre_hook(self, mod, args) -> None:
        self._scan_module(mod, recurse=False)
        for t in _tensors(args, []):
            entry = self._live.get(id(t._storage))
            if entry is None:
                self._role(t._storage, "inputs")
            elif entry[0].module == "Global" and entry[0].category in ("temporaries", "other"):
                entry[0].category = "inputs"

    def _step_pre_hook(self, opt, args, kwargs) -> None:
        self._scan_optimizer(opt)
        self._phase_override = f"optimizer.{type(opt).__name__}"

    def _step_post_hook(self, opt, args, kwargs) -> None:
        self._phase_override = None
        self._scan_optimizer(opt)

    def __enter__(self) -> "MemoryTracker":
        from ember.frontend import tensor as tensor_mod
        from ember.frontend.autograd import graph
        from ember.nn.modules.module import register_module_forward_pre_hook

        if tensor_mod.ALLOC_HOOK is not None:
            raise RuntimeError("ember.memory.track: another memory tracker is already recording (trackers do not nest)")
        self._active = True
        if self.model is not None:
            self._scan_module(self.model, recurse=True)
        if self.optimizer is not None:
            self._scan_optimizer(self.optimizer)
            self._handles += [self.optimizer.register_step_pre_hook(self._step_pre_hook),
                              self.optimizer.register_step_post_hook(self._step_post_hook)]
        self._modules.__enter__()
        self._handles.append(register_module_forward_pre_hook(self._fw_pre_hook))
        self._mode.__enter__()
        # load cpu and meta now: meta tensors made inside the block are then predicted like cpu's, and
        # no plugin loads mid-block (a load reinstalls every backend's kernels)
        for name in ("cpu", "meta"):
            if name in REGISTRY.records:
                REGISTRY.load(name)
        self._backends = [rec.backend for rec in REGISTRY.records.values()
                          if rec.state == "available" and hasattr(rec.backend, "set_memory_tracking")]
        for backend in self._backends:
            backend.set_memory_tracking(True)
        tensor_mod.ALLOC_HOOK = self._on_alloc
        graph.SAVE_HOOK = self._on_save
        return self

    def __exit__(self, *exc) -> None:
        from ember.frontend import tensor as tensor_mod
        from ember.frontend.autograd import graph

        tensor_mod.ALLOC_HOOK = None
        graph.SAVE_HOOK = None
        for backend in self._backends:
            backend.set_memory_tracking(False)
        self._backends = []
        self._mode.__exit__(*exc)
        if self.model is not None:
            self._scan_module(self.model, recurse=True)
        if self.optimizer is not None:
            self._scan_optimizer(self.optimizer)
        self._modules.__exit__(*exc)
        for h in self._handles:
            h.remove()
        self._handles = []
        self._live.clear()                 # drops the weakrefs: storages outliving the block stay live in the record
        self._active = False

    # -- results --------------------------------------------------------------------------------
    def _live_at(self, t: int) -> list[_Record]:
        return [r for r in self.records if r.t_alloc <= t and (r.t_free is None or r.t_free > t)]

    @property
    def breakdown(self) -> dict[str, dict[str, int]]:
        """Bytes per category: `at_peak` (live at the overall peak) and `max` (each category's own peak)."""
        at_peak = dict.fromkeys(CATEGORIES, 0)
        for r in self._live_at(self._peak_t):
            at_peak[r.category] += r.nbytes
        cur = dict.fromkeys(CATEGORIES, 0)
        mx = dict.fromkeys(CATEGORIES, 0)
        for sign, r in self.events:
            cur[r.category] += sign * r.nbytes
            if cur[r.category] > mx[r.category]:
                mx[r.category] = cur[r.category]
        return {c: {"at_peak": at_peak[c], "max": mx[c]} for c in CATEGORIES}

    @property
    def by_module(self) -> dict[str, dict[str, int]]:
        """Per module (innermost running module at allocation; optimizer steps as `optimizer.<Class>`):
        bytes allocated in forward, in backward (or the step), and live at the peak."""
        out: dict[str, dict[str, int]] = {}
        peak_ids = {id(r) for r in self._live_at(self._peak_t)}
        for r in self.records:
            d = out.setdefault(r.module, {"forward": 0, "backward": 0, "at_peak": 0})
            key = "backward" if r.phase in ("backward", "optimizer") else "forward"
            if r.op != "<existing>":
                d[key] += r.nbytes
            if id(r) in peak_ids:
                d["at_peak"] += r.nbytes
        return out

    @property
    def timeline(self) -> list[dict[str, Any]]:
        """One entry per event: time index t, kind ("alloc" | "free"), signed bytes, current total, id (the
        storage's record index), category, module, phase ("forward", "backward", "optimizer", "global"), op, device."""
        out, cur = [], 0
        index = {id(r): i for i, r in enumerate(self.records)}
        for t, (sign, r) in enumerate(self.events):
            cur += sign * r.nbytes
            out.append({"t": t, "kind": "alloc" if sign > 0 else "free", "bytes": sign * r.nbytes, "current": cur,
                        "id": index[id(r)], "category": r.category, "module": r.module, "phase": r.phase,
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
