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
        return (size,) if isinstance(size, int) else tuple(size)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    if not size:                # torch's: `zeros()` is no 0-d tensor (that is `zeros(())`)
        raise ArgumentTypeError(f'{fn}() missing 1 required positional arguments: "{name}"')
    return size


_NUMBERS = (int, float, bool)

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
    given = f"numpy.{type(value).__name__}" if _numpy_scalar(value) else type(value).__name__
    return ArgumentTypeError(f"{fn}(): argument '{name}'{where} must be {expected}, not {given}")


def int_arg(value, fn: str, name: str, position: int | None) -> None:
    """An `int` argument that is not a Python int: a bool, a float (a numpy float too) or a complex number is
    torch's argument parser's TypeError; anything else (numpy integers, 0-d integer tensors, symbolic sizes) is
    left to the op."""
    if isinstance(value, (bool, float, complex, str)) or _numpy_scalar(value) and not isinstance(value, Integral):
        raise _wrong_type(fn, name, position, "int", value)


def bool_arg(value, fn: str, name: str, position: int | None) -> None:
    """A `bool` argument that is not a Python bool: a number (an int, a float, a numpy scalar, numpy's bool too)
    is torch's argument parser's TypeError; anything else is left to the op."""
    if isinstance(value, (int, float, complex)) or _numpy_scalar(value):
        raise _wrong_type(fn, name, position, "bool", value)


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
    Tensor method (`args` starts with `self`), through the op's `method_dispatch`."""
    for binder, op, wrap in overloads:
        try:
            bound = binder(*args, **kwargs)
        except TypeError:
            continue
        out = op.method_dispatch(bound) if method else op.dispatch(bound)
        return wrap(*out) if wrap is not None else out
    sigs = "\n".join(f"  * {op.schema}" for _, op, _ in overloads)
    given = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    raise ArgumentTypeError(f"{name}() received an invalid combination of arguments - got ({given}), but expected "
                            f"one of:\n{sigs}")
