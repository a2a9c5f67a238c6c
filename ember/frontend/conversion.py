"""Tensor.to: PyTorch's overloads, resolved to one `_to_copy` call (or self)."""
from __future__ import annotations

from ember.errors import ArgumentTypeError

from . import dtype as _dt
from .device import as_device, device as _device


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
