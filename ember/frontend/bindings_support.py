"""Small helpers the generated bindings call (argument normalisation, overload choice)."""
from __future__ import annotations


from numbers import Integral

from ember.core.errors import ArgumentTypeError
from ember.core.symint import SymInt


def size_arg(size: tuple, keywords: dict, fn: str, name: str) -> tuple:
    """`zeros(2, 3)`, `zeros((2, 3))`, `zeros([2, 3])`, `zeros(t.shape)` and `zeros(size=(2, 3))`."""
    if keywords:
        if set(keywords) != {name}:
            extra = sorted(set(keywords) - {name})[0]
            raise ArgumentTypeError(f"{fn}() got an unexpected keyword argument '{extra}'")
        if size:
            raise ArgumentTypeError(f"{fn}() got multiple values for argument '{name}'")
        size = keywords[name]
        return (size,) if isinstance(size, int) else later_bools_as_ints(tuple(size))
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return later_bools_as_ints(tuple(size[0]))
    if not size:                # torch's: `zeros()` is no 0-d tensor (that is `zeros(())`)
        raise ArgumentTypeError(f'{fn}() missing 1 required positional arguments: "{name}"')
    if len(size) > 1 and size[0].__class__ is bool:     # not read as a list of sizes: torch's message
        raise ArgumentTypeError(f"{fn}() takes 1 positional argument but {len(size)} were given")
    return later_bools_as_ints(size)


def later_bools_as_ints(values: tuple) -> tuple:
    """torch's parser tells an int list by its first entry, which must be an int and no bool; a bool after it
    is read as an int (`zeros(3, True)` is 3x1, `zeros(True, 3)` a TypeError)."""
    for item in values:
        if item.__class__ is bool:
            return values[:1] + tuple(int(v) if v.__class__ is bool else v for v in values[1:])
    return values


_NUMBERS = (int, float, bool)
_NUMBER_CLASSES = frozenset((int, float, bool, complex))

#: operand classes Python operators pass straight through; ember.frontend.tensor adds Tensor
OPERAND_CLASSES = {bool, int, float}


def operand(value):
    """The other operand of a Python operator (`t + value`), or NotImplemented.

    Tensors (subclasses included) and Python numbers pass; numpy scalars become Python
    numbers and numpy arrays tensors, as PyTorch converts them. Anything else lets Python
    try the other operand's method.
    """
    from .tensor import Tensor

    if isinstance(value, (Tensor, bool, int, float, SymInt)):      # SymInt: a size in a dynamic-shape export
        return value
    module = type(value).__module__
    if module == "numpy" or module.startswith("ml_dtypes"):
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            from .factories import tensor

            return tensor(value)
    return NotImplemented


def _wrong_type(fn: str, name: str, position: int | None, expected: str, value) -> ArgumentTypeError:
    where = f" (position {position})" if position is not None else ""
    return ArgumentTypeError(f"{fn}(): argument '{name}'{where} must be {expected}, not {_class_name(value)}")


# ----------------------------------------------------------------------------- argument classes
# torch's argument parser refuses an argument of the wrong class before the op runs. The generated bindings
# test the common class inline (`dim.__class__ is not int`) and call these only when it is something else:
# each raises torch's TypeError or returns, leaving the value as it is.

def int_arg(value, fn: str, name: str, position: int | None) -> None:
    """An `int` argument that is not a Python int: what has `__index__` (numpy integers, symbolic sizes) and a
    one-element integer tensor stand for one; anything else (None, a bool, a float, numpy's bool) is torch's
    argument parser's TypeError."""
    if not _is_int(value):
        raise _wrong_type(fn, name, position, "int", value)


def bool_arg(value, fn: str, name: str, position: int | None) -> None:
    """A `bool` argument that is not a Python bool: torch's parser takes nothing else (no number, no None, not
    numpy's bool)."""
    raise _wrong_type(fn, name, position, "bool", value)


def float_arg(value, fn: str, name: str, position: int | None) -> None:
    """A `float` argument that is neither a float nor an int: a bool, a numpy number or a one-element tensor stands
    for one; anything else (None, a string, a complex number) is torch's TypeError."""
    if isinstance(value, complex) or not _is_number(value):
        raise _wrong_type(fn, name, position, "float", value)


