"""`python -m ember.memory audit`: every native kernel's real scratch against what its backend declares.

A prediction trusts each backend's declaration of the scratch its kernels allocate and free inside a
call (`Backend.workspace`), so a kernel that changes must not leave its declaration behind. The audit
runs workloads on a device (by default every op's conformance samples) with each native kernel of that
device's backend wrapped: a call's scratch is measured, and compared with the declaration for the same
arguments (none declared: zero).

* cpu: tracemalloc's peak inside the call above what is live after it (the outputs and any cache the
  kernel keeps), so every numpy buffer counts;
* another device: its allocator's high-water mark inside the call (the plugin's
  `reset_peak_memory_stats`, then `memory_stats()["peak_bytes"]`) above its allocated bytes after it.

A call passes when the two differ by at most `slack` bytes plus `relative` of the larger: the slack
covers the Python objects a call makes (tracemalloc counts them too; a few hundred bytes to two
kilobytes) and allocator rounding (512 bytes a block on opencl).
"""
from __future__ import annotations

import gc
import importlib
import tracemalloc
from dataclasses import dataclass
from typing import Callable, Iterable

from ember.dispatcher import ALL_OPS, replace_kernels
from ember.dispatcher.plugins import REGISTRY

#: where the default workloads come from: a function of (device, ops, dtypes, per_op) yielding callables that
#: each run one conformance sample on the device (MODULE:FUNCTION, loaded by name as the CLI loads a model
#: factory); a callable's `warm_runs` attribute says how often it runs unmeasured first (default once)
WORKLOADS = "ember.testing.memory_audit:conformance_workloads"


@dataclass(frozen=True)
class KernelCall:
    """One measured call of a native kernel."""

    op: str
    shapes: tuple
    measured: int
    declared: int
    slack: int
    relative: float

    @property
    def ok(self) -> bool:
        return abs(self.measured - self.declared) <= self.slack + self.relative * max(self.measured, self.declared)

    def __str__(self) -> str:
        return f"{self.op} {self.shapes}: measured {self.measured:,} B, declared {self.declared:,} B"


def _shapes(arrays: tuple) -> tuple:
    return tuple(f"{tuple(a.shape)} {getattr(a.dtype, 'name', a.dtype)}" for a in arrays if hasattr(a, "shape"))


class ScratchAudit:
    """Within the block, every native kernel of `device`'s backend is measured at each call (`calls`)."""

    def __init__(self, device: str = "cpu", slack: int = 8192, relative: float = 0.02) -> None:
        self.device, self.slack, self.relative = device, slack, relative
        self.calls: list[KernelCall] = []
        self._parked: dict = {}
        self._depth = 0

    def __enter__(self) -> "ScratchAudit":
        self.backend = backend = REGISTRY.load(self.device).backend
        key = backend.key
        if backend.device_type == "cpu":
            self._started = not tracemalloc.is_tracing()
            if self._started:
                tracemalloc.start()
            self._measure = self._measure_traced
        else:
            runtime = importlib.import_module(backend.runtime_module) if backend.runtime_module else None
            if runtime is None or not hasattr(runtime, "reset_peak_memory_stats"):
                raise RuntimeError(f"ember.memory audit: backend {backend.device_type!r} has no "
                                   "reset_peak_memory_stats() in its runtime module to measure a call with")
            self._reset_peak = runtime.reset_peak_memory_stats
            self._measure = self._measure_allocator
        self._parked = replace_kernels(key, {op: self._wrapped(op.name, *op.kernels[key])
                                             for op in ALL_OPS.values() if key in op.kernels})
        self._gc_was_enabled = gc.isenabled()
        gc.disable()            # a collection inside a measured call would free unrelated objects
        return self

    def __exit__(self, *exc) -> None:
        if self._gc_was_enabled:
            gc.enable()
        replace_kernels(self.backend.key, self._parked)
        self._parked = {}
        if self.backend.device_type == "cpu" and self._started:
            tracemalloc.stop()

    def _wrapped(self, name: str, kernel: Callable, origin: str):
        declares = name in self.backend.workspace_ops

        def measured(spec, *arrays):
            if self._depth:                     # a kernel calling another (a numba switch's eager fallback)
                return kernel(spec, *arrays)
            self._depth += 1
            try:
                out, scratch = self._measure(kernel, spec, arrays)
            finally:
                self._depth -= 1
            declared = sum(self.backend.workspace(name, arrays)) if declares else 0
            self.calls.append(KernelCall(name, _shapes(arrays), scratch, declared, self.slack, self.relative))
            return out
        return measured, f"{origin} (audited)"

    def _measure_traced(self, kernel, spec, arrays):
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = kernel(spec, *arrays)
        current, peak = tracemalloc.get_traced_memory()
        return out, max(0, peak - max(start, current))

    def _measure_allocator(self, kernel, spec, arrays):
        backend = self.backend
        backend.synchronize()
        self._reset_peak()
        out = kernel(spec, *arrays)
        backend.synchronize()
        stats = backend.memory_stats()
        return out, max(0, stats["peak_bytes"] - stats["allocated_bytes"])

    @property
    def failures(self) -> list[KernelCall]:
        return [c for c in self.calls if not c.ok]

    def report(self) -> str:
        ops = {c.op for c in self.calls}
        lines = [f"ember.memory audit on {self.device}: {len(self.calls)} kernel calls of {len(ops)} ops, "
                 f"{len(self.failures)} outside {self.slack} B + {self.relative:.0%} of their declaration"]
        lines += [f"  {c}" for c in self.failures]
        return "\n".join(lines)


def _load(spec: str):
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def audit(device: str = "cpu", ops: Iterable[str] | None = None, dtypes: tuple = ("float32", "float16", "int64", "bool"),
          per_op: int = 2, workloads: str = WORKLOADS, slack: int = 8192, relative: float = 0.02) -> ScratchAudit:
    """Run the workloads (by default every op's first `per_op` conformance samples in each of `dtypes` the op
    supports; `ops`: only these) on `device` under a ScratchAudit, and return it (`failures`, `report()`).
    A workload the device refuses (a dtype or layout it lacks) is skipped: the audit measures what runs."""
    REGISTRY.load(device).backend.settle_kernels()      # the kernels' steady state, which the declarations describe
    runs = []
    for run in _load(workloads)(device, ops, dtypes, per_op):
        try:                        # unmeasured first: first-call work (imports, compiled loops, caches; a
            for _ in range(getattr(run, "warm_runs", 1)):      # training step's optimizer state) is not scratch
                run()
        except Exception:
            continue
        runs.append(run)
    with ScratchAudit(device, slack, relative) as measured:
        for run in runs:
            run()
    return measured
