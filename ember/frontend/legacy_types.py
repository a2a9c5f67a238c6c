"""torch's legacy tensor constructors: `ember.Tensor(2, 3)`, `ember.Tensor(data)`, `ember.FloatTensor(...)`,
`ember.LongTensor(...)`, ... and `isinstance(t, ember.FloatTensor)`, as older programs write them.

`new(dtype, args)` is what each builds: no argument, an empty (0,) tensor; integers (or one Size), an
uninitialised tensor of that shape; a sequence or an array, a tensor of the data converted to the type's
dtype; a tensor of that dtype, an alias of it (detached). `ember.Tensor(...)` builds the default dtype's.
A type is also a predicate: `isinstance(t, ember.LongTensor)` holds for a cpu int64 tensor, as torch's.
"""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError

__all__ = ["LEGACY_TYPES", "new", "dtype_of_type_name"]

LEGACY_TYPES = {"FloatTensor": _dt.float32, "DoubleTensor": _dt.float64, "HalfTensor": _dt.float16,
                "BFloat16Tensor": _dt.bfloat16, "ByteTensor": _dt.uint8, "CharTensor": _dt.int8,
                "ShortTensor": _dt.int16, "IntTensor": _dt.int32, "LongTensor": _dt.int64, "BoolTensor": _dt.bool}
_NAME_OF = {dtype: name for name, dtype in LEGACY_TYPES.items()}


def new(dtype, args: tuple, device=None):
    """The tensor a legacy constructor of `dtype` builds from its positional arguments."""
    from ember.frontend import factories
    from ember.frontend.tensor import Size, Tensor

    from ember._generated import functions as F

    if not args:
        return F.empty((0,), dtype=dtype, device=device)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (len(args) == 1 and isinstance(args[0], Size)):
        sizes = tuple(args[0]) if isinstance(args[0], Size) else args
        return F.empty(sizes, dtype=dtype, device=device)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not dtype:
                raise ArgumentTypeError(f"expected {_type_label(dtype)} (got {_type_label(data.dtype)})")
            return data.detach()
        return factories.tensor(data, dtype=dtype, device=device)
    raise ArgumentTypeError(f"new(): invalid arguments: expected sizes (ints), a sequence or a tensor, got "
                            f"{tuple(type(a).__name__ for a in args)}")


def _type_label(dtype) -> str:
    return _NAME_OF.get(dtype, dtype.name).removesuffix("Tensor")


def dtype_of_type_name(name: str):
    """The dtype of a type name as Tensor.type(name) takes it ("torch.FloatTensor", "ember.LongTensor"), or None."""
    return LEGACY_TYPES.get(name.rsplit(".", 1)[-1]) if name.split(".", 1)[0] in ("torch", "ember") else None


class _LegacyTypeMeta(type):
    """A legacy type: calling it builds a tensor; isinstance asks for a cpu tensor of its dtype."""

    def __instancecheck__(cls, value) -> bool:
        from ember.frontend.tensor import Tensor

        return isinstance(value, Tensor) and value.dtype is cls.dtype and value.device.type == "cpu"

    def __call__(cls, *args, device=None):
        return new(cls.dtype, args, device)

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


def _make(name: str, dtype) -> type:
    return _LegacyTypeMeta(name, (), {"dtype": dtype, "__doc__": f"The legacy constructor of {dtype} tensors.",
                                       "__module__": "ember"})


TYPES = {name: _make(name, dtype) for name, dtype in LEGACY_TYPES.items()}
