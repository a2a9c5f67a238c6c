"""Allocation, views, copies (with casts, any layout to any layout), fills and ranges.

Each kernel is `fn(backend, spec, *op_args)` (kernels/table.py); the module ends with its table
`KERNELS`. `copy_` is also what other kernel modules call to copy between layouts.
"""
from __future__ import annotations

import numpy as np

from ember.core.dtype import wrap_unsigned
from ember.core.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from ..array import CLArray
from . import elementwise


def _overlaps(a: CLArray, b: CLArray) -> bool:
    if a.block is not b.block:
        return False
    (alo, ahi), (blo, bhi) = a.extent(), b.extent()
    return alo < bhi and blo < ahi


def _index(device) -> int | None:
    if device is None:
        return None
    from ember.core.device import as_device

    return as_device(device).index


def as_strided(backend, spec, a, *unused):
    """The view of `a` the spec describes (shape, dtype, element strides, element offset)."""
    shape, _, strides, offset = spec
    return a.view(shape, strides, offset)


def view_dtype(backend, spec, a, dtype):
    """The same buffer read as `dtype`: the spec's shape, element strides and offset in that dtype."""
    shape, dt, strides, offset = spec
    return CLArray(shape, to_numpy_dtype(dt), strides, offset, a.block, a.device)


def copy_(backend, spec, self, src, non_blocking=False):
    """self[...] = src, casting; `src` may be a host value, on another device, or overlap `self`
    (then it is first copied to a temporary)."""
    if not isinstance(src, CLArray):
        src = backend.from_host(np.asarray(src), self.device.info.index)
    if src.device is not self.device:
        src = backend.from_host(backend.to_host(src), self.device.info.index)
    elif _overlaps(self, src) and (src.elem_strides != self.elem_strides or src.offset != self.offset
                                   or src.shape != self.shape):
        tmp = backend.new_array(src.shape, src.dtype, src.device)
        elementwise.run(tmp, [src], [cg.load_type(src.dtype)], "x0", cg.load_type(src.dtype), tag="copy")
        src = tmp
    lt = cg.load_type(src.dtype)
    elementwise.run(self, [src], [lt], "x0", lt, tag="copy")
    return self


def fill_(backend, spec, self, value):
    """self[...] = value in the opmath type (a float value for an integer array goes through double,
    float without fp64, and is converted on store)."""
    ct = cg.opmath(self.dtype)
    if not isinstance(value, (bool, int, float)):
        value = value.item() if hasattr(value, "item") else float(value)
    value = wrap_unsigned(value, self.dtype)
    if ct not in cg.FLOAT_CL and isinstance(value, float):
        ct = "double" if self.device.info.fp64 else "float"
    return elementwise.run(self, [value], [ct], "x0", ct, tag="fill")


def empty(backend, spec, size, dtype=None, device=None, requires_grad=False):
    """A new uninitialised contiguous array on the device the call names (the current one if none)."""
    return backend.new_array(spec[0], to_numpy_dtype(spec[1]), backend.device(_index(device)))


def arange(backend, spec, start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """start + step * i for each i of the spec's length: in long for an integer result (start and step
    truncated to integers first, as torch's kernel reads them), else in double (float without fp64), rounded
    once to the result dtype."""
    if end is None:
        start, end = 0, start
    out = backend.new_array(spec[0], to_numpy_dtype(spec[1]), backend.device(_index(device)))
    if out.dtype.kind in "iu":
        ct = "long"
        start, step = int(start), int(step)
    elif out.dtype.kind == "b" and all(isinstance(v, int) for v in (start, step)):
        ct = "long"
    else:
        ct = "double" if out.device.info.fp64 else "float"
    return elementwise.run(out, [], [], "start + step * (" + ct + ")gid", ct,
                           [("start", ct, start), ("step", ct, step)], tag="arange")


KERNELS = {"as_strided": as_strided, "view.dtype": view_dtype, "copy_": copy_, "fill_.Scalar": fill_, "empty.memory_format": empty,
           "arange.start_step": arange}
