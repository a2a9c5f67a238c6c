"""Tensors from Python data, numpy arrays and DLPack capsules."""
from __future__ import annotations

from ember.dispatcher.plugins import REGISTRY
from ember.errors import ArgumentTypeError

from . import dtype as _dt
from .device import as_device, device
from .numpy_interop import from_numpy_dtype, to_numpy_dtype
from .tensor import Tensor, make_tensor


def _infer_dtype(data):
    """PyTorch's inference for nested Python data: bool < int64 < default float."""
    rank = -1
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            rank = max(rank, 0)
        elif isinstance(v, int):
            rank = max(rank, 1)
        elif isinstance(v, float):
            rank = max(rank, 2)
        elif isinstance(v, Tensor):
            rank = max(rank, v.dtype.category)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif hasattr(v, "dtype") and hasattr(v, "shape"):   # numpy scalars/arrays inside lists
            rank = max(rank, from_numpy_dtype(v.dtype).category)
        else:
            raise ArgumentTypeError(f"tensor(): could not infer dtype of {type(v).__name__}")
    return {-1: _dt.get_default_dtype(), 0: _dt.bool, 1: _dt.int64, 2: _dt.get_default_dtype()}[rank]


def _to_host_array(data, dtype):
    import numpy as np

    if isinstance(data, Tensor):
        arr = data.detach()._host()
        return arr.astype(to_numpy_dtype(dtype)) if dtype is not None else arr, dtype or data.dtype
    if isinstance(data, np.ndarray) or (hasattr(data, "dtype") and hasattr(data, "shape") and not isinstance(data, (list, tuple))):
        arr = np.asarray(data)
        src = from_numpy_dtype(arr.dtype)
        target = dtype or src
        return arr.astype(to_numpy_dtype(target)), target
    target = dtype or _infer_dtype(data)
    if isinstance(data, (list, tuple)):
        data = _unwrap_nested(data)
    try:
        arr = np.array(data, dtype=to_numpy_dtype(target) if target is not _dt.bfloat16 else np.float32)
    except (ValueError, TypeError) as exc:
        raise ArgumentTypeError(f"tensor(): could not build a tensor from the given data: {exc}") from None
    if target is _dt.bfloat16:
        arr = arr.astype(to_numpy_dtype(target))
    if arr.dtype == object:
        raise ArgumentTypeError("tensor(): expected a nested sequence of numbers with a regular shape")
    return arr, target


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(v) for v in data]
    return data


def _from_host(arr, dtype, dev) -> Tensor:
    dev = as_device(dev)
    backend = REGISTRY.backend_for(dev)
    native = backend.from_host(arr, dev.index)
    out_dev = dev if dev.index is not None or not backend.multi_device else device(dev.type, 0)
    return make_tensor(native, dtype, out_dev, backend.key, None)


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays, tensors)."""
    if dtype is not None and not isinstance(dtype, _dt.dtype):
        raise ArgumentTypeError(f"tensor(): argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")
    arr, dt = _to_host_array(data, dtype)
    if device is None and isinstance(data, Tensor):
        device = data.device
    out = _from_host(arr, dt, device)
    if requires_grad:
        out.requires_grad_()
    return out


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with `data` where possible (a tensor or a cpu numpy array), else copy."""
    import numpy as np

    if isinstance(data, Tensor):
        out = data
        if dtype is not None or device is not None:
            out = out.to(device=device, dtype=dtype)
        return out
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        t = from_numpy(data)
        return t.to(dtype) if dtype is not None else t
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array) -> Tensor:
    """A cpu tensor sharing memory with a numpy array."""
    import numpy as np

    if not isinstance(array, np.ndarray):
        raise ArgumentTypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if any(s % array.itemsize for s in array.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy "
                         "array to reallocate the memory.")
    dt = from_numpy_dtype(array.dtype)
    backend = REGISTRY.backend_for(device("cpu"))
    return make_tensor(array, dt, device("cpu"), backend.key, None)


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack producer (numpy, torch, cupy, ...)."""
    import numpy as np

    if isinstance(ext, Tensor):
        return ext
    dev_type, _ = ext.__dlpack_device__() if hasattr(ext, "__dlpack_device__") else (1, 0)
    if dev_type != 1:  # kDLCPU
        for rec in REGISTRY.records.values():
            if rec.backend is not None and hasattr(rec.backend, "from_dlpack"):
                native, dt, dev = rec.backend.from_dlpack(ext)
                return make_tensor(native, dt, dev, rec.key, None)
        raise ArgumentTypeError(f"from_dlpack(): no installed backend accepts DLPack device type {dev_type}")
    return from_numpy(np.from_dlpack(ext))


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(t: Tensor) -> int:
    return t.numel()


