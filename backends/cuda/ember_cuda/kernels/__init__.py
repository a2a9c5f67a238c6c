"""The cuda kernel table: the shared array-module library on cupy, plus cuda's own kernels.

1. `ember_cpu.array_kernels.make_kernels(xp, native)` with `xp` the cupy namespace of
   ember_cuda.xp: every kernel the cpu backend has, running on cupy arrays, random kernels
   drawing from the cuda default generator through the fused Philox block function.
2. Overrides where cupy differs from numpy: `as_strided`/`expand` and the `view`/`slice`
   paths that use it (a view is a memory pointer into the allocation; cupy has no buffer=
   constructor), `empty`/`arange` (on the device the factory names; bfloat16 refused with a
   clear error), `normal_` (Box-Muller on the host, so cuda's normals equal cpu's bit for bit).
3. With `fused=True`, the fused kernels of kernels/fused.py (softmax, log_softmax, layer_norm,
   cross_entropy) replace the library's multi-pass versions.
4. With several GPUs, every kernel is wrapped to run under the device of its operands.
"""
from __future__ import annotations

import functools
from typing import Callable


def make_kernels(backend, fused: bool = True) -> dict[str, Callable]:
    import cupy

    from ember_cpu.array_kernels import make_kernels as shared

    from ..xp import check_dtype, namespace, native

    xp = namespace()
    kernels = shared(xp, native)
    ndarray = cupy.ndarray

    def _index(device):
        if device is None:
            return None
        from ember.core.device import as_device

        return as_device(device).index

    def as_strided(spec, a, *unused):
        shape, _, strides, offset = spec
        item = a.itemsize
        ptr = cupy.cuda.MemoryPointer(a.data.mem, int(offset) * item)
        return ndarray(tuple(shape), dtype=a.dtype, memptr=ptr, strides=tuple(int(s) * item for s in strides))

    # the library's view/slice fall back to its numpy-only as_strided; these use cupy's
    def view(spec, a, size):
        out = a.reshape(spec[0])
        return out if out.base is not None else as_strided(spec, a)

    def slice_(spec, a, dim=0, start=None, end=None, step=1):
        d = dim % a.ndim
        out = a[(slice(None),) * d + (slice(start, end, step),)]
        return out if out.size else as_strided(spec, a)

    def empty(spec, size, dtype=None, device=None, requires_grad=False):
        return backend.empty(spec[0], spec[1], _index(device))

    shared_arange = kernels["arange.start_step"]

    def arange(spec, start, end=None, step=1, dtype=None, device=None, requires_grad=False):
        check_dtype(spec[1], "arange()")
        with cupy.cuda.Device(backend.index(_index(device))):
            return shared_arange(spec, start, end, step)

    def normal_(spec, self, mean=0.0, std=1.0, generator=None):
        # Box-Muller's log/sqrt/cos/sin differ between cupy's and numpy's math libraries by an ulp
        # now and then, and the conformance suite wants cuda's normals equal to cpu's: the values
        # are computed on the host from the same Philox stream, then copied (as ember-opencl does).
        # The uniforms, integers, permutations and dropout masks are drawn on the device.
        import numpy as np

        from ember_cpu.array_kernels import philox

        values = generator.draw(lambda seed, offset: philox.normal(np, seed, offset, self.shape, spec[1].name, mean, std))
        self[...] = cupy.asarray(values)
        return self

    kernels.update({"normal_": normal_, "as_strided": as_strided, "expand": as_strided, "view": view,
                    "slice.Tensor": slice_, "empty.memory_format": empty, "arange.start_step": arange})
    if fused:
        from . import fused as fused_kernels

        kernels.update(fused_kernels.make(xp, native, kernels))
    if backend.device_count() > 1:
        kernels = {name: on_operand_device(k) for name, k in kernels.items()}
    return kernels


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
