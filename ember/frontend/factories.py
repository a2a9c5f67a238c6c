"""Tensors from Python data, numpy arrays and DLPack capsules."""
from __future__ import annotations

from ember.dispatcher.plugins import REGISTRY
from ember.core.errors import ArgumentListError, ArgumentTypeError

from ember.core import dtype as _dt
from ember.core.device import as_device, device
from ember.core.numpy_interop import from_numpy_dtype, to_numpy_dtype
from .tensor import Storage, Tensor, make_tensor


def _infer_dtype(data):
    """PyTorch's inference for nested Python data.

    Python bools are bool, ints int64, floats the default dtype; numpy scalars and arrays
    and tensors inside the data keep their own dtype; the result is the promotion of all
    of them (so `[np.float64(1)]` is float64 and `[np.int32(1), 2]` int64), as
    torch.tensor does. Empty data has the default dtype.
    """
    from ember.core.type_promotion import promote_types

    result = None
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            d = v.dtype
        elif hasattr(v, "dtype") and hasattr(v, "shape"):   # numpy scalars (np.float64 is a float) / arrays
            d = from_numpy_dtype(v.dtype)
        elif isinstance(v, bool):
            d = _dt.bool
        elif isinstance(v, int):
            d = _dt.int64
        elif isinstance(v, float):
            d = _dt.get_default_dtype()
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
            continue
        else:
            raise ArgumentTypeError(f"tensor(): could not infer dtype of {type(v).__name__}")
        result = d if result is None else promote_types(result, d)
    return _dt.get_default_dtype() if result is None else result


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
    if isinstance(data, (str, bytes)):          # text is no number, whatever dtype is asked (torch's TypeError)
        raise ArgumentTypeError(f"tensor(): invalid data type '{type(data).__name__}'")
    leaf = data
    while isinstance(leaf, (list, tuple)) and leaf:
        leaf = leaf[0]
    if isinstance(leaf, (str, bytes)):          # torch reads text in rows as one dim too many (its ValueError)
        raise ArgumentListError(f"tensor(): too many dimensions '{type(leaf).__name__}'")
    target = dtype or _infer_dtype(data)
    if isinstance(data, (list, tuple)):
        data = _unwrap_nested(data)
    try:
        with np.errstate(all="ignore"):      # float16 overflow becomes inf silently, as in PyTorch
            arr = np.array(data, dtype=to_numpy_dtype(target) if target.category == 2 and target is not _dt.bfloat16
                           else None)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if target.category != 2 and (arr is None or arr.dtype.kind in "uOf") and _int_beyond_int64(data):
        raise ValueError("tensor(): Overflow when unpacking long long")     # torch's, for an integer dtype
    if arr is not None and arr.dtype.kind in "US":      # text among the numbers: torch's TypeError
        raise ArgumentTypeError(f"tensor(): invalid data type '{'str' if arr.dtype.kind == 'U' else 'bytes'}'")
    if arr is None or arr.dtype == object:
        raise _irregular_nesting(data) or ArgumentTypeError(
            "tensor(): expected a number or a nested sequence of numbers with a regular shape "
            f"(every row the same length), got {type(data).__name__}")
    if arr.dtype != to_numpy_dtype(target):
        # integers wrap into smaller integer types as in PyTorch (uint8 from -1 is 255)
        with np.errstate(all="ignore"):
            arr = arr.astype(to_numpy_dtype(target))
    return arr, target


def _int_beyond_int64(data) -> bool:
    """Whether nested Python data holds an int an int64 cannot (torch reads ints as int64 first)."""
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < (1 << 63):
            return True
    return False


def _is_row(v) -> bool:
    """Whether `tensor()` reads `v` as a sequence: a list, a tuple, or an array or tensor of 1+ dims."""
    return isinstance(v, (list, tuple)) or (hasattr(v, "shape") and hasattr(v, "dtype") and len(v.shape) > 0)


def _irregular_nesting(data) -> Exception | None:
    """PyTorch's error for nested sequences that are not a regular array, or None if they are.

    The sizes come from the first element at each depth, as in torch; a row of another length is
    a ValueError naming the dim, a number where a row is due (or a row past the last dim) a TypeError.
    """
    sizes: list[int] = []
    v = data
    while _is_row(v):
        sizes.append(len(v))
        if not len(v):
            break
        v = v[0]

    def check(row, dim: int) -> Exception | None:
        if len(row) != sizes[dim]:
            return ArgumentListError(f"tensor(): expected sequence of length {sizes[dim]} at dim {dim} (got {len(row)})")
        for item in row:
            if dim + 1 < len(sizes):
                if not _is_row(item):
                    return ArgumentTypeError(f"tensor(): expected a sequence at dim {dim + 1}, got "
                                             f"{type(item).__name__}")
                err = check(item, dim + 1)
                if err is not None:
                    return err
            elif _is_row(item):
                return ArgumentTypeError(f"tensor(): expected a number at dim {dim + 1}, got a sequence "
                                         f"({type(item).__name__})")
        return None

    return check(data, 0) if sizes else None


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
    # As in PyTorch, the storage starts at the array's first element and spans its extent
    # (storage_offset() is 0 even for a view into a larger numpy array). Re-viewing through
    # as_strided makes this array the root of its base chain, which is where the cpu backend
    # measures storage offsets from.
    from numpy.lib.stride_tricks import as_strided

    data = as_strided(array, shape=array.shape, strides=array.strides)
    extent = array.itemsize + sum((n - 1) * s for n, s in zip(array.shape, array.strides)) if array.size else 0
    return make_tensor(data, dt, device("cpu"), backend.key, Storage(extent, device("cpu")))


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack producer (numpy, torch, cupy, ...) or capsule."""
    import numpy as np

    from ember.core.numpy_interop import DLPackHostImport

    if isinstance(ext, Tensor):
        return ext
    wrapper = DLPackHostImport(ext)
    dev_type, _ = wrapper.device()
    if dev_type != 1:  # kDLCPU
        # a backend takes the DLPack device types it lists in `dlpack_device_types` (ember-cuda:
        # kDLCUDA); plugins are loaded here if need be, as a first use of their device would
        for name in list(REGISTRY.records):
            rec = REGISTRY.load(name)
            if rec.state == "available" and hasattr(rec.backend, "from_dlpack") and \
                    dev_type in getattr(rec.backend, "dlpack_device_types", (dev_type,)):
                native, dt, dev = rec.backend.from_dlpack(ext)
                return make_tensor(native, dt, dev, rec.key, None)
        down = "; ".join(f"{r.name} is {r.state}: {r.reason}" for r in REGISTRY.records.values()
                         if r.state in ("unavailable", "broken"))
        raise ArgumentTypeError(f"from_dlpack(): no installed backend accepts DLPack device type {dev_type}"
                                + (f" ({down})" if down else ""))
    array = np.from_dlpack(wrapper)
    if wrapper.was_bfloat16:
        array = array.view(to_numpy_dtype(_dt.bfloat16))
    return from_numpy(array)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(t: Tensor) -> int:
    return t.numel()


