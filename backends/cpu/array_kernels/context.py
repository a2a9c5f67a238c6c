"""The array module a kernel runs on, and how the kernel table is bound to it.

Every kernel of this library is a module-level function whose first parameter is an
`ArrayModule`: `def neg(am, spec, a)`. `am.xp` is numpy on the cpu backend and cupy on cuda
(ember-cuda injects it), so one function serves both; `am` also holds what kernels derive
from the array module once (dtype maps, the float32 dtype, cached constant arrays) instead
of recomputing it per call.

Each kernel module ends with `KERNELS = {op name: entry}`. An entry is the kernel function,
or a `Family` when one generic function serves several ops that differ only in the array
function they call (`Family(binary, "multiply")` is `mul`: `binary(am, am.xp.multiply,
spec, a, b)`). `bind(table, am)` turns a table into {op name: callable(spec, *args)},
which is what a backend's `kernels()` hook returns. A kernel can be called, tested and
stepped through on its own: `pointwise.neg(ArrayModule(numpy, to_numpy_dtype), spec, a)`.
"""
from __future__ import annotations

import contextlib
import functools
import platform
import types
from typing import Callable, NamedTuple

from ember.core import dtype as _dt


#: elements per block of the cpu kernels that bound their scratch by working block by block (64Ki: the
#: temporaries of a block stay in the cache between the passes over it)
SCRATCH_BLOCK = 65536


def _native_dtypes(native: Callable) -> dict:
    """{ember dtype: native dtype} for every dtype `native` knows (cupy's map may not know bfloat16). A
    plain dict, so a kernel's lookup is the interpreter's fastest subscript (a dict subclass's is not)."""
    table = {}
    for d in _dt.ALL_DTYPES:
        try:
            table[d] = native(d)
        except Exception:           # a dtype this array module cannot hold: kernels never see it
            continue
    return table


