"""Pooling layers (torch.nn.modules.pooling): max, average and adaptive average, 1-d, 2-d and 3-d."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling; stride defaults to kernel_size."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        stride = stride if stride is not None else kernel_size
        self.stride = (stride,) if isinstance(stride, int) else tuple(stride)
        self.padding = (padding,) if isinstance(padding, int) else tuple(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    """Average pooling's arguments as given (2-d and 3-d); stride defaults to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling; stride defaults to kernel_size."""

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (None keeps that dim)."""

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling; stride defaults to kernel_size."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling; stride defaults to kernel_size."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _LPPoolNd(Module):
    """The p-norm of each window: (sum of x^p) ^ (1/p)."""

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class _AdaptiveMaxPoolNd(Module):
    """Max pooling to a fixed output size; return_indices adds each maximum's flat index in its plane."""

    _fn = staticmethod(F.adaptive_max_pool1d)

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    pass


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(F.adaptive_max_pool3d)


class _FractionalMaxPoolNd(Module):
    """Max pooling over windows of `kernel_size` at pseudo-random steps, to `output_size` or `output_ratio`
    (in (0, 1)) of the input's size; `_random_samples` (a buffer) fixes the steps."""

    _nd = 2
    _fn = staticmethod(F.fractional_max_pool2d)

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        nd = self._nd

        def expand(v):
            return tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd
        self.kernel_size = expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{nd}d requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                        _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    pass


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3
    _fn = staticmethod(F.fractional_max_pool3d)
