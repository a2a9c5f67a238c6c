"""MetaArray: the native array of the meta backend (metadata only)."""
from __future__ import annotations

from ember.core.symint import SymShape, surely


class MetaArray:
    """Shape, dtype, strides (exposed in bytes, like numpy), storage offset and size."""

    __slots__ = ("shape", "dtype", "elem_strides", "offset", "storage_nbytes")

    def __init__(self, shape, dtype, strides, offset: int, storage_nbytes: int | None) -> None:
        for s in shape:
            if s.__class__ is not int:        # a symbolic shape (a dynamic-shape export)
                shape = SymShape(shape)
                break
        self.shape = shape
        self.dtype = dtype
        self.elem_strides = tuple(strides)
        self.offset = offset
        if storage_nbytes is None:
            n = 1
            for s in shape:
                n *= s
            storage_nbytes = n * dtype.itemsize
        self.storage_nbytes = storage_nbytes

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s * self.dtype.itemsize for s in self.elem_strides)

    @property
    def flags(self) -> "_Flags":
        """numpy-style flags (c_contiguous), read by the shared shape rules."""
        return _Flags(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the storage this array owns (new arrays) or views."""
        return self.storage_nbytes

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype}, strides={self.elem_strides}, offset={self.offset})"


class _Flags:
    __slots__ = ("_a",)

    def __init__(self, array: MetaArray) -> None:
        self._a = array

    @property
    def c_contiguous(self) -> bool:
        """C-contiguous as numpy and PyTorch define it: size-1 dimensions and empty arrays ignored."""
        shape, strides = self._a.shape, self._a.elem_strides
        if shape.__class__ is SymShape:
            return _surely_contiguous(shape, strides)
        if 0 in shape:
            return True
        expected = 1
        for n, st in zip(reversed(shape), reversed(strides)):
            if n != 1 and st != expected:
                return False
            expected *= n
        return True


def _surely_contiguous(shape, strides) -> bool:
    """c_contiguous of a symbolic shape, True only when it holds for every size the dimensions may take
    (no guard: contiguity only picks a layout, which the program recomputes when it runs)."""
    if any(surely("eq", n, 0) for n in shape):
        return True
    expected = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if not surely("eq", n, 1) and not surely("eq", st, expected):
            return False
        expected *= n
    return True
