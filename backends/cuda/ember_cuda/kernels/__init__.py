"""The cuda kernel table: the shared array-module library on cupy, plus cuda's own kernels.

1. `ember_cpu.array_kernels.make_kernels(xp, native)` with `xp` the cupy namespace of
   ember_cuda.xp: every kernel the cpu backend has, running on cupy arrays, random kernels
   drawing from the cuda default generator through the fused Philox block function.
2. Overrides where cupy differs from numpy (`OVERRIDES`, below): `as_strided`/`expand` and the
   `view`/`slice` paths that use it (a view is a memory pointer into the allocation; cupy has
   no buffer= constructor), `empty`/`arange` (on the device the factory names; bfloat16
   refused with a clear error), `normal_` (Box-Muller on the host, so cuda's normals equal
   cpu's bit for bit). They are self-contained: they use no internals of the library's modules.
3. With `fused=True`, the fused kernels of kernels/fused.py (softmax, log_softmax, layer_norm,
   cross_entropy) replace the library's multi-pass versions.
4. With several GPUs, every kernel is wrapped to run under the device of its operands.

cuda's own kernels are module-level functions `fn(am, spec, *op_args)` like the library's
(backends/cpu/array_kernels/context.py), with `am` a `CudaArrayModule`: the library's
`ArrayModule` of the cupy namespace plus the backend and the library's own kernel table, which
the overrides and the fused kernels call for the cases they hand back.
"""
from __future__ import annotations

import functools
from typing import Callable

from ember_cpu.array_kernels.context import ArrayModule, bind

from ..xp import check_dtype


class CudaArrayModule(ArrayModule):
    """The array module cuda's own kernels run on: `ArrayModule(xp, native)` plus `library` (the
    shared library's kernel table, as `ember_cpu.array_kernels.make_kernels` returned it: the
    kernels cuda's replace, which they call for the cases they do not handle), `backend` (the
    CUDABackend: allocation on a named device) and `f16` (the native float16 dtype)."""

    def __init__(self, xp, native: Callable, library: dict[str, Callable], backend=None) -> None:
        super().__init__(xp, native)
        self.library = library
        self.backend = backend
        self.f16 = xp.dtype("float16")


def make_kernels(backend, fused: bool = True) -> dict[str, Callable]:
    from ember_cpu.array_kernels import make_kernels as shared

    from ..xp import namespace, native

    xp = namespace()
    library = shared(xp, native)
    am = CudaArrayModule(xp, native, library, backend)
    kernels = dict(library)
    kernels.update(bind(OVERRIDES, am))
    if fused:
        from . import fused as fused_kernels

        kernels.update(bind(fused_kernels.KERNELS, am))
    if backend.device_count() > 1:
        kernels = {name: on_operand_device(k) for name, k in kernels.items()}
    return kernels


def _index(device):
    """The device index a factory's `device=` argument names (None: the current device)."""
    if device is None:
        return None
    from ember.core.device import as_device

    return as_device(device).index


def as_strided(am: CudaArrayModule, spec, a, *unused):
    """The view the spec describes (shape, dtype, element strides, element offset): a cupy array
    on a memory pointer into `a`'s allocation (also `expand`)."""
    shape, _, strides, offset = spec
    item = a.itemsize
    ptr = am.xp.cuda.MemoryPointer(a.data.mem, int(offset) * item)
    return am.ndarray(tuple(shape), dtype=a.dtype, memptr=ptr, strides=tuple(int(s) * item for s in strides))


# the library's view/slice fall back to its numpy-only as_strided; these use cupy's
def view(am: CudaArrayModule, spec, a, size):
    """a.reshape when that is a view, else the strided view the spec describes."""
    out = a.reshape(spec[0])
    return out if out.base is not None else as_strided(am, spec, a)


def slice_(am: CudaArrayModule, spec, a, dim=0, start=None, end=None, step=1):
    """cupy's basic slice, or the strided view the spec describes when that is empty (an empty
    cupy slice need not carry the spec's offset and strides)."""
    d = dim % a.ndim
    out = a[(slice(None),) * d + (slice(start, end, step),)]
    return out if out.size else as_strided(am, spec, a)


def empty(am: CudaArrayModule, spec, size, dtype=None, device=None, requires_grad=False):
    """A new array on the device the call names (the backend refuses bfloat16)."""
    return am.backend.empty(spec[0], spec[1], _index(device))


def arange(am: CudaArrayModule, spec, start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """The library's arange, run on the device the call names (bfloat16 refused)."""
    check_dtype(spec[1], "arange()")
    with am.xp.cuda.Device(am.backend.index(_index(device))):
        return am.library["arange.start_step"](spec, start, end, step)


def normal_(am: CudaArrayModule, spec, self, mean=0.0, std=1.0, generator=None):
    # Box-Muller's log/sqrt/cos/sin differ between cupy's and numpy's math libraries by an ulp
    # now and then, and the conformance suite wants cuda's normals equal to cpu's: the values
    # are computed on the host from the same Philox stream, then copied (as ember-opencl does).
    # The uniforms, integers, permutations and dropout masks are drawn on the device.
    import numpy as np

    from ember_cpu.array_kernels import philox

    values = generator.draw(lambda seed, offset: philox.normal(np, seed, offset, self.shape, spec[1].name, mean, std))
    self[...] = am.xp.asarray(values)
    return self


OVERRIDES = {"normal_": normal_, "as_strided": as_strided, "expand": as_strided, "view": view,
             "slice.Tensor": slice_, "empty.memory_format": empty, "arange.start_step": arange}


def _first_device(args, kwargs):
    import cupy

    for a in args:
        if isinstance(a, cupy.ndarray):
            return a.device.id
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, cupy.ndarray):
                    return b.device.id
    dev = kwargs.get("device")
    if dev is not None:
        from ember.core.device import as_device

        return as_device(dev).index
    return None


def on_operand_device(kernel: Callable) -> Callable:
    """Run `kernel` with the current cupy device set to its operands' (multi-GPU machines)."""
    import cupy

    @functools.wraps(kernel)
    def run(*args, **kwargs):
        dev = _first_device(args, kwargs)
        if dev is None:
            return kernel(*args, **kwargs)
        with cupy.cuda.Device(dev):
            return kernel(*args, **kwargs)
    return run
