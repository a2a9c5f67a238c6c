"""The cpu backend: numpy arrays, kernels from the shared array-module library.

Registered through the `ember.backends` entry point `cpu = "ember_cpu.plugin"` like any
external plugin, and importing only ember's public modules. It is the worked example a
vendor copies: a Backend subclass for data movement and allocation, plus kernels.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember.dispatcher import Backend, hookimpl
from ember.core.numpy_interop import numpy_dtype_lookup, to_numpy_dtype

from .array_kernels import make_kernels
from .array_kernels.shape import root_of
from .fast_path import fast_entry

#: numpy reports overflow / division by zero as RuntimeWarnings; PyTorch is silent. The modules whose
#: numpy calls are silenced (a filter costs nothing per call, where np.errstate costs ~1 us): the
#: plugin's own (kernels, fast path).
#: The filters are installed when the plugin loads; a `warnings.catch_warnings()` block around that
#: first load drops them with its other filters (pytest's capture per test does: tests/conftest.py
#: adds them to the run's filters).
QUIET_MODULES = (r"ember_cpu(\..*)?$",)
for _module in QUIET_MODULES:
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=_module)


class CPUBackend(Backend):
    device_type = "cpu"
    host_memory = True

    def device_description(self, index: int = 0) -> str:
        import platform

        return f"cpu ({platform.machine()}, numpy {np.__version__})"

    def to_host(self, array):
        return array

    def from_host(self, ndarray, device_index=None):
        return np.array(ndarray, order="C", copy=True)

    def empty(self, shape, dtype, device_index=None):
        return np.empty(shape, dtype=to_numpy_dtype(dtype))

    # numpy's ufunc is the whole kernel of a + b, a - b, a * b on two arrays alike (fast_path.py)
    fast_entry = staticmethod(fast_entry)

    def storage_offset(self, array) -> int:
        if array.base is None:          # owns its memory (every fresh op result): no pointer arithmetic
            return 0
        root = root_of(array)
        return (array.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // array.itemsize

    def is_shared(self, a, b) -> bool:
        return np.shares_memory(a, b)

    def kernels(self):
        table = make_kernels(np, numpy_dtype_lookup())
        for name in NUMBA_FIRST:
            table[name] = _numba_first(name, table[name])
        return table


#: kernels with a numba-compiled version for the calls it serves (gelu_numba.py: float32 exact GELU); the
#: shared array kernel runs the others, and every call where numba is not installed
NUMBA_FIRST = ("gelu", "gelu_backward")


def _numba_first(name: str, eager):
    """`name`'s kernel: the numba version (imported on the first call, numba with it) where it serves the
    call, else the eager one."""
    fast = []

    def kernel(spec, *args, **kwargs):
        if not fast:
            from . import fused_numba

            if fused_numba.available():
                from . import gelu_numba

                fast.append(gelu_numba.KERNELS[name])
            else:
                fast.append(None)
        if fast[0] is not None:
            result = fast[0](spec, *args, **kwargs)
            if result is not NotImplemented:
                return result
        return eager(spec, *args, **kwargs)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


@hookimpl
def ember_backend():
    from .host_memory import keep_freed_memory

    keep_freed_memory()                 # freed blocks are reused, not faulted in afresh each step
    return CPUBackend()


@hookimpl
def ember_fused_kernel_compiler(device_type):
    """numba-compiled fused pointwise kernels for cpu (fused_numba.py), where numba is installed."""
    if device_type != "cpu":
        return None
    from . import fused_numba

    return fused_numba.NumbaFusedCompiler() if fused_numba.available() else None
