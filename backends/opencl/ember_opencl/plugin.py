"""The opencl backend: CLArrays on the selected OpenCL devices, kernels in generated OpenCL C.

Registered through the `ember.backends` entry point `opencl = "ember_opencl.plugin"`; uses
only ember's public plugin contract (ember.dispatcher.Backend, hookimpl) and frontend dtypes.

Ops without an opencl kernel run on the cpu through the dispatcher's fallback runner (inputs
copied there, results back), with a one-time warning naming the op. `EMBER_OPENCL_FALLBACK`
chooses: `warn` (default), `silent` (no warning), `error` (no fallback: a MissingKernelError
naming the op). It is read when the backend loads.
"""
from __future__ import annotations

import functools

import os
import warnings

import numpy as np

from ember.dispatcher import Backend, hookimpl
from ember.core.numpy_interop import to_numpy_dtype
from ember.core.layout import contiguous_strides

from . import context
from .allocator import CachingAllocator
from .array import CLArray

ENV_FALLBACK = "EMBER_OPENCL_FALLBACK"
FALLBACK_MODES = ("warn", "silent", "error")

#: pyopencl's warning whenever a driver's build log is not empty ("Non-empty compiler output
#: encountered. Set the environment variable PYOPENCL_COMPILER_OUTPUT=1 to see more."): some drivers
#: (Intel's CPU runtime) log every build, so a program would see it once per kernel ember builds,
#: saying nothing about the kernel. Silenced when the plugin loads; PYOPENCL_COMPILER_OUTPUT=1 still
#: shows the logs themselves (a different message).
COMPILER_LOG_NOTICE = "Non-empty compiler output encountered"
warnings.filterwarnings("ignore", message=COMPILER_LOG_NOTICE)


def fallback_mode() -> str:
    mode = os.environ.get(ENV_FALLBACK, "warn").strip().lower() or "warn"
    if mode not in FALLBACK_MODES:
        raise ValueError(f"{ENV_FALLBACK}={mode!r}: expected one of {', '.join(FALLBACK_MODES)}")
    return mode


class OpenCLBackend(Backend):
    device_type = "opencl"
    multi_device = True
    runtime_module = "ember_opencl.runtime"     # ember.opencl's helpers

    def __init__(self) -> None:
        self.allocators: dict[int, CachingAllocator] = {}
        self.mode = fallback_mode()
        self.fallback_device = None if self.mode == "error" else "cpu"
        if self.mode == "silent":
            warnings.filterwarnings("ignore", message=r".*backend 'opencl' has no kernel for this op")

    # -- availability ---------------------------------------------------------------------
    def is_available(self) -> bool:
        return bool(context.selected())

    def unavailable_reason(self) -> str:
        return context.selection_error()

    def device_count(self) -> int:
        return len(context.selected())

    def is_host_cpu(self) -> bool:
        """True when every selected device is a CPU device (PoCL, say): see Backend.is_host_cpu."""
        devs = context.selected()
        return bool(devs) and all(d.info.type == "cpu" for d in devs)

    def device_description(self, index: int = 0) -> str:
        return context.device(index).info.describe()

    def device(self, index: int | None) -> context.Device:
        return context.device(index)

    # -- allocation and data movement --------------------------------------------------------
    def allocator(self, dev: context.Device) -> CachingAllocator:
        a = self.allocators.get(dev.info.index)
        if a is None:
            a = self.allocators[dev.info.index] = CachingAllocator(dev.context)
        return a

    def new_array(self, shape, np_dtype, dev: context.Device) -> CLArray:
        """A new contiguous array on `dev` (numpy dtype)."""
        shape = tuple(int(s) for s in shape)
        dt = np.dtype(np_dtype)
        n = 1
        for s in shape:
            n *= s
        block = self.allocator(dev).allocate(n * dt.itemsize)
        return CLArray(shape, dt, contiguous_strides(shape), 0, block, dev)

    def empty(self, shape, dtype, device_index=None):
        return self.new_array(shape, to_numpy_dtype(dtype), context.device(device_index))

    workspace_ops = frozenset({"bmm", "mm"})

    def workspace(self, op_name: str, arrays: tuple) -> tuple[int, ...]:
        """bmm and mm on a CPU device pack both operands into panels first (kernels/linalg.py)."""
        from .kernels import linalg

        found = {"bmm": linalg.bmm_workspace, "mm": linalg.mm_workspace}.get(op_name)
        return found(context.device(None), *arrays) if found is not None else ()

    def from_host(self, ndarray, device_index=None):
        import pyopencl as cl

        host = np.asarray(ndarray)
        host = np.ascontiguousarray(host).reshape(host.shape)     # ascontiguousarray makes 0-d arrays 1-d
        out = self.new_array(host.shape, host.dtype, context.device(device_index))
        if host.nbytes:
            cl.enqueue_copy(out.device.queue, out.buffer, host.reshape(-1).view(np.uint8), is_blocking=True)
        return out

    def to_host(self, array: CLArray):
        import pyopencl as cl

        dt = array.dtype
        lo, hi = array.extent()
        raw = np.empty((hi - lo) * dt.itemsize, dtype=np.uint8)
        if raw.nbytes:
            cl.enqueue_copy(array.device.queue, raw, array.buffer, src_offset=lo * dt.itemsize, is_blocking=True)
        flat = raw.view(dt)
        if not array.size:
            return np.empty(array.shape, dtype=dt)
        view = np.lib.stride_tricks.as_strided(flat[array.offset - lo:], array.shape, array.strides)
        return np.array(view, copy=True)

    def storage_offset(self, array: CLArray) -> int:
        return array.offset

    def storage_nbytes(self, array: CLArray) -> int:
        return array.nbytes

    def is_shared(self, a, b) -> bool:
        return isinstance(a, CLArray) and isinstance(b, CLArray) and a.block is b.block

    # -- device management --------------------------------------------------------------------
    def synchronize(self, device_index=None) -> None:
        devs = context.selected() if device_index is None else [context.device(device_index)]
        for d in devs:
            d.queue.finish()

    def memory_stats(self, device_index=None) -> dict[str, int]:
        return self.allocator(context.device(device_index)).stats()

    def kernels(self):
        from .kernels import make_kernels

        return make_kernels(self)


@functools.cache
def backend() -> OpenCLBackend:
    """The plugin's one backend instance."""
    return OpenCLBackend()


@hookimpl
def ember_backend():
    return backend()


@hookimpl
def ember_fused_kernel_compiler(device_type):
    """OpenCL C kernels for ember.compile's fused pointwise chains (fused.py)."""
    if device_type != "opencl":
        return None
    from .fused import OpenCLFusedCompiler

    return OpenCLFusedCompiler(backend())
