"""The array module the shared kernel library runs on for cuda: cupy, with three adaptations.

backends/cpu/array_kernels is written against the array-module API (`xp`); cupy provides
nearly all of it. `namespace()` returns a module object holding every public name of cupy
(plain attribute lookups, no `__getattr__` cost per call) plus:

* `lib.stride_tricks.as_strided` accepting numpy's `writeable=` keyword (cupy's has none);
* `philox_blocks(seed, base, nblocks)`: the fused Philox4x32-10 RawKernel that
  `philox.random_bits` uses when the array module brings one (kernels/philox_cuda.py);
* nothing else: `errstate` stays absent (the library checks for it), so does bfloat16.

`native(dtype)` maps ember dtypes to cupy (= numpy) dtypes. cupy has no bfloat16: the map
returns ml_dtypes' bfloat16 so the kernels' dtype sets can name it, and `check_dtype`
refuses it where cuda memory is allocated, with a clear error.
"""
from __future__ import annotations

import types

_NS = None


def namespace():
    """The cupy namespace for `make_kernels` (built once, after cupy imported)."""
    global _NS
    if _NS is None:
        import cupy

        from .kernels import philox_cuda

        ns = types.ModuleType("ember_cuda.xp.cupy")
        ns.__dict__.update({k: v for k, v in vars(cupy).items() if not k.startswith("__")})
        _as_strided = cupy.lib.stride_tricks.as_strided

        def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
            return _as_strided(x, shape=shape, strides=strides)

        ns.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=as_strided))
        ns.philox_blocks = philox_cuda.philox_blocks
        _NS = ns
    return _NS


def native(dtype):
    """The cupy dtype of an ember dtype (bfloat16: ml_dtypes' numpy dtype, which cupy cannot hold)."""
    from ember.core.numpy_interop import to_numpy_dtype

    return to_numpy_dtype(dtype)


def check_dtype(dtype, what: str) -> None:
    """Refuse dtypes cupy cannot store (bfloat16), naming the operation."""
    from ember.core import dtype as _dt

    if dtype is _dt.bfloat16:
        from ember.core.errors import ArgumentTypeError

        raise ArgumentTypeError(f"{what}: the cuda backend does not support bfloat16 (cupy has no bfloat16 "
                                "dtype); use float16 or float32 on cuda")
