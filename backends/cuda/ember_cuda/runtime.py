"""The helpers `ember.cuda` delegates to (torch.cuda's names), same shape as ember_opencl.runtime.

    from ember_cuda import runtime as cuda
    cuda.is_available(); cuda.device_count(); cuda.set_device(1); cuda.synchronize()
    cuda.memory_allocated(); print(cuda.memory_summary())
    s = cuda.Stream(); e = cuda.Event(enable_timing=True)

`device` arguments accept None, an index, "cuda:N" or an ember.device; None is cuda:0 for
memory statistics and synchronize (all devices), cupy's current device for Stream.
`is_available()` and `device_count()` never raise; the others raise
BackendUnavailableError naming the reason when the backend is not available. Ops run on
cupy's current device and stream: `set_device` / `with Stream(...)` choose them. Seeding
(`ember.cuda.manual_seed`) is ember.cuda's own: it seeds the cuda default generator, which the
dispatcher hands the random kernels.
"""
from __future__ import annotations

from ember.dispatcher import stat_readers


def _record():
    from ember.dispatcher import load_backend

    return load_backend("cuda")


def _backend():
    rec = _record()
    if rec.state != "available":
        from ember.core.errors import BackendUnavailableError

        raise BackendUnavailableError(f"cuda is {rec.state}: {rec.reason}")
    return rec.backend


def _index(device) -> int | None:
    if device is None or isinstance(device, int):
        return device
    from ember.core.device import as_device

    d = as_device(device)
    if d.type != "cuda":
        from ember.core.errors import ArgumentTypeError

        raise ArgumentTypeError(f"expected a cuda device, got {d}")
    return d.index


def is_available() -> bool:
    """Whether the plugin loaded, cupy imported and the driver reports at least one GPU."""
    try:
        return _record().state == "available"
    except Exception:
        return False


def unavailable_reason() -> str:
    """'' when available, else why not (cupy missing, no driver, no device, ...)."""
    try:
        rec = _record()
    except Exception as exc:
        return str(exc)
    return "" if rec.state == "available" else f"{rec.state}: {rec.reason}"


def device_count() -> int:
    return _backend().device_count() if is_available() else 0


def current_device() -> int:
    _backend()                  # before importing cupy: without it, the error names the reason
    import cupy

    return int(cupy.cuda.runtime.getDevice())


def set_device(device) -> None:
    """Make `device` cupy's current device (new Streams and Events, raw cupy code use it).

    Unlike torch, ember labels a plain "cuda" device cuda:0 when a tensor is created, so
    tensors still go where their device says; pass "cuda:N" to place them.
    """
    i = _backend().index(_index(device))
    import cupy

    cupy.cuda.Device(i).use()


def _current_or(device) -> int:
    b = _backend()
    import cupy

    return b.index(_index(device)) if device is not None else int(cupy.cuda.runtime.getDevice())


def get_device_name(device=None) -> str:
    b = _backend()
    return b.device_description(b.index(_index(device)))


def get_device_capability(device=None) -> tuple[int, int]:
    """(major, minor) compute capability, as torch.cuda.get_device_capability."""
    b = _backend()
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(b.index(_index(device)))
    return int(props["major"]), int(props["minor"])


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device, from the driver."""
    b = _backend()
    import cupy

    with cupy.cuda.Device(b.index(_index(device))):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def is_bf16_supported() -> bool:
    """False: cupy has no bfloat16 dtype, so ember's cuda backend refuses bfloat16 tensors."""
    return False


def synchronize(device=None) -> None:
    """Wait until every kernel queued on the device (all devices when None) finished."""
    _backend().synchronize(_index(device))


def memory_stats(device=None) -> dict[str, int]:
    """cupy's pool counters: allocated_bytes (live arrays, at the pool's rounding), reserved_bytes
    (held from the driver: live blocks plus the pool's cache) and their peaks."""
    return _backend().memory_stats(_index(device))


# torch.cuda's four counters, each a key of memory_stats (ember.dispatcher.backend.STAT_KEYS order)
memory_allocated, max_memory_allocated, memory_reserved, max_memory_reserved = stat_readers(memory_stats).values()


def reset_peak_memory_stats(device=None) -> None:
    b = _backend()
    b.allocator.reset_peak(b.index(_index(device)))


def empty_cache() -> None:
    """Release the pool's cached (free) blocks to the driver."""
    _backend().allocator.empty_cache()


def memory_summary(device=None) -> str:
    """A table of the allocator's statistics, like torch.cuda.memory_summary()."""
    b = _backend()
    i = b.index(_index(device))
    s = b.memory_stats(i)

    def mib(n: int) -> str:
        return f"{n / 2**20:12.2f} MiB"

    rows = [("allocated (live tensors)", mib(s["allocated_bytes"])), ("peak allocated", mib(s["peak_bytes"])),
            ("reserved (cupy pool)", mib(s["reserved_bytes"])), ("peak reserved", mib(s["peak_reserved_bytes"])),
            ("allocations", f"{s['num_allocs']:16d}")]
    head = f"cuda:{i} memory summary ({b.device_description(i)})"
    width = max(len(head), 46)
    return "\n".join([head, "-" * width] + [f"{k:<28}{v}" for k, v in rows])


class Stream:
    """A CUDA stream (cupy.cuda.Stream); `with stream:` makes ember's ops on that device run on it."""

    def __init__(self, device=None, priority: int = 0) -> None:
        self.device_index = _current_or(device)
        import cupy

        with cupy.cuda.Device(self.device_index):
            self.cupy_stream = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self._prev: list = []

    def synchronize(self) -> None:
        self.cupy_stream.synchronize()

    def query(self) -> bool:
        """Whether all work queued on the stream has finished."""
        return bool(self.cupy_stream.done)

    def wait_event(self, event: "Event") -> None:
        self.cupy_stream.wait_event(event.cupy_event)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __enter__(self) -> "Stream":
        import cupy

        dev = cupy.cuda.Device(self.device_index)
        dev.__enter__()
        self.cupy_stream.__enter__()
        self._prev.append(dev)
        return self

    def __exit__(self, *exc) -> None:
        self.cupy_stream.__exit__(*exc)
        self._prev.pop().__exit__(*exc)

    def __repr__(self) -> str:
        return f"<ember_cuda.runtime.Stream device=cuda:{self.device_index} cuda_stream={self.cupy_stream.ptr:#x}>"


def current_stream(device=None) -> Stream:
    """The stream ember's ops are queued on now (cupy's current stream), as a Stream."""
    import cupy

    s = object.__new__(Stream)
    s.device_index = _current_or(device)
    with cupy.cuda.Device(s.device_index):
        s.cupy_stream = cupy.cuda.get_current_stream()
    s._prev = []
    return s


def stream(s: "Stream | None"):
    """`with stream(s):` as torch.cuda.stream: a no-op for None."""
    import contextlib

    return contextlib.nullcontext() if s is None else s


class Event:
    """A CUDA event (cupy.cuda.Event): record on a stream, wait, synchronize, time."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        _backend()
        import cupy

        self.cupy_event = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                          interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self.cupy_event.record(stream.cupy_stream if stream is not None else None)

    def wait(self, stream: Stream | None = None) -> None:
        import cupy

        s = stream.cupy_stream if stream is not None else cupy.cuda.get_current_stream()
        s.wait_event(self.cupy_event)

    def query(self) -> bool:
        return bool(self.cupy_event.done)

    def synchronize(self) -> None:
        self.cupy_event.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and `end_event` (both recorded, timing enabled)."""
        import cupy

        return float(cupy.cuda.get_elapsed_time(self.cupy_event, end_event.cupy_event))
