"""The cuda backend's fused-kernel generator: one CUDA C kernel per fused chain, run as a cupy RawKernel.

`CudaFusedCompiler.compile(kernel)` returns a launcher for an `ember.core.fused_kernel.FusedKernel`. The
sources are ember.core.fused_c's, in CUDA C (`DIALECT`): an element-wise kernel per collapsed rank (one
thread per element of the iteration shape, each input loaded through its own strides, 0 along the
dimensions it is broadcast in) and a row-wise kernel (one thread per row, a loop over it per pass of the
kernel's RowPlan, operands made contiguous first, sums in double). Each source is written into the
on-disk kernel cache (`ember.core.kernel_cache`: `<name>_r<rank>.cu`, `<name>_rows.cu`) and compiled from
that file's text by cupy (NVRTC; cupy keeps the binary in its own cache). CUDA's math library has every
function of the registry's vocabulary, so the generator declares them all.

The argument lists are built by `elementwise_arguments` and `rowwise_arguments` from arrays' shapes and
strides alone, so the host emulation of the tests (tests/cuda_host_emulation.py: the same source
compiled by g++, run thread by thread over numpy arrays) launches exactly what a GPU does. cupy is
imported only when a kernel is compiled.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from ember.core.fused_c import FUNCTIONS, CDialect, broadcast_strides, collapse, elementwise_source
from ember.core.fused_c import rowwise_source as c_rowwise_source
from ember.core.fused_kernel import FusedKernel
from ember.core.kernel_cache import write_source

__all__ = ["CudaFusedCompiler", "DIALECT", "source", "rowwise_source", "elementwise_arguments",
           "rowwise_arguments", "THREADS"]

THREADS = 256                   # threads per block
_STORAGE = {"float32": "float", "float64": "double", "bool": "unsigned char"}


def _store(dtype: str, ptr: str, idx: str, expr: str, expr_type: str) -> str:
    if dtype == "bool":
        return f"{ptr}[{idx}] = (unsigned char)(({expr}) != 0);"
    return f"{ptr}[{idx}] = ({_STORAGE[dtype]})({expr});"


#: CUDA C's way of writing ember.core.fused_c's kernels (NVRTC defines no INFINITY without headers)
DIALECT = CDialect(backend="cuda", kernel='extern "C" __global__ void', pointer="", index="long long",
                   thread="((long long)blockIdx.x * blockDim.x + threadIdx.x)", storage=_STORAGE.__getitem__,
                   load=lambda dtype, ptr, idx: f"{ptr}[{idx}]", store=_store,
                   accumulator="#ifndef INFINITY\n#define INFINITY (1.0f / 0.0f)\n#endif\ntypedef double ACC;\n")


def source(kernel: FusedKernel, rank: int) -> str:
    """The CUDA C of a non-reducing `kernel` for iteration shapes collapsed to `rank` dimensions."""
    return elementwise_source(DIALECT, kernel, rank)


def rowwise_source(kernel: FusedKernel) -> str:
    """The CUDA C of a reducing `kernel` (kernel `rowwise`)."""
    return c_rowwise_source(DIALECT, kernel)


def _elements(a) -> tuple:
    """An array's strides in elements (numpy's and cupy's are in bytes)."""
    return tuple(s // a.itemsize for s in a.strides)


def elementwise_arguments(outs: list, inputs: list, scalars, shape: tuple, dtype: str) -> tuple[int, int, list]:
    """(elements, collapsed rank, the element-wise kernel's arguments) for these arrays (numpy or cupy):
    per operand the array itself (the launcher passes its pointer) and offset 0 (its pointer includes its
    offset), then its element strides."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    cshape, strides = collapse(shape, [_elements(o) for o in outs] +
                               [broadcast_strides(a.shape, _elements(a), shape) for a in inputs])
    if not cshape:
        cshape, strides = (1,), [(0,) for _ in strides]
    i64 = np.int64
    args = [i64(n)] + [i64(s) for s in cshape]
    for array, st in zip(list(outs) + list(inputs), strides):
        args += [array, i64(0)] + [i64(s) for s in st]
    T = np.dtype(dtype).type
    return n, len(cshape), args + [T(s) for s in scalars]


def rowwise_arguments(outs: list, inputs: list, scalars, rows: int, length: int, dtype: str) -> list:
    """The row-wise kernel's arguments: R and L, then per operand (contiguous) the array and offset 0."""
    i64 = np.int64
    args = [i64(rows), i64(length)]
    for array in list(outs) + list(inputs):
        args += [array, i64(0)]
    T = np.dtype(dtype).type
    return args + [T(s) for s in scalars]


class CudaFusedCompiler:
    """The generator the cuda plugin offers (hookspec `ember_fused_kernel_compiler`)."""

    functions = FUNCTIONS
    reductions = True
    min_rows = 256                      # one thread per row: fewer rows leave the GPU idle (its own kernels then)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kernels: dict[tuple, object] = {}

    def source_of(self, kernel: FusedKernel) -> str:
        """The source for the kernel's full rank (`EMBER_LOGS=output_code` prints it)."""
        return rowwise_source(kernel) if kernel.reduced else source(kernel, max(kernel.ndim, 1))

    def _raw(self, kernel: FusedKernel, rank: int | None):
        """The cupy RawKernel of `kernel` (row-wise for rank None), compiled once from its cached file."""
        key = (kernel.key, rank)
        with self._lock:
            raw = self._kernels.get(key)
            if raw is None:
                import cupy

                if rank is None:
                    path, name = write_source(f"{kernel.name}_rows.cu", rowwise_source(kernel)), "rowwise"
                else:
                    path, name = write_source(f"{kernel.name}_r{rank}.cu", source(kernel, rank)), "fused"
                # no fused multiply-adds: each operation rounds as eager's kernels round (opencl's FP_CONTRACT
                # OFF, numba's default)
                raw = self._kernels[key] = cupy.RawKernel(path.read_text(), name, options=("--fmad=false",))
        return raw

    def compile(self, kernel: FusedKernel) -> Callable:
        """The launcher `launch(inputs, scalars, shape, out_shapes)` of `kernel` (see ember.core.fused_kernel)."""
        out_dtypes = [np.dtype(dtype) for _, dtype in kernel.outputs]
        if kernel.reduced:
            return self._rowwise(kernel, out_dtypes)

        def launch(inputs, scalars, shape, out_shapes):
            import cupy

            with cupy.cuda.Device(inputs[0].device.id):
                outs = [cupy.empty(shape, dtype=dt) for dt in out_dtypes]
                n, rank, args = elementwise_arguments(outs, inputs, scalars, shape, kernel.dtype)
                if n:
                    self._raw(kernel, rank)((-(-n // THREADS),), (THREADS,), tuple(args))
            return tuple(outs)
        return launch

    def _rowwise(self, kernel: FusedKernel, out_dtypes: list) -> Callable:
        cut = kernel.ndim - kernel.reduced

        def launch(inputs, scalars, shape, out_shapes):
            import cupy

            R, L = int(np.prod(shape[:cut], dtype=np.int64)), int(np.prod(shape[cut:], dtype=np.int64))
            with cupy.cuda.Device(inputs[0].device.id):
                outs = [cupy.empty(s, dtype=dt) for s, dt in zip(out_shapes, out_dtypes)]
                if R:
                    args = rowwise_arguments(outs, [cupy.ascontiguousarray(a) for a in inputs], scalars, R, L,
                                             kernel.dtype)
                    self._raw(kernel, None)((-(-R // 128),), (128,), tuple(args))
            return tuple(outs)
        return launch
