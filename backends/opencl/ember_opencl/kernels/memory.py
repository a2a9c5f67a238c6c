"""Allocation, views, copies (with casts, any layout to any layout), fills and ranges."""
from __future__ import annotations

import numpy as np

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


def make(backend) -> dict:
    def as_strided(spec, a, *unused):
        shape, _, strides, offset = spec
        return a.view(shape, strides, offset)

    def copy_(spec, self, src, non_blocking=False):
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

    def fill_(spec, self, value):
        ct = cg.opmath(self.dtype)
        if not isinstance(value, (bool, int, float)):
            value = value.item() if hasattr(value, "item") else float(value)
        if ct not in cg.FLOAT_CL and isinstance(value, float):
            ct = "double" if self.device.info.fp64 else "float"
        return elementwise.run(self, [value], [ct], "x0", ct, tag="fill")

    def empty(spec, size, dtype=None, device=None, requires_grad=False):
        return backend.new_array(spec[0], to_numpy_dtype(spec[1]), backend.device(_index(device)))

    def arange(spec, start, end=None, step=1, dtype=None, device=None, requires_grad=False):
        if end is None:
            start, end = 0, start
        out = backend.new_array(spec[0], to_numpy_dtype(spec[1]), backend.device(_index(device)))
        if out.dtype.kind in "iub" and all(isinstance(v, int) for v in (start, step)):
            ct = "long"
        else:
            ct = "double" if out.device.info.fp64 else "float"
        return elementwise.run(out, [], [], "start + step * (" + ct + ")gid", ct,
                               [("start", ct, start), ("step", ct, step)], tag="arange")

    return {"as_strided": as_strided, "copy_": copy_, "fill_.Scalar": fill_, "empty.memory_format": empty,
            "arange.start_step": arange}
