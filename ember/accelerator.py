"""`ember.accelerator`: the best available non-cpu device, as torch.accelerator reports it.

The accelerator is the first available device type among the installed backend plugins,
"cuda" first, then the others in name order ("opencl", vendor plugins); cpu and meta never
count, so with only the cpu current_accelerator() is None, as in torch. Nor does a plugin whose
devices are the host's own processor (`Backend.is_host_cpu()`: an OpenCL driver for CPUs such
as PoCL): it computes on the cores the cpu backend already uses, usually more slowly, so a
program asking for "the accelerator" would only lose by it; `device="opencl"` still reaches it.
The other functions act on the accelerator's device type through its ember.<type> helper
module (ember/_device_module.py).
"""
from __future__ import annotations

from ember._device_module import DeviceModule, module_for
from ember.core.errors import BackendUnavailableError

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats"]

_CPU_TYPES = ("cpu", "meta")


def _accelerator_type() -> str | None:
    from ember.dispatcher.plugins import REGISTRY

    names = sorted(n for n in REGISTRY.records if n not in _CPU_TYPES)
    names.sort(key=lambda n: n != "cuda")           # cuda first, the rest by name
    for name in names:
        if module_for(name).is_available() and not REGISTRY.records[name].backend.is_host_cpu():
            return name
    return None


def _module(funcname: str) -> DeviceModule:
    kind = _accelerator_type()
    if kind is None:
        raise BackendUnavailableError(f"ember.accelerator.{funcname}(): Cannot access accelerator device when "
                                      "none is available (no installed backend plugin has an available device).")
    return module_for(kind)


def is_available() -> bool:
    """Whether an accelerator (an available non-cpu plugin device) exists."""
    return _accelerator_type() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's ember.device (no index), or None when there is none."""
    from ember.core.device import device

    kind = _accelerator_type()
    return None if kind is None else device(kind)


def device_count() -> int:
    """Devices of the accelerator's type (0 when there is none)."""
    kind = _accelerator_type()
    return 0 if kind is None else module_for(kind).device_count()


def current_device_index() -> int:
    return _module("current_device_index").current_device()


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _module("set_device_index").set_device(device)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    _module("synchronize").synchronize(device)


def empty_cache() -> None:
    kind = _accelerator_type()
    if kind is not None:
        module_for(kind).empty_cache()


def memory_stats(device=None) -> dict:
    return _module("memory_stats").memory_stats(device)


def memory_allocated(device=None) -> int:
    return _module("memory_allocated").memory_allocated(device)


def max_memory_allocated(device=None) -> int:
    return _module("max_memory_allocated").max_memory_allocated(device)


def memory_reserved(device=None) -> int:
    return _module("memory_reserved").memory_reserved(device)


def max_memory_reserved(device=None) -> int:
    return _module("max_memory_reserved").max_memory_reserved(device)


def reset_peak_memory_stats(device=None) -> None:
    _module("reset_peak_memory_stats").reset_peak_memory_stats(device)
