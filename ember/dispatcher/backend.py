"""The Backend base class: what a device plugin supplies besides its kernels.

Native arrays are the backend's own array objects (numpy.ndarray, cupy.ndarray, pyopencl
arrays, meta arrays). They must expose `.shape` (tuple of ints) and `.strides` (bytes).

Output specs: before a kernel runs, the op's shape rule validates the arguments and
computes the output, so every backend raises the same errors and allocates the same
result. A kernel receives that spec as its first argument:

    (shape, dtype)                    a new tensor (dtype is an ember.dtype)
    (shape, dtype, strides, offset)   a view (strides in elements, offset into storage)
    a tuple of the above              for ops with several outputs

A kernel for an op that returns a new tensor must return fresh memory; a view op returns a
view of its input; an in-place op writes into its first argument and returns it.
"""
from __future__ import annotations

from typing import Any, Callable


#: torch.cuda's memory counters and the `memory_stats()` key each one reads
STAT_KEYS = {"memory_allocated": "allocated_bytes", "max_memory_allocated": "peak_bytes",
             "memory_reserved": "reserved_bytes", "max_memory_reserved": "peak_reserved_bytes"}


def stat_readers(memory_stats: Callable) -> dict[str, Callable]:
    """The four counters as functions of `device=None`, each reading its key of `memory_stats(device)`:
    what a plugin's runtime module exports next to its own memory_stats."""
    def reader(name: str, key: str) -> Callable:
        def read(device=None) -> int:
            return memory_stats(device)[key]
        read.__name__ = read.__qualname__ = name
        read.__doc__ = f"memory_stats(device)[{key!r}] (torch.cuda.{name})."
        return read
    return {name: reader(name, key) for name, key in STAT_KEYS.items()}


class Backend:
    """Base class of device backends; override what your device needs."""

    #: device type, e.g. "cpu", "opencl" (the entry-point name)
    device_type: str = ""
    #: whether `device_type:N` indexes several devices
    multi_device: bool = False
    #: optional: the import name of a module of torch.cuda-style helpers (synchronize,
    #: memory_allocated, empty_cache, memory_summary, ...) that `ember.<device_type>` calls;
    #: helpers it lacks fall back to this class's generic methods (see ember/_device_module.py)
    runtime_module: str | None = None

    # -- availability -----------------------------------------------------------------
    def is_available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        """Why `is_available()` is False (e.g. "no CUDA driver found")."""
        return ""

    def device_count(self) -> int:
        return 1

    def is_host_cpu(self) -> bool:
        """Whether this backend's devices are the host's own processor (an OpenCL driver for CPUs,
        such as PoCL). Such a device computes on the cores the built-in cpu backend already uses,
        so it is never chosen as the accelerator (`ember.accelerator`); asked for by name, it runs."""
        return False

    def device_description(self, index: int = 0) -> str:
        return self.device_type

    # -- data movement and allocation ---------------------------------------------------
    #: whether native arrays live in host memory (or hold no data, as meta's), so that `from_host`
    #: is a plain copy that waits for no device work: the autograd engine then makes the implicit
    #: gradient of `loss.backward()` with `from_host` instead of dispatching ones_like
    host_memory: bool = False
    #: whether native arrays hold values (False for meta's, which carry shapes only): code that reads
    #: values to check them (index bounds, offsets) skips the check on a backend without any
    holds_data: bool = True
    #: whether a new empty array (a size-0 dim) reports the strides its shape rule gave it. numpy's report
    #: zeros, so for a new empty tensor the frontend shows torch's contiguous strides instead; meta's
    #: arrays carry the rule's own (`empty_strided((2, 0), (5, 1))` keeps (5, 1), as torch's meta does)
    empty_strides_exact: bool = False

    def to_host(self, array: Any):
        """A numpy.ndarray with the values of `array` (a copy or a view)."""
        raise NotImplementedError(f"backend {self.device_type!r} does not implement to_host")

    def from_host(self, ndarray, device_index: int | None = None) -> Any:
        """A new native array holding a copy of the numpy array `ndarray`."""
        raise NotImplementedError(f"backend {self.device_type!r} does not implement from_host")

    def empty(self, shape: tuple[int, ...], dtype, device_index: int | None = None) -> Any:
        """A new, uninitialised, contiguous native array."""
        raise NotImplementedError(f"backend {self.device_type!r} does not implement empty")

    def storage_offset(self, array: Any) -> int:
        """The offset, in elements, of `array`'s first element within its allocation."""
        return 0

    def storage_nbytes(self, array: Any) -> int:
        """The size in bytes of the allocation a new array owns."""
        return int(getattr(array, "nbytes", 0))

    def is_shared(self, a: Any, b: Any) -> bool:
        """Whether two native arrays share memory (used by debug checks)."""
        return False

    # -- device management ----------------------------------------------------------------
    def synchronize(self, device_index: int | None = None) -> None:
        """Wait for queued work on the device (no-op for synchronous backends)."""

    def memory_stats(self, device_index: int | None = None) -> dict[str, int]:
        """Allocator statistics such as {"allocated_bytes": ..., "peak_bytes": ...}."""
        return {}

    def set_memory_tracking(self, on: bool) -> None:
        """Called as `ember.memory.track` starts (True) and stops (False) recording. The meta
        backend uses it to allocate what the cpu backend would; a real device needs nothing."""

    def fast_entry(self, op, body: Callable, tensor_class: type, wrap: Callable, device, key: int) -> Callable | None:
        """Optional: an entry for `op` that answers the calls it can straight from native arrays and
        passes every other call to `body` (the full path: shape rule, unwrap, kernel). The cpu plugin
        runs `a + b` on two float tensors alike as one numpy call this way, and `p.mul_(0.9)` in place.
        `tensor_class` is the frontend's Tensor, `wrap(native, dtype, device, key, None)` makes a result
        Tensor. Asked once per (op, key set), for a single-device backend's own kernels and for the
        in-place twins of ops (whose `body` computes out of place, then copies); None: `body` it is.
        The entry skips the shape rule: it must take only calls that rule would accept, and decline
        (return None for) ops whose registry `checks`/`dtypes` its conditions do not make moot."""
        return None

    #: Ops whose kernels allocate scratch memory inside one call (packed GEMM panels, say), which
    #: `workspace` sizes; `ember.memory` records it while tracking this device and adds it to meta
    #: predictions made for this device type.
    workspace_ops: frozenset[str] = frozenset()

    def workspace(self, op_name: str, arrays: tuple) -> tuple[int, ...]:
        """Byte sizes of the scratch buffers this backend's kernel for `op_name` allocates (and
        frees before returning) for these arguments (the kernel's arguments after its spec):
        anything with shape, dtype (an ember or a native dtype) and element strides, meta arrays
        included. Only called for `workspace_ops`; `python -m ember.memory audit` checks it."""
        return ()

    def settle_kernels(self) -> None:
        """Put kernels that change after a process's first calls (the cpu's numba loops) in the state
        they reach: the state `workspace` declares, which ember.memory's audit measures."""

    # -- fallback -------------------------------------------------------------------------
    #: If set, the device type whose kernels run an op this backend lacks (arrays are moved
    #: there and back through the host), with a one-time warning naming the op.
    fallback_device: str | None = None

    def kernels(self) -> dict[str, Callable]:
        """The backend's own kernels (merged with `ember_kernels` hook results). A random kernel (an op
        with a `Generator? generator` argument) always receives a generator: the caller's, else the
        default generator of the output's device type (one per device type: a plugin that reuses
        the cpu kernel library draws from its own device's stream, not the cpu's)."""
        return {}
