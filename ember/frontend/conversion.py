"""Tensor conversions: `to` (PyTorch's overloads resolved to one `_to_copy` call, or self),
the dtype shortcuts (`.float()`, `.long()`, ...), `.cpu()`, and the `new_*` factories."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ember.core.errors import ArgumentTypeError

from ember.core import dtype as _dt
from ember.core.device import as_device, device as _device

if TYPE_CHECKING:
    from .tensor import Tensor


def tensor_to(self, *args, dtype=None, device=None, non_blocking: bool = False, copy: bool = False,
              memory_format=None):
    from ember._generated import functions as F
    from .tensor import Tensor

    for a in args:
        if isinstance(a, _dt.dtype):
            dtype = a
        elif isinstance(a, (str, _device)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, bool):
            non_blocking = a
        elif isinstance(a, int):
            device = f"{self.device.type}:{a}"
        else:
            raise ArgumentTypeError(f"to() received an invalid argument of type {type(a).__name__}; expected a "
                                    "dtype, a device, or a tensor")
    target_dtype = dtype or self.dtype
    target_device = self.device if device is None else as_device(device)
    if target_device.index is None and self.device.type == target_device.type:
        target_device = self.device
    if not copy and target_dtype is self.dtype and target_device == self.device:
        return self
    return F._to_copy(self, dtype=target_dtype, device=target_device, non_blocking=non_blocking)


class ConversionMethods:
    """Conversion methods of ember.Tensor (mixed into the class)."""

    __slots__ = ()

    def to(self, *args, **kwargs) -> "Tensor":
        """to(dtype) / to(device, dtype=None) / to(other): a converted copy, or self if unchanged."""
        return tensor_to(self, *args, **kwargs)

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self, device=None) -> "Tensor":
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def type(self, dtype=None):
        """The type name ("ember.FloatTensor"), or the tensor converted to `dtype`: a dtype, or a type name
        as torch writes it ("torch.DoubleTensor"; "ember.DoubleTensor" too)."""
        if dtype is None:
            return f"ember.{_TYPE_NAMES.get(self._dtype.name, self._dtype.name)}"
        if isinstance(dtype, str):
            from .legacy_types import dtype_of_type_name

            named = dtype_of_type_name(dtype)
            if named is None:
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = named
        return self.to(dtype)

    def float(self) -> "Tensor":
        return self.to(_dt.float32)

    def double(self) -> "Tensor":
        return self.to(_dt.float64)

    def half(self) -> "Tensor":
        return self.to(_dt.float16)

    def bfloat16(self) -> "Tensor":
        return self.to(_dt.bfloat16)

    def long(self) -> "Tensor":
        return self.to(_dt.int64)

    def int(self) -> "Tensor":
        return self.to(_dt.int32)

    def short(self) -> "Tensor":
        return self.to(_dt.int16)

    def bool(self) -> "Tensor":
        return self.to(_dt.bool)

    def byte(self) -> "Tensor":
        return self.to(_dt.uint8)

    def char(self) -> "Tensor":
        return self.to(_dt.int8)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def new_empty(self, *args, size=None, dtype=None, device=None, requires_grad=False):
        from ember._generated import functions as F

        return F.empty(*_new_size(args, size), dtype=dtype or self._dtype, device=device or self._device,
                       requires_grad=requires_grad)

    def new_zeros(self, *args, size=None, dtype=None, device=None, requires_grad=False):
        from ember._generated import functions as F

        return F.zeros(*_new_size(args, size), dtype=dtype or self._dtype, device=device or self._device,
                       requires_grad=requires_grad)

    def new_ones(self, *args, size=None, dtype=None, device=None, requires_grad=False):
        from ember._generated import functions as F

        return F.ones(*_new_size(args, size), dtype=dtype or self._dtype, device=device or self._device,
                       requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        from ember._generated import functions as F

        return F.full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device,
                      requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        from .factories import tensor

        return tensor(data, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)



_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _new_size(args: tuple, size) -> tuple:
    """new_zeros(2, 3) / new_zeros((2, 3)) / new_zeros(size=(2, 3)), as in PyTorch."""
    if size is not None:
        if args:
            raise ArgumentTypeError("new_*(): the size was given both positionally and as size=")
        return (size,)
    return args
