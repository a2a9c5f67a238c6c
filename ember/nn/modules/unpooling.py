"""MaxUnpool1d/2d/3d (torch.nn.modules.pooling): max pooling's partial inverses as layers."""
from __future__ import annotations

from .. import functional as F
from ._utils import _pair, _single, _triple
from .module import Module

__all__ = ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _MaxUnpoolNd(Module):
    """Stores kernel_size, stride (kernel_size by default) and padding as tuples of `_expand`'s length."""

    _expand = staticmethod(_single)
    _function = staticmethod(F.max_unpool1d)

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = self._expand(kernel_size)
        self.stride = self._expand(stride if stride is not None else kernel_size)
        self.padding = self._expand(padding)

    def forward(self, input, indices, output_size=None):
        return self._function(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d (its indices say where each value goes)."""


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d (its indices say where each value goes)."""

    _expand = staticmethod(_pair)
    _function = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d (its indices say where each value goes)."""

    _expand = staticmethod(_triple)
    _function = staticmethod(F.max_unpool3d)
