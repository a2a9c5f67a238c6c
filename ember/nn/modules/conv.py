"""Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn.modules.conv)."""
from __future__ import annotations

import math

import ember
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from ._utils import _pair, _reverse_repeat_tuple, _single, _triple
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_VALID_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _VALID_PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_VALID_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = list(_reverse_repeat_tuple(self.padding))
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        self.weight = Parameter(ember.empty(shape + tuple(kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _ConvKd(_ConvNd):
    """A convolution of a fixed number of spatial dimensions: `_expand` makes each size argument a tuple of
    that many, `_function` is the functional form (F.conv1d, conv2d or conv3d)."""

    _expand = staticmethod(_single)
    _function = staticmethod(F.conv1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        k = self._expand
        super().__init__(in_channels, out_channels, k(kernel_size), k(stride),
                         padding if isinstance(padding, str) else k(padding), k(dilation), False,
                         k(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return self._function(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight,
                                  bias, self.stride, self._expand(0), self.dilation, self.groups)
        return self._function(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvKd):
    """1-D convolution over (N, C, L) input."""


class Conv2d(_ConvKd):
    """2-D convolution over (N, C, H, W) input."""

    _expand = staticmethod(_pair)
    _function = staticmethod(F.conv2d)


class Conv3d(_ConvKd):
    """3-D convolution over (N, C, D, H, W) input."""

    _expand = staticmethod(_triple)
    _function = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        if output_size is None:
            return _single(self.output_padding) if num_spatial_dims == 1 else self.output_padding
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements "
                             f"(got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i in range(len(output_size)):
            size, min_size, max_size = output_size[i], min_sizes[i], max_sizes[i]
            if size < min_size or size > max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {list(input.size())[2:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(num_spatial_dims))


class _ConvTransposeKd(_ConvTransposeNd):
    """A transposed convolution of `_dims` spatial dimensions (`_expand`, `_function` as for _ConvKd)."""

    _dims = 1
    _expand = staticmethod(_single)
    _function = staticmethod(F.conv_transpose1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        k = self._expand
        super().__init__(in_channels, out_channels, k(kernel_size), k(stride), k(padding),
                         k(dilation), True, k(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              self._dims, self.dilation)
        return self._function(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                              self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeKd):
    """1-D transposed convolution."""


class ConvTranspose2d(_ConvTransposeKd):
    """2-D transposed convolution."""

    _dims = 2
    _expand = staticmethod(_pair)
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeKd):
    """3-D transposed convolution."""

    _dims = 3
    _expand = staticmethod(_triple)
    _function = staticmethod(F.conv_transpose3d)


# ------------------------------------------------------------------------------------ lazy
class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from the first input (dim 1 batched, 0 unbatched), for the convolution class it precedes."""

    def _lazy_parameters(self, out_channels: int, bias: bool, device, dtype) -> None:
        """The uninitialized weight (and bias) replacing those the layer's __init__ made for in_channels 0."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input) -> int:
        spatial = len(self._expand(0))                     # the layer's number of spatial dimensions
        unbatched, batched = spatial + 1, spatial + 2
        if input.dim() not in (unbatched, batched):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {batched}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == batched else input.shape[0]


class _LazyConvKd(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyConvTransposeKd(_LazyConvXdMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvKd, Conv1d):
    """A Conv1d whose in_channels comes from its first input (then it becomes a Conv1d)."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvKd, Conv2d):
    """A Conv2d whose in_channels comes from its first input (then it becomes a Conv2d)."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvKd, Conv3d):
    """A Conv3d whose in_channels comes from its first input (then it becomes a Conv3d)."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeKd, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeKd, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeKd, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels comes from its first input."""

    cls_to_become = ConvTranspose3d
