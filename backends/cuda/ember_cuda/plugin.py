"""The cuda backend: cupy arrays on NVIDIA GPUs, kernels from the shared array-module library.

Registered through the `ember.backends` entry point `cuda = "ember_cuda.plugin"`; uses only
ember's public plugin contract (ember.dispatcher.Backend, hookimpl) and frontend dtypes.
This module imports cupy only inside methods: `CUDABackend.is_available()` imports it and asks
the driver for devices, so a machine without cupy, driver or GPU gets an unavailable backend
whose reason says which (`python -m ember info` prints it), never an import error.

Kernels: backends/cpu/array_kernels run with `xp` = cupy (ember_cuda.xp), then the fused cupy
kernels of ember_cuda.kernels replace softmax, log_softmax, layer_norm, cross_entropy and the
Philox block function. With several GPUs every kernel runs under the device of its first
cupy operand (or its `device=` argument).
"""
from __future__ import annotations

import functools

import os

import numpy as np

from ember.dispatcher import Backend, hookimpl

from .xp import check_dtype

ENV_FUSED = "EMBER_CUDA_FUSED"          # "0": no fused kernels (the shared library's only)
NO_CUPY = "cupy is not installed: pip install ./backends/cuda[cuda12] from ember's source tree (or [cuda13] for a CUDA 13 driver)"


def probe() -> tuple[int, str]:
    """(number of CUDA devices, '' or why there is none), importing cupy."""
    try:
        import cupy
    except ImportError as exc:
        return 0, f"{NO_CUPY} ({exc})"
    except Exception as exc:            # a broken cupy install (wrong CUDA libraries, ...)
        return 0, f"cupy failed to import: {type(exc).__name__}: {exc}"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:            # CUDARuntimeError: no driver, no device, driver too old
        return 0, f"no usable CUDA device: {type(exc).__name__}: {exc} (cupy {cupy.__version__})"
    if n == 0:
        return 0, f"no CUDA device found (cupy {cupy.__version__})"
    return n, ""


class CUDABackend(Backend):
    device_type = "cuda"
    runtime_module = "ember_cuda.runtime"       # ember.cuda's helpers
    multi_device = True
    dlpack_device_types = (2, 13)       # kDLCUDA, kDLCUDAManaged

    def __init__(self) -> None:
        self.count, self.reason = probe()
        self.allocator = None
        if self.count:
            import cupy

            from .memory import CountingAllocator

            self.allocator = CountingAllocator(cupy.get_default_memory_pool())
            cupy.cuda.set_allocator(self.allocator)

    # -- availability -------------------------------------------------------------------------
    def is_available(self) -> bool:
        return self.count > 0

    def unavailable_reason(self) -> str:
        return self.reason

    def device_count(self) -> int:
        return self.count

    def device_description(self, index: int = 0) -> str:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return (f"{name} (compute {props['major']}.{props['minor']}, {props['totalGlobalMem'] // 2**20} MiB, "
                f"cupy {cupy.__version__})")

    def index(self, device_index: int | None) -> int:
        """The device of `cuda:N` (N=device_index); plain `cuda` is cuda:0, as ember labels it."""
        i = 0 if device_index is None else int(device_index)
        if not 0 <= i < self.count:
            raise IndexError(f"cuda:{i} does not exist: {self.count} CUDA device(s)")
        return i

    # -- allocation and data movement -----------------------------------------------------------
    def empty(self, shape, dtype, device_index=None):
        import cupy

        from ember.core.numpy_interop import to_numpy_dtype

        check_dtype(dtype, "empty()")
        with cupy.cuda.Device(self.index(device_index)):
            return cupy.empty(tuple(shape), dtype=to_numpy_dtype(dtype))

    def from_host(self, ndarray, device_index=None):
        import cupy

        host = np.asarray(ndarray)
        if host.dtype.name == "bfloat16":
            from ember.core import dtype as _dt

            check_dtype(_dt.bfloat16, "to('cuda')")
        with cupy.cuda.Device(self.index(device_index)):
            return cupy.array(host, copy=True, order="C")

    def to_host(self, array):
        return array.get()

    def storage_offset(self, array) -> int:
        # the storage is the allocation (`data.mem`, shared by every view of it), not a .base
        # chain: cupy views made from a memory pointer have no base
        return (array.data.ptr - array.data.mem.ptr) // array.itemsize

    def is_shared(self, a, b) -> bool:
        return getattr(a, "data", None) is not None and getattr(b, "data", None) is not None and \
            a.data.mem is b.data.mem

    def from_dlpack(self, ext):
        """(cupy array sharing `ext`'s memory, ember dtype, ember device): no copy."""
        import cupy

        from ember.core.device import device
        from ember.core.numpy_interop import from_numpy_dtype

        arr = cupy.from_dlpack(ext)
        return arr, from_numpy_dtype(arr.dtype), device("cuda", arr.device.id)

    # -- device management ----------------------------------------------------------------------
    def synchronize(self, device_index=None) -> None:
        import cupy

        for i in (range(self.count) if device_index is None else [self.index(device_index)]):
            cupy.cuda.Device(i).synchronize()

    def memory_stats(self, device_index=None) -> dict[str, int]:
        return self.allocator.stats_of(self.index(device_index))

    def kernels(self):
        from .kernels import make_kernels

        return make_kernels(self, fused=os.environ.get(ENV_FUSED, "1").strip() != "0")


@functools.cache
def backend() -> CUDABackend:
    """The plugin's one backend instance."""
    return CUDABackend()


@hookimpl
def ember_backend():
    return backend()


@hookimpl
def ember_fused_kernel_compiler(device_type):
    """Generated CUDA C for ember.compile's fused chains (fusion.py), where a CUDA device is usable."""
    if device_type != "cuda" or not backend().is_available():
        return None
    from .fusion import CudaFusedCompiler

    return CudaFusedCompiler()
