"""The torch.cuda-style helper module of one plugin device type: `ember.cuda`, `ember.opencl`.

Written once, shared by every such module. A `DeviceModule("cuda")` asks the backend
registry (ember.dispatcher.plugins.REGISTRY) whether a plugin provides the device type and
whether it is available, and delegates:

* to the plugin's runtime helpers when its Backend names a module in `runtime_module`
  (ember_opencl.runtime for opencl): a helper found there is called as is;
* otherwise to the generic Backend methods (device_count, device_description, synchronize,
  memory_stats), so a plugin gets working helpers without writing any.

Nothing is imported until a function is called, so `import ember` stays fast and never loads
a plugin (pyopencl, cupy). When the device is not available the functions behave like
torch.cuda's in a CPU-only PyTorch: is_available() is False, device_count() is 0, the memory
counters read 0, memory_stats() is {}, empty_cache() and the seeding functions do nothing
(seeds are kept for when the device is used), and everything that needs the device
(current_device, synchronize, get_device_name, memory_summary, reset_peak_memory_stats, ...)
raises BackendUnavailableError (a RuntimeError) saying why: no plugin installed, or the
plugin's own reason (no GPU, no OpenCL platform, an import error).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

from ember.core.errors import BackendUnavailableError
from ember.dispatcher.backend import STAT_KEYS


class DeviceModule:
    """The helpers of one device type, bound to the backend registry."""

    def __init__(self, device_type: str, install_hint: str) -> None:
        self.device_type = device_type
        self.install_hint = install_hint
        self._current = 0

    # -- registry queries ---------------------------------------------------------------------
    def _record(self):
        """The plugin record, loaded (None when no plugin provides the device type)."""
        from ember.dispatcher.plugins import REGISTRY

        if self.device_type not in REGISTRY.records:
            return None
        try:
            return REGISTRY.load(self.device_type)
        except Exception:        # the registry records failures itself; be defensive anyway
            return None

    def is_available(self) -> bool:
        """Whether a plugin provides this device type and found at least one device."""
        rec = self._record()
        return rec is not None and rec.state == "available"

    def _unavailable(self, funcname: str) -> BackendUnavailableError:
        from ember.dispatcher.plugins import REGISTRY

        rec = self._record()
        if rec is None:
            why = (f"no installed backend plugin provides it (installed: {', '.join(sorted(REGISTRY.records))}); "
                   f"{self.install_hint}")
        else:
            why = f"backend plugin {rec.name!r} is {rec.state}: {rec.reason}"
        return BackendUnavailableError(f"ember.{self.device_type}.{funcname}(): device type "
                                       f"{self.device_type!r} is not available: {why}")

    def _backend(self, funcname: str):
        rec = self._record()
        if rec is None or rec.state != "available":
            raise self._unavailable(funcname)
        return rec.backend

    def _runtime_helper(self, funcname: str) -> Callable | None:
        """The plugin's own helper called `funcname`, if its runtime module has one."""
        name = getattr(self._backend(funcname), "runtime_module", None)
        if not name:
            return None
        return getattr(importlib.import_module(name), funcname, None)

    def _index(self, device, funcname: str) -> int:
        """A device argument (None, int, "type:N", ember.device) as an index of this type."""
        if device is None:
            return self._current
        if isinstance(device, int) and not isinstance(device, bool):
            index = device
        else:
            from ember.core.device import as_device

            d = as_device(device)
            if d.type != self.device_type:
                raise ValueError(f"ember.{self.device_type}.{funcname}(): expected a {self.device_type} device, "
                                 f"got {str(d)!r}")
            index = self._current if d.index is None else d.index
        count = self.device_count()
        if not 0 <= index < count:
            raise ValueError(f"ember.{self.device_type}.{funcname}(): invalid device index {index}: "
                             f"{self.device_type} has {count} device(s)")
        return index

    def _delegate(self, funcname: str, device, generic: Callable[[Any, int], Any]):
        backend = self._backend(funcname)
        index = self._index(device, funcname)
        helper = self._runtime_helper(funcname)
        return helper(index) if helper is not None else generic(backend, index)

    # -- the torch.cuda-style functions ---------------------------------------------------------
    def device_count(self) -> int:
        """Number of devices of this type (0 when not available)."""
        if not self.is_available():
            return 0
        helper = self._runtime_helper("device_count")
        return int(helper() if helper is not None else self._backend("device_count").device_count())

    def is_initialized(self) -> bool:
        return self.is_available()

    def init(self) -> None:
        """Load the plugin now (it loads on first use anyway); raises if the device is not available."""
        self._backend("init")

    def current_device(self) -> int:
        self._backend("current_device")
        return self._current

    def set_device(self, device) -> None:
        """Select the index `current_device()` and device=None arguments of these helpers mean.

        (A tensor's device "opencl" without an index still means index 0: the selection is
        not a default device for tensors, see ember.set_default_device for that.)
        """
        self._backend("set_device")
        self._current = self._index(device, "set_device")

    def get_device_name(self, device=None) -> str:
        return self._delegate("get_device_name", device, lambda b, i: b.device_description(i))

    def synchronize(self, device=None) -> None:
        """Wait until all work queued on the device has finished."""
        return self._delegate("synchronize", device, lambda b, i: b.synchronize(i))

    def memory_stats(self, device=None) -> dict[str, int]:
        """The allocator's statistics ({} when the device is not available)."""
        if not self.is_available():
            return {}
        return dict(self._delegate("memory_stats", device, lambda b, i: b.memory_stats(i)))

    def _stat(self, funcname: str, device) -> int:
        if not self.is_available():
            return 0
        helper = self._runtime_helper(funcname)
        if helper is not None:
            return int(helper(self._index(device, funcname)))
        return int(self.memory_stats(device).get(STAT_KEYS[funcname], 0))

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors (0 when the device is not available)."""
        return self._stat("memory_allocated", device)

    def max_memory_allocated(self, device=None) -> int:
        return self._stat("max_memory_allocated", device)

    def memory_reserved(self, device=None) -> int:
        return self._stat("memory_reserved", device)

    def max_memory_reserved(self, device=None) -> int:
        return self._stat("max_memory_reserved", device)

    def reset_peak_memory_stats(self, device=None) -> None:
        def unsupported(b, i):
            raise NotImplementedError(f"ember.{self.device_type}.reset_peak_memory_stats(): backend "
                                      f"{self.device_type!r} has no peak statistics to reset")

        return self._delegate("reset_peak_memory_stats", device, unsupported)

    def empty_cache(self) -> None:
        """Release cached, unused device memory (a no-op when the device is not available)."""
        if not self.is_available():
            return
        helper = self._runtime_helper("empty_cache")
        if helper is not None:
            helper()

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        def table(b, i):
            stats = b.memory_stats(i)
            head = f"{self.device_type}:{i} memory summary ({b.device_description(i)})"
            lines = [f"{k:<28}{v:>16}" for k, v in stats.items()] or ["(the backend reports no statistics)"]
            return "\n".join([head, "-" * max(len(head), 44)] + lines)

        return self._delegate("memory_summary", device, table)

    def is_bf16_supported(self) -> bool:
        return self.is_available()

    # -- random numbers: the device type's default generator (a seed is kept until first use) --
    def _generator(self):
        from ember.frontend.random import default_generator

        return default_generator(self.device_type)

    def manual_seed(self, seed: int) -> None:
        self._generator().manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        """One generator serves every device of a type in ember, so this is manual_seed."""
        self._generator().manual_seed(seed)

    def seed(self) -> None:
        self._generator().seed()

    def seed_all(self) -> None:
        self._generator().seed()

    def initial_seed(self) -> int:
        self._backend("initial_seed")
        return self._generator().initial_seed()

    def get_rng_state(self, device=None):
        self._backend("get_rng_state")
        return self._generator().get_state()

    def set_rng_state(self, new_state, device=None) -> None:
        self._backend("set_rng_state")
        self._generator().set_state(new_state)

    # -- module export ----------------------------------------------------------------------------
    EXPORTED = ("is_available", "device_count", "is_initialized", "init", "current_device", "set_device",
                "get_device_name", "synchronize", "memory_stats", "memory_allocated", "max_memory_allocated",
                "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats", "empty_cache",
                "memory_summary", "is_bf16_supported", "manual_seed", "manual_seed_all", "seed", "seed_all",
                "initial_seed", "get_rng_state", "set_rng_state")

    def exports(self) -> dict[str, Callable]:
        """The functions a device module re-exports, by name (bound to this object)."""
        return {name: getattr(self, name) for name in self.EXPORTED}

    def device_context(self):
        """The `device` context-manager class of the module (`with ember.cuda.device(1):`)."""
        owner = self

        class device:
            """Context manager selecting the current device index for its body."""

            def __init__(self, device) -> None:
                self.idx = -1 if device is None else owner._index(device, "device")
                self.prev_idx = -1

            def __enter__(self):
                if self.idx != -1:
                    self.prev_idx = owner.current_device()
                    owner._current = self.idx
                return self

            def __exit__(self, *exc) -> None:
                if self.idx != -1:
                    owner._current = self.prev_idx

        device.__qualname__ = device.__name__ = "device"
        device.__module__ = f"ember.{self.device_type}"
        return device


_MODULES: dict[str, DeviceModule] = {}
_HINTS = {"cuda": "install the ember-cuda plugin on a machine with an NVIDIA GPU: pip install ./backends/cuda[cuda12]",
          "opencl": "install the ember-opencl plugin: pip install ./backends/opencl[pocl]"}


def module_for(device_type: str) -> DeviceModule:
    """The one DeviceModule of `device_type` (shared by ember.<type> and ember.accelerator)."""
    mod = _MODULES.get(device_type)
    if mod is None:
        hint = _HINTS.get(device_type, f"install a backend plugin that provides {device_type!r}")
        mod = _MODULES[device_type] = DeviceModule(device_type, hint)
    return mod