def number_arg(value, fn: str, name: str, position: int | None) -> None:
    """A `Scalar` argument that is neither a float nor an int: a bool, a complex or numpy number, or a one-element
    tensor; anything else (None, a string, a list) is torch's TypeError, "must be Number"."""
    if not _is_number(value):
        raise _wrong_type(fn, name, position, "Number", value)


def str_arg(value, fn: str, name: str, position: int | None) -> None:
    """A `str` argument that is not a str: torch's TypeError."""
    raise _wrong_type(fn, name, position, "str", value)


def int_list_arg(value, fn: str, name: str, position: int | None, one_int: bool):
    """An int list argument that is not a list or tuple of Python ints, as the op will read it. A tuple subclass
    (ember.Size) or a list whose entries stand for ints (`int_arg`) is one, and so is a bool after its first
    entry, read as an int (`later_bools_as_ints`); one int is one too where `one_int` (an `int[N]` of the
    schema, or an op of which PyTorch has an overload taking an int there: squeeze's `dim`). Anything else
    (None, a bool, a float, an array) is torch's TypeError."""
    if isinstance(value, (tuple, list)):
        for pos, item in enumerate(value):
            if not _is_int(item) and not (pos and item.__class__ is bool):
                where = f" (position {position})" if position is not None else ""
                raise ArgumentTypeError(f"{fn}(): argument '{name}'{where} must be tuple of ints, but found element "
                                        f"of type {_class_name(item)} at pos {pos}")
        return later_bools_as_ints(tuple(value))
    if not (one_int and _is_int(value)):
        raise _wrong_type(fn, name, position, "tuple of ints", value)
    return value


def _is_int(value) -> bool:
    if value.__class__ is int:
        return True
    if isinstance(value, bool) or _numpy_scalar(value) and not isinstance(value, Integral):
        return False
    if _is_tensor(value):           # torch reads a one-element integer tensor's value
        return value.numel() == 1 and not (value.dtype.is_floating_point or value.dtype.is_complex
                                           or value.dtype.name == "bool")
    return hasattr(type(value), "__index__")


def _is_number(value) -> bool:
    """A number, or what stands for one: a numpy scalar, a one-element tensor, a symbolic size (an export's)."""
    if value.__class__ in _NUMBER_CLASSES or _numpy_scalar(value):
        return True
    if _is_tensor(value):
        return value.numel() == 1
    return hasattr(type(value), "__index__") or hasattr(type(value), "__float__")


def _is_tensor(value) -> bool:
    from ember.frontend.tensor import Tensor

    return isinstance(value, Tensor)


def _class_name(value) -> str:
    return f"numpy.{type(value).__name__}" if _numpy_scalar(value) else type(value).__name__


def _numpy_scalar(value) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ != "ndarray"


def scalar_arg(value):
    """A factory's Scalar argument as a Python number (0-dim tensors, numpy scalars)."""
    if value is None or value.__class__ in _NUMBERS:
        return value
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    return value


def call_overload(name: str, overloads: tuple, args: tuple, kwargs: dict, method: bool = False):
    """Call the first overload whose signature accepts the arguments (most specific first); `method`: for a
    Tensor method (`args` starts with `self`), through the op's `method_dispatch`. Each overload is (binder, op,
    named-result wrapper or None, position of a factory's `requires_grad` among the bound arguments or None),
    as codegen writes them."""
    for binder, op, wrap, requires_grad_at in overloads:
        try:
            bound = binder(*args, **kwargs)
        except TypeError:
            continue
        out = op.method_dispatch(bound) if method else op.dispatch(bound)
        if requires_grad_at is not None and bound[requires_grad_at]:     # a factory's requires_grad=True
            out.requires_grad_()
        return wrap(*out) if wrap is not None else out
    sigs = "\n".join(f"  * {op.schema}" for _, op, _, _ in overloads)
    given = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    raise ArgumentTypeError(f"{name}() received an invalid combination of arguments - got ({given}), but expected "
                            f"one of:\n{sigs}")
