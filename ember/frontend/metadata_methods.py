"""Tensor's questions about itself that torch answers without running an op: `ndimension`, `get_device`,
`is_signed`, `is_same_size`, `is_nonzero` and `positive` (the tensor itself), mixed into Tensor; the
module-level forms torch offers too are in ember/functional.py."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError

if TYPE_CHECKING:
    from .tensor import Tensor

#: the devices whose tensors report no index (torch's get_device is -1 there)
_NO_INDEX = frozenset({"cpu", "meta"})


class MetadataQueries:
    """Mixed into Tensor: answers read from the shape, dtype and device (is_nonzero reads the one value)."""

    __slots__ = ()

    def ndimension(self) -> int:
        """dim(), under torch's older name."""
        return self.dim()

    def get_device(self) -> int:
        """The index of the device holding the tensor; -1 on the cpu and meta devices, as torch."""
        dev = self.device
        return -1 if dev.type in _NO_INDEX else (dev.index or 0)

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (all but uint8 and bool)."""
        return self.dtype not in (_dt.uint8, _dt.bool)

    def is_same_size(self, other: "Tensor") -> bool:
        """Whether `other` has this tensor's shape."""
        from .tensor import Tensor

        if not isinstance(other, Tensor):
            raise ArgumentTypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                                    f"{type(other).__name__}")
        return self.shape == other.shape

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (torch's error for any other)."""
        n = self.numel()
        if n != 1:
            raise ArgumentValueError("Boolean value of Tensor with " +
                                     ("no values" if n == 0 else "more than one value") + " is ambiguous")
        return bool(self.item())

    def positive(self) -> "Tensor":
        """The tensor itself (unary plus), refused for bool as torch refuses it."""
        if self.dtype is _dt.bool:
            raise DTypeError("positive(): The `+` operator, on a bool tensor is not supported.")
        return self
