"""The opencl backend's fused-kernel generator: one OpenCL C kernel per fused chain of pointwise ops.

`OpenCLFusedCompiler.compile(kernel)` returns a launcher for an `ember.core.fused_kernel.FusedKernel`:
each work-item computes one element of the iteration shape, loading every input through its own
strides (a broadcast input has stride 0 along the dimensions it does not vary in), evaluating the
statements in the kernel's dtype and storing the outputs. Dimensions are collapsed per launch as the
elementwise engine collapses them (kernels/elementwise.py), so the generated source depends on the
collapsed rank: one source per (kernel, rank), written into the on-disk kernel cache
(`ember.core.kernel_cache`, `<name>_r<rank>.cl`), built from that file's text once per device and kept
in the device's program cache. The sources are ember.core.fused_c's, in OpenCL C (`DIALECT`); OpenCL C
has every function of the registry's vocabulary, so the generator declares them all: exp, tanh and erf
fuse here too.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from ember.core.fused_c import FUNCTIONS, CDialect, elementwise_source
from ember.core.fused_c import rowwise_source as c_rowwise_source
from ember.core.fused_kernel import FusedKernel
from ember.core.kernel_cache import write_source

from . import codegen as cg
from .kernels import elementwise
from .kernels.elementwise import broadcast_strides

__all__ = ["OpenCLFusedCompiler"]

#: OpenCL C's way of writing ember.core.fused_c's kernels
DIALECT = CDialect(backend="opencl", kernel="__kernel void", pointer="__global ", index="long",
                   thread="get_global_id(0)", storage=cg.storage, load=cg.load, store=cg.store,
                   accumulator="#ifdef EMBER_FP64\ntypedef double ACC;\n#else\ntypedef T ACC;\n#endif\n")


def source(kernel: FusedKernel, rank: int) -> str:
    """The OpenCL C of `kernel` for iteration shapes collapsed to `rank` dimensions (kernel `fused`)."""
    return elementwise_source(DIALECT, kernel, rank)


def rowwise_source(kernel: FusedKernel) -> str:
    """The OpenCL C of a reducing kernel (kernel `rowwise`, ember.core.fused_c): one work-item per row; sums
    accumulate in double where the device has it."""
    return c_rowwise_source(DIALECT, kernel)


class OpenCLFusedCompiler:
    """The generator the opencl plugin offers (hookspec `ember_fused_kernel_compiler`)."""

    functions = FUNCTIONS
    reductions = True                   # row-wise reducing kernels too (rowwise_source)

    def __init__(self, backend) -> None:
        from . import context

        self.backend = backend
        # one work-item per row: a reduction over few rows (a whole sum: one) would run on few threads, where
        # the backend's own reduction kernels spread it (a GPU wants hundreds of rows, a CPU device a couple)
        self.min_rows = 2 if "cpu" in context.device(None).info.type else 256
        self._lock = threading.Lock()
        self._sources: dict[tuple, str] = {}          # (kernel key, rank) -> source text (read from its file)

    def strided_bmm(self, spec, a, b):
        """bmm of operands with two batch dimensions, read with their strides (kernels/linalg.py): compiled
        code's strided_bmm (ember/compiler/layout.py)."""
        from .kernels import linalg

        return linalg.bmm(self.backend, spec, a, b)

    def source_of(self, kernel: FusedKernel) -> str:
        """The source for the kernel's full rank (`EMBER_LOGS=output_code` prints it)."""
        return rowwise_source(kernel) if kernel.reduced else source(kernel, max(kernel.ndim, 1))

    def compile(self, kernel: FusedKernel) -> Callable:
        """The launcher `launch(inputs, scalars, shape, out_shapes)` of `kernel` (see ember.core.fused_kernel)."""
        if kernel.reduced:
            return self._rowwise(kernel)
        out_dtypes = [np.dtype(dtype) for _, dtype in kernel.outputs]
        ctype = "double" if kernel.dtype == "float64" else "float"
        key = kernel.key

        def launch(inputs, scalars, shape, out_shapes):
            dev = inputs[0].device
            outs = [self.backend.new_array(shape, dt, dev) for dt in out_dtypes]
            n = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if n == 0:
                return tuple(outs)
            cshape, strides = cg.collapse(shape, [o.elem_strides for o in outs] +
                                          [broadcast_strides(a, shape) for a in inputs])
            rank = max(len(cshape), 1)
            if not cshape:
                cshape, strides = (1,), [(0,) for _ in strides]
            text = self._source(kernel, rank)
            built = cg.get_kernel(dev, ("fused", key, rank), lambda: text, name="fused")
            i64 = np.int64
            args = [i64(n)] + [i64(s) for s in cshape]
            for array, st in zip(outs + list(inputs), strides):
                args += [array.buffer, i64(array.offset)] + [i64(s) for s in st]
            args += [cg.scalar_arg(s, ctype) for s in scalars]
            cg.launch(dev, built, n, args)
            return tuple(outs)
        return launch

    def _source(self, kernel: FusedKernel, rank: int) -> str:
        """The kernel's source for `rank`, written to the kernel cache once and read back from its file."""
        with self._lock:
            text = self._sources.get((kernel.key, rank))
            if text is None:
                path = write_source(f"{kernel.name}_r{rank}.cl", source(kernel, rank))
                text = self._sources[(kernel.key, rank)] = path.read_text()
        return text

    def _rowwise(self, kernel: FusedKernel) -> Callable:
        """The launcher of a reducing kernel: one work-item per row, operands made contiguous first."""
        cut = kernel.ndim - kernel.reduced
        out_dtypes = [np.dtype(dtype) for _, dtype in kernel.outputs]
        ctype = "double" if kernel.dtype == "float64" else "float"
        with self._lock:
            path = write_source(f"{kernel.name}_rows.cl", rowwise_source(kernel))
            text = path.read_text()

        def launch(inputs, scalars, shape, out_shapes):
            dev = inputs[0].device
            outer = shape[:cut]
            R, L = int(np.prod(outer, dtype=np.int64)), int(np.prod(shape[cut:], dtype=np.int64))
            outs = [self.backend.new_array(s, dt, dev) for s, dt in zip(out_shapes, out_dtypes)]
            if R == 0:
                return tuple(outs)
            built = cg.get_kernel(dev, ("fused_rows", kernel.key), lambda: text, name="rowwise")
            i64 = np.int64
            args = [i64(R), i64(L)]
            for array in outs + [self._contiguous(a) for a in inputs]:
                args += [array.buffer, i64(array.offset)]
            args += [cg.scalar_arg(s, ctype) for s in scalars]
            cg.launch(dev, built, R, args)
            return tuple(outs)
        return launch

    def _contiguous(self, a):
        """`a` itself when C-contiguous, else a contiguous copy (the row-wise kernel indexes by position)."""
        if a.is_contiguous:
            return a
        copy = self.backend.new_array(a.shape, a.dtype, a.device)
        ct = cg.opmath(a.dtype)
        return elementwise.run(copy, [a], [ct], "x0", ct)
