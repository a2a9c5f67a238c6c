"""Ember's dtypes: backend-agnostic descriptions of element types.

A dtype knows its name, size and category; it deliberately does not know numpy. Each
backend maps dtypes to its own native types (the cpu backend to numpy/ml_dtypes), which
keeps `import ember` free of numpy.
"""
from __future__ import annotations

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "ALL_DTYPES", "dtype_from_name", "get_default_dtype",
    "set_default_dtype",
]

_builtin_bool = bool


class dtype:
    """An element type, compared by identity (there is one object per type)."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_signed", "category", "_rank")

    # category: 0 = bool, 1 = integer, 2 = floating point (PyTorch's promotion categories)
    def __init__(self, name: str, itemsize: int, category: int, is_signed: _builtin_bool, rank: int):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.is_floating_point = category == 2
        self.is_signed = is_signed
        self._rank = rank

    @property
    def is_complex(self) -> _builtin_bool:
        return False

    def __repr__(self) -> str:
        return "ember." + self.name

    def __reduce__(self):
        return (dtype_from_name, (self.name,))


bool = dtype("bool", 1, 0, False, 0)  # noqa: A001 - mirrors torch.bool
uint8 = dtype("uint8", 1, 1, False, 1)
int8 = dtype("int8", 1, 1, True, 2)
int16 = dtype("int16", 2, 1, True, 3)
int32 = dtype("int32", 4, 1, True, 4)
int64 = dtype("int64", 8, 1, True, 5)
float16 = dtype("float16", 2, 2, True, 6)
bfloat16 = dtype("bfloat16", 2, 2, True, 7)
float32 = dtype("float32", 4, 2, True, 8)
float64 = dtype("float64", 8, 2, True, 9)

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# PyTorch's aliases (torch.long, torch.float, torch.half, ...)
ALIASES = {
    "long": int64, "int": int32, "short": int16, "float": float32, "double": float64,
    "half": float16,
}


def dtype_from_name(name: str) -> dtype:
    """The dtype called `name` ("float32", or a PyTorch alias such as "long")."""
    try:
        return _BY_NAME[name] if name in _BY_NAME else ALIASES[name]
    except KeyError:
        raise TypeError(f"unknown dtype name {name!r}; expected one of {sorted(_BY_NAME)}") from None


_default_float = [float32]


def get_default_dtype() -> dtype:
    """The dtype of floating-point factories and Python floats (float32 unless changed)."""
    return _default_float[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating-point dtype, as torch.set_default_dtype does."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype(): expected a floating-point ember.dtype, got {d!r}")
    _default_float[0] = d


def wrap_unsigned(value, np_dtype):
    """A fill value for an array of numpy dtype `np_dtype`: a negative int for an unsigned type wrapped as
    two's complement (-1 for uint8 is 255, as PyTorch's fill_ reads it), anything else as it is."""
    if value.__class__ is int and value < 0 and np_dtype.kind == "u":
        return value + (1 << (8 * np_dtype.itemsize))
    return value
