"""CLArray: the opencl backend's native array, a strided view of a device buffer.

Shape, strides (exposed in bytes like numpy's; `elem_strides` in elements), storage offset in
elements, numpy dtype, and the Block holding the buffer. Views share the Block, so the
buffer lives while any view does and returns to the caching allocator after the last.
"""
from __future__ import annotations

import numpy as np


class CLArray:
    __slots__ = ("shape", "dtype", "elem_strides", "offset", "block", "device")

    def __init__(self, shape, dtype, strides, offset: int, block, device) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.elem_strides = tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.block = block
        self.device = device            # ember_opencl.context.Device

    @property
    def buffer(self):
        return self.block.buffer

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s * self.dtype.itemsize for s in self.elem_strides)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> "_Flags":
        return _Flags(self)

    @property
    def is_contiguous(self) -> bool:
        if 0 in self.shape:
            return True
        expected = 1
        for n, st in zip(reversed(self.shape), reversed(self.elem_strides)):
            if n != 1 and st != expected:
                return False
            expected *= n
        return True

    def view(self, shape, strides, offset) -> "CLArray":
        return CLArray(shape, self.dtype, strides, offset, self.block, self.device)

    def extent(self) -> tuple[int, int]:
        """[lo, hi) in elements of the storage this view touches (lo == hi when empty)."""
        if 0 in self.shape:
            return self.offset, self.offset
        lo = hi = self.offset
        for n, st in zip(self.shape, self.elem_strides):
            if st >= 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
        return lo, hi + 1

    def __repr__(self) -> str:
        return (f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.elem_strides}, "
                f"offset={self.offset}, device=opencl:{self.device.info.index})")


class _Flags:
    __slots__ = ("_a",)

    def __init__(self, a: CLArray) -> None:
        self._a = a

    @property
    def c_contiguous(self) -> bool:
        return self._a.is_contiguous
