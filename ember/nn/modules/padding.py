"""Padding layers (torch.nn.modules.padding): constant, zero, reflection, replication and circular, in
1, 2 and 3 dimensions, each a call of F.pad with its mode. `padding` is an int (every side) or a tuple
of 2, 4 or 6 ints (left, right, top, bottom, front, back), as torch takes it; F.pad checks it."""
from __future__ import annotations

from .. import functional as F
from ._utils import _ntuple
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular")
           for n in (1, 2, 3)]


class _PadNd(Module):
    """F.pad(input, padding, mode) over the last `dims` dimensions."""

    mode = "constant"
    dims = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(2 * self.dims)(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class _CircularPadNd(_PadNd):
    mode = "circular"


class ConstantPad1d(_ConstantPadNd):
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    dims = 3


class ZeroPad1d(_ZeroPadNd):
    dims = 1


class ZeroPad2d(_ZeroPadNd):
    dims = 2


class ZeroPad3d(_ZeroPadNd):
    dims = 3


class ReflectionPad1d(_ReflectionPadNd):
    dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    dims = 3


class ReplicationPad1d(_ReplicationPadNd):
    dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    dims = 3


class CircularPad1d(_CircularPadNd):
    dims = 1


class CircularPad2d(_CircularPadNd):
    dims = 2


class CircularPad3d(_CircularPadNd):
    dims = 3
