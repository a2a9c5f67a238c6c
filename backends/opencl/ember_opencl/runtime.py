"""`ember.cuda`-style helpers for the opencl device, exposed as `ember.opencl` (ember/_device_module.py).

    from ember_opencl import runtime as ocl
    ocl.is_available(); ocl.device_count(); ocl.synchronize()
    ocl.memory_allocated(); ocl.max_memory_allocated(); print(ocl.memory_summary())

`device` arguments accept None (opencl:0), an index, "opencl:N" or an ember.device.
"""
from __future__ import annotations

from ember.dispatcher import stat_readers


def _backend():
    from ember.dispatcher import load_backend

    rec = load_backend("opencl")
    if rec.state != "available":
        from ember.core.errors import BackendUnavailableError

        raise BackendUnavailableError(f"opencl is {rec.state}: {rec.reason}")
    return rec.backend


def _index(device) -> int | None:
    if device is None or isinstance(device, int):
        return device
    from ember.core.device import as_device

    return as_device(device).index


def is_available() -> bool:
    """Whether the plugin loaded and found at least one OpenCL device."""
    from ember.dispatcher import load_backend

    try:
        return load_backend("opencl").state == "available"
    except Exception:
        return False


def device_count() -> int:
    return _backend().device_count() if is_available() else 0


def get_device_name(device=None) -> str:
    return _backend().device_description(_index(device) or 0)


def synchronize(device=None) -> None:
    """Wait until every kernel queued on the device (all devices when None) finished."""
    _backend().synchronize(_index(device))


def memory_stats(device=None) -> dict[str, int]:
    """The caching allocator's counters: allocated_bytes (live tensors, at the allocator's rounding),
    reserved_bytes (held from the OpenCL driver: live blocks plus the cache) and their peaks."""
    return _backend().memory_stats(_index(device))


# torch.cuda's four counters, each a key of memory_stats (ember.dispatcher.backend.STAT_KEYS order)
memory_allocated, max_memory_allocated, memory_reserved, max_memory_reserved = stat_readers(memory_stats).values()


def reset_peak_memory_stats(device=None) -> None:
    from . import context

    _backend().allocator(context.device(_index(device))).reset_peak()


def empty_cache() -> None:
    """Release the allocator's cached (free) blocks to the driver."""
    for a in _backend().allocators.values():
        a.empty_cache()


def memory_summary(device=None) -> str:
    """A table of the allocator's statistics, like torch.cuda.memory_summary()."""
    s = memory_stats(device)
    i = _index(device) or 0

    def mib(b: int) -> str:
        return f"{b / 2**20:12.2f} MiB"

    rows = [("allocated (live tensors)", mib(s["allocated_bytes"])), ("peak allocated", mib(s["peak_bytes"])),
            ("reserved (from driver)", mib(s["reserved_bytes"])), ("peak reserved", mib(s["peak_reserved_bytes"])),
            ("allocations", f"{s['num_allocs']:16d}"), ("driver allocations", f"{s['num_driver_allocs']:16d}")]
    head = f"opencl:{i} memory summary ({get_device_name(i)})"
    width = max(len(head), 46)
    return "\n".join([head, "-" * width] + [f"{k:<28}{v}" for k, v in rows])
