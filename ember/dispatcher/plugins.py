"""Backend plugins: discovery through entry points, lazy loading, status.

At `import ember` only the entry-point *names* of the group `ember.backends` are read; a
plugin's module is imported the first time its device is used (or when `status()` asks).
A plugin that fails to import or initialise is recorded as broken with its error, never
raised at import; using its device raises BackendUnavailableError with that reason.
"""
from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ember.core.errors import BackendUnavailableError

from . import hookspecs
from . import keys as K
from .backend import Backend
from .operator import ALL_OPS, invalidate_caches

ENTRY_POINT_GROUP = "ember.backends"


@dataclass
class PluginRecord:
    """What Ember knows about one plugin (one device type)."""

    name: str                       # the device type
    source: str                     # "entry point ember_cpu.plugin" or "registered in code"
    loader: Any = None              # entry point or plugin object
    state: str = "not loaded"       # not loaded | available | unavailable | broken
    reason: str = ""
    backend: Backend | None = None
    plugin: Any = None
    key: int = 0
    kernel_count: int = 0
    devices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"name": self.name, "state": self.state, "reason": self.reason, "source": self.source,
                "devices": list(self.devices), "kernels": self.kernel_count}


def fused_kernel_compiler(device_type: str):
    """The fused-kernel generator offered for `device_type` (hookspec `ember_fused_kernel_compiler`),
    or None."""
    return REGISTRY.fused_kernel_compiler(device_type)


def load_backend(device_type: str) -> PluginRecord:
    """The record of the plugin for `device_type`, loading it first if needed (`.state` says whether it
    is available, `.reason` why not, `.backend` is its Backend). Raises BackendUnavailableError if no
    installed plugin provides that device type."""
    return REGISTRY.load(device_type)


class BackendRegistry:
    """The plugin manager: records per device type, the pluggy manager, loaded backends."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.by_key: dict[int, Backend] = {}
        self._fused: dict[str, Any] = {}           # device type -> its fused-kernel generator (or None)
        self._lock = threading.RLock()

    # -- discovery -------------------------------------------------------------------------
    def discover(self) -> None:
        """Read the names of installed plugins (imports nothing)."""
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            rec = self.records.get(ep.name)
            if rec is None or rec.state == "not loaded":
                self.records[ep.name] = PluginRecord(ep.name, f"entry point {ep.value}", ep)

    def register_plugin(self, device_type: str, plugin: Any) -> PluginRecord:
        """Register a plugin object or module in code (no packaging needed); loads it now."""
        with self._lock:
            self.records[device_type] = PluginRecord(device_type, "registered in code", plugin)
            return self.load(device_type)

    # -- loading ---------------------------------------------------------------------------
    def load(self, device_type: str) -> PluginRecord:
        with self._lock:
            rec = self.records.get(device_type)
            if rec is None:
                raise BackendUnavailableError(
                    f"device type {device_type!r} is not available: no installed backend plugin provides it "
                    f"(installed: {', '.join(sorted(self.records)) or 'none'})")
            if rec.state != "not loaded":
                return rec
            try:
                plugin = rec.loader.load() if hasattr(rec.loader, "load") and hasattr(rec.loader, "value") else rec.loader
                others = [p for p in self.pm.get_plugins() if p is not plugin]
                if not self.pm.is_registered(plugin):
                    self.pm.register(plugin, name=f"ember-backend-{device_type}")
                caller = self.pm.subset_hook_caller("ember_backend", remove_plugins=others)
                backend = caller()
                if backend is None:
                    raise TypeError(f"plugin {device_type!r} implements no ember_backend() hook returning a Backend")
                if not isinstance(backend, Backend):
                    raise TypeError(f"ember_backend() of plugin {device_type!r} returned {type(backend).__name__}, "
                                    "expected a subclass of ember.dispatcher.Backend")
                if backend.device_type != device_type:
                    raise ValueError(f"plugin registered as {device_type!r} declares device_type {backend.device_type!r}")
                rec.plugin = plugin
                rec.backend = backend
                available = backend.is_available()
            except Exception as exc:  # a broken plugin must not break ember
                rec.state = "broken"
                rec.reason = f"{type(exc).__name__}: {exc}"
                rec.reason_traceback = traceback.format_exc()  # type: ignore[attr-defined]
                return rec
            if not available:
                rec.state = "unavailable"
                rec.reason = backend.unavailable_reason() or "the backend reports no usable device"
                return rec
            rec.key = K.allocate_backend_key(device_type)
            backend.key = rec.key  # type: ignore[attr-defined]
            self.by_key[rec.key] = backend
            try:
                n = backend.device_count()
                rec.devices = [backend.device_description(i) for i in range(n)]
                rec.kernel_count = self._install_kernels(rec)
            except Exception as exc:
                rec.state = "broken"
                rec.reason = f"{type(exc).__name__}: {exc}"
                return rec
            rec.state = "available"
            # a newly loaded plugin may also contribute kernels to devices loaded earlier
            for other in self.records.values():
                if other is not rec and other.state == "available":
                    other.kernel_count = self._install_kernels(other)
            return rec

    def _install_kernels(self, rec: PluginRecord) -> int:
        kernels: dict = dict(rec.backend.kernels())
        for contributed in reversed(self.pm.hook.ember_kernels(device_type=rec.name)):
            if contributed:
                kernels.update(contributed)
        unknown = sorted(set(kernels) - set(ALL_OPS))
        if unknown:
            raise KeyError(f"plugin {rec.name!r} provides kernels for unknown ops: {', '.join(unknown[:10])}")
        for name, kernel in kernels.items():
            ALL_OPS[name].kernels[rec.key] = (kernel, f"{rec.name} kernel")
        invalidate_caches()
        return len(kernels)

    def fused_kernel_compiler(self, device_type: str):
        """The fused-kernel generator a plugin offers for `device_type` (hookspec
        `ember_fused_kernel_compiler`), asked once per device type; None without one."""
        with self._lock:
            if device_type not in self._fused:
                self.load(device_type)
                self._fused[device_type] = self.pm.hook.ember_fused_kernel_compiler(device_type=device_type)
            return self._fused[device_type]

    def backend_for(self, dev) -> Backend:
        """The loaded, available backend of an ember.device (loading it on first use)."""
        rec = self.records.get(dev.type)
        if rec is None or rec.state != "available":
            rec = self.load(dev.type)
            if rec.state != "available":
                raise BackendUnavailableError(f"device '{dev}' is not available: backend plugin "
                                              f"{rec.name!r} is {rec.state}: {rec.reason}")
        backend = rec.backend
        if dev.index is not None and dev.index >= len(rec.devices):
            raise BackendUnavailableError(
                f"device '{dev}' does not exist: backend {rec.name!r} has {len(rec.devices)} device(s)")
        return backend

    def status(self) -> list[dict]:
        """Every known plugin with its state, loading each to find out."""
        for name in list(self.records):
            self.load(name)
        return [rec.as_dict() for rec in sorted(self.records.values(), key=lambda r: r.name)]


REGISTRY = BackendRegistry()