class ArrayModule:
    """An array library as the kernels see it: `xp`, its dtypes, and what is derived from it once.

    Attributes: `xp` the array module; `native(dtype)` and `native_of[dtype]` map ember dtypes to
    `xp` dtypes (the second is a cached dict); `to_ember` maps back; `ndarray` the array class;
    `f32`, `f64`, `int64`, `bool_` native dtypes; `lowp` the native float16/bfloat16 dtypes and
    `lowp_dtypes` the same as ember dtypes (kernels compute those in float32: `compute_of[dt]`); `is_numpy`;
    `add_reduce` numpy's `add.reduce` (no np.sum wrapper) or `xp.sum` where ufuncs may lack the
    method (cupy), and `max_reduce`/`min_reduce` the same for `maximum`/`minimum` (np.max's wrapper
    costs about a microsecond a call); `exact_maximum` the native dtypes whose `maximum(0, a)` equals torch's relu
    bit for bit (-0.0 and NaN kept: numpy's x86 loops; empty elsewhere); `float_bits` the
    integer dtype of a float dtype's bits (numpy only); `int8`; `scratch_block` the elements per block
    of kernels that bound their temporaries by working block by block (None: whole arrays).
    """

    # slots: a kernel reads several of these per call, and a slot read is the cheapest attribute read
    __slots__ = ("xp", "native", "native_of", "to_ember", "ndarray", "f32", "f64", "int64", "int8", "bool_", "lowp",
                 "lowp_dtypes", "is_numpy", "add_reduce", "max_reduce", "min_reduce", "exact_maximum", "float_bits",
                 "_constants", "compute_of", "__dict__")

    def __init__(self, xp, native: Callable) -> None:
        self.xp = xp
        self.native = native
        self.native_of = _native_dtypes(native)
        self.to_ember = {native(d): d for d in _dt.ALL_DTYPES}
        self.ndarray = xp.ndarray
        self.f32 = xp.dtype("float32")
        self.f64 = xp.dtype("float64")
        self.int64 = xp.dtype("int64")
        self.bool_ = xp.dtype(bool)
        self.lowp = {native(_dt.float16), native(_dt.bfloat16)}
        self.lowp_dtypes = {_dt.float16, _dt.bfloat16}
        self.is_numpy = xp.__name__ == "numpy"
        self.add_reduce = xp.add.reduce if self.is_numpy else xp.sum
        self.max_reduce = xp.maximum.reduce if self.is_numpy else xp.max
        self.min_reduce = xp.minimum.reduce if self.is_numpy else xp.min
        # checked for sizes 1..1025 and strided views; ARM's max orders -0 below +0
        self.exact_maximum = {xp.dtype(d) for d in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8")} \
            if self.is_numpy and platform.machine().lower() in ("x86_64", "amd64") else set()
        # {float32/float64 native dtype: the integer dtype of its bits}, for kernels that select floats
        # by bit masks (numpy only). Dtype instances, not scalar types: `a.view(np.int32)` converts the
        # type to a dtype on every call, `a.view(dtype)` does not
        self.float_bits = {self.f32: xp.dtype("int32"), self.f64: self.int64} if self.is_numpy else {}
        self.int8 = xp.dtype("int8")
        self._constants: dict = {}
        # elements per block where a kernel works through a big elementwise update block by block (the
        # fused optimizers), so its temporaries stay small and in the cache: numpy; None (whole arrays,
        # fewer launches) elsewhere
        self.scratch_block = SCRATCH_BLOCK if self.is_numpy else None
        # {native dtype: the dtype a kernel computes it in}: float32 for float16 and bfloat16 (PyTorch's
        # opmath), the dtype itself otherwise; a dict read, no call, on every kernel's path
        self.compute_of = {nd: self.f32 if nd in self.lowp else nd for nd in self.native_of.values()}

    def constant(self, key, make: Callable):
        """The array `make()` returns, made once per key and then only read (row indices, vectors of
        ones). Cached on numpy only, read-only, at most 64 of them: another array module's arrays
        belong to one of its devices (a key would need it)."""
        a = self._constants.get(key)
        if a is None:
            a = make()
            if self.is_numpy and len(self._constants) < 64:
                a.flags.writeable = False
                self._constants[key] = a
        return a


def out(am: ArrayModule, r, dt):
    """A kernel's result `r` as an array of native dtype `dt` (a numpy scalar, which reductions
    return, becomes a 0-d array; an array already of `dt` is returned itself, not copied)."""
    if not isinstance(r, am.ndarray):
        r = am.xp.asarray(r)
    return r if r.dtype == dt else r.astype(dt)


def ones(am: ArrayModule, n: int, dtype):
    """A cached read-only vector of `n` ones."""
    return am.constant(("ones", n, dtype), lambda: am.xp.ones(n, dtype))


def flat_blocks(am: ArrayModule, arrays: tuple):
    """`arrays` (alike elementwise: one shape, C-contiguous) as tuples of flat views of `am.scratch_block`
    elements each, so an update's temporaries stay that small whatever the parameter's size; the whole
    arrays at once when they are small, not alike, or the array module works best on whole arrays."""
    n, block = arrays[0].size, am.scratch_block
    if block is None or n <= block or not all(a.flags.c_contiguous and a.shape == arrays[0].shape for a in arrays):
        yield arrays
        return
    flat = [a.reshape(-1) for a in arrays]
    for start in range(0, n, block):
        yield tuple(a[start:start + block] for a in flat)


def flat_blocks_with_scratch(am: ArrayModule, arrays: tuple, count: int, dtype):
    """`flat_blocks(am, arrays)`, each block with `count` scratch arrays of its shape: views of one buffer
    allocated for the first block, the largest, so a kernel's scratch is `count` blocks whatever the size."""
    scratch = None
    for block in flat_blocks(am, arrays):
        first = block[0]
        if scratch is None:
            scratch = am.xp.empty((count,) + first.shape, dtype)
        yield block, tuple(scratch[k, :len(first)] if first.ndim == 1 else scratch[k, ...] for k in range(count))


def row_sums(am: ArrayModule, x):
    """The row sums of a 2-D float array as one product with a cached vector of ones: one BLAS call,
    where a sum reduction loops once per short row (a batch's classes: several times slower). The
    rounding differs from a sequential sum's by ulps, as torch's vectorised sums do."""
    return x @ ones(am, x.shape[1], x.dtype)


def column_sums(am: ArrayModule, x):
    """The column sums of a 2-D float array as one product (a bias gradient: about twice as fast as
    walking the rows)."""
    return ones(am, x.shape[0], x.dtype) @ x


def fold_leading(a):
    """`a` as 2-D, its leading dims folded into one (a view when contiguous; zero-size dims allowed)."""
    n = 1
    for s in a.shape[:-1]:
        n *= s
    return a.reshape(n, a.shape[-1])


class Family(NamedTuple):
    """A kernel table entry for one op of a family: `kernel(am, getattr(am.xp, array_function),
    *constants, spec, *args)`. The array function is looked up once, when the table is bound."""

    kernel: Callable
    array_function: str
    constants: tuple = ()


def bind(table: dict, am: ArrayModule) -> dict[str, Callable]:
    """{op name: kernel(spec, *args)}: each entry of `table` given `am` (a bound method costs no
    more per call than a closure)."""
    bound: dict[str, Callable] = {}
    for name, entry in table.items():
        if isinstance(entry, Family):
            bound[name] = functools.partial(entry.kernel, am, getattr(am.xp, entry.array_function), *entry.constants)
        else:
            bound[name] = types.MethodType(entry, am)
    return bound


def quiet(xp, **errors):
    """numpy's floating-point warnings of the given kinds off for a block (`quiet(xp, divide="ignore")`), where
    the kernel wants torch's inf/NaN results silently; a no-op for array modules without errstate (cupy,
    which does not warn)."""
    return xp.errstate(**errors) if hasattr(xp, "errstate") else contextlib.nullcontext()
