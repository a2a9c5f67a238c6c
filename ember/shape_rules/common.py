"""Helpers shared by the shape rules: dimension wrapping, broadcasting, argument checks."""
from __future__ import annotations

from ember.errors import ArgumentTypeError, DimensionError, ShapeError
from ember.frontend import dtype as _dt
from ember.frontend.tensor import Tensor

NUMBER_TYPES = (bool, int, float)


def wrap_dim(op, dim, ndim: int, arg: str = "dim") -> int:
    """`dim` in [-ndim, ndim) as a non-negative index (0-d tensors accept -1 and 0)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        if isinstance(dim, Tensor) and dim.ndim == 0 and dim.dtype.category == 1:
            dim = int(dim.item())
        else:
            raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be int, not {type(dim).__name__}")
    bound = ndim if ndim > 0 else 1
    if dim < -bound or dim >= bound:
        raise DimensionError(f"{op.name}(): Dimension out of range (expected to be in range of "
                             f"[{-bound}, {bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def wrap_dims(op, dims, ndim: int, arg: str = "dim") -> tuple[int, ...]:
    """A tuple of distinct wrapped dims (an int is one dim)."""
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = (dims,)
    out = tuple(wrap_dim(op, d, ndim, arg) for d in dims)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op.name}(): dim {out} appears multiple times in the list of dims")
    return out


def broadcast_shapes(op, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of several shapes, with PyTorch's error message."""
    result = shapes[0]
    for other in shapes[1:]:
        if other == result:
            continue
        n = max(len(result), len(other))
        a = (1,) * (n - len(result)) + tuple(result)
        b = (1,) * (n - len(other)) + tuple(other)
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                raise ShapeError(f"{op.name}(): The size of tensor a ({x}) must match the size of tensor b ({y}) "
                                 f"at non-singleton dimension {i}")
        result = tuple(out)
    return tuple(result)


def check_tensor(op, value, arg: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be Tensor, not {type(value).__name__}")
    return value


def check_int_list(op, value, arg: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, (tuple, list)):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be tuple of ints, not {type(value).__name__}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, Tensor) and v.ndim == 0 and v.dtype.category == 1:
                v = int(v.item())
            else:
                raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be tuple of ints, but found element "
                                        f"of type {type(v).__name__}")
        out.append(v)
    return tuple(out)


def check_dtype_arg(op, value, arg: str = "dtype"):
    if value is not None and not isinstance(value, _dt.dtype):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be ember.dtype, not {type(value).__name__}")
    return value


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def strides_of(t: Tensor) -> tuple[int, ...]:
    item = t._dtype.itemsize
    return tuple(s // item for s in t._data.strides)


def type_name(dtype) -> str:
    """PyTorch's scalar-type name in messages ("Float", "Long", ...)."""
    return _SCALAR_NAMES.get(dtype.name, dtype.name)


_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}
