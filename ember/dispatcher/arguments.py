"""Arguments of the wrong type, refused with torch's argument parser's TypeError (`ArgumentTypeError`).

Two paths, both read from the op's schema text (`schema.parameters`):

- A Python number where a Tensor goes. The generated dispatch functions (codegen/gen_call_path.py)
  test that branch only, so a call whose tensor arguments are Tensors pays nothing for it.
  `number_argument` refuses the number where the op takes none (`OpDef.numbers`), worded as torch
  words it, or wraps it in PyTorch's 0-d cpu tensor where the op takes it so (`OpDef.wraps_numbers`).

- Any other argument of the wrong type. Ember does not check every argument on every call: a call
  with the right types, by far the common one, would pay for it. Instead a dispatch function hands
  an exception that is not an `EmberError` to `argument_error`, which checks the call's arguments
  against the schema. An argument of the wrong type (a bool where a Tensor list goes, None for an
  int, a string for an int list) makes

      tile(): argument 'dims' (position 2) must be tuple of ints, not str

  in place of whatever numpy or Python said deep inside a kernel. With the arguments' types right,
  the exception goes on as it was: a defect of ember, which the fuzzer (ember.testing.fuzz) reports.
"""
from __future__ import annotations

import functools
import re
from typing import Any

from ember.core.dtype import dtype as _DType
from ember.core.errors import ArgumentTypeError, EmberError

from . import dispatch
from .schema import parameters

_NUMBER = (bool, int, float, complex)


# --------------------------------------------------------------------------- numbers for Tensors
def number_argument(op, args: tuple, i: int, method: bool) -> tuple | None:
    """`args[i]`, a Tensor argument of `op`, is no Tensor. A Python number where `op` takes none
    (`OpDef.numbers`) is torch's argument parser's TypeError, worded as it words it; one that `op` takes
    as PyTorch's wrapped number (`OpDef.wraps_numbers`) becomes that 0-d cpu tensor (int64, float64 or
    bool): the arguments to dispatch again are returned. Anything else (None for a `Tensor?`, an object
    implementing __torch_function__) is left to the call: None. `method`: the call is `op`'s Tensor
    method, bound to `self`, whose errors number the arguments after it."""
    value = args[i]
    if not isinstance(value, _NUMBER):
        return None
    fn = op.name.split(".")[0]
    params = _python_params(op.schema, method)
    if method and all(j != i for j, _, _ in params):        # the method's own `self` is a number
        raise ArgumentTypeError(f"descriptor '{fn}' for 'Tensor' objects doesn't apply to a "
                                f"'{type(value).__name__}' object")
    if i in op.numbers:
        return _wrapped_number(args, i) if op.wraps_numbers else None
    if not op.numbers:
        # PyTorch has one signature: "minimum(): argument 'other' (position 2) must be Tensor, not int"
        position, pname = next((k + 1, p) for k, (j, p, _) in enumerate(params) if j == i)
        raise ArgumentTypeError(f"{fn}(): argument '{pname}' (position {position}) must be Tensor, "
                                f"not {type(value).__name__}")
    # PyTorch has overloads taking a number at the positions `op.numbers`, and lists them
    end = op.keyword_only_from if op.keyword_only_from is not None else len(args)
    given = ", ".join("Tensor" if isinstance(args[j], dispatch.Tensor) else type(args[j]).__name__
                      for j, _, _ in params if j < end)
    listing = "".join(f"\n * {_signature_text(op, params, number)}" for number in (None,) + op.numbers)
    raise ArgumentTypeError(f"{fn}() received an invalid combination of arguments - got ({given}), but expected "
                            f"one of:{listing}")


def _wrapped_number(args: tuple, i: int) -> tuple | None:
    """`args` with the Python number at position `i` made the 0-d cpu tensor PyTorch wraps it in (int64,
    float64, bool; a complex number, which no ember dtype holds, is left as it is: None)."""
    if isinstance(args[i], complex):
        return None
    return _number_as_tensor(args, i, float_dtype=None)


def numbers_only_call(op, args: tuple) -> tuple | None:
    """The arguments of a call of `op` (`numbers_everywhere`: add, sub, mul, div, ...) with a Python number in
    every Tensor argument, the first made the 0-d cpu tensor PyTorch makes of it: bool, int64, or the default
    dtype for a float, so that `add(1, 2.5)` is a float32 tensor as torch's. None when some Tensor argument is
    no real number (None, a string, a complex number, which no ember dtype holds: the op refuses it)."""
    if not all(isinstance(args[j], (bool, int, float)) for j in op.tensor_args):
        return None
    from ember.core.dtype import get_default_dtype

    return _number_as_tensor(args, op.tensor_args[0], float_dtype=get_default_dtype())


def _number_as_tensor(args: tuple, i: int, float_dtype) -> tuple:
    """`args` with the bool, int or float at position `i` made a 0-d cpu tensor: bool, int64, or `float_dtype`
    for a float (float64 when None)."""
    from ember.core import dtype as _dt
    from ember.core.device import as_device

    from .operator import ALL_OPS

    value = args[i]
    kind = _dt.bool if isinstance(value, bool) else _dt.int64 if isinstance(value, int) else \
        float_dtype or _dt.float64
    tensor = ALL_OPS["scalar_tensor"].dispatch((value, kind, as_device("cpu"), False))
    return args[:i] + (tensor,) + args[i + 1:]


@functools.lru_cache(maxsize=None)
def _python_params(schema: str, method: bool) -> tuple[tuple[int, str, str], ...]:
    """(position, Python name, type text with its default) of each parameter of the function a schema
    declares, or of its Tensor method (without `self`, which the method is bound to): the names torch's
    parser gives in its errors, `input` for a function's `self`."""
    params = [(j, name, kind + (f" = {default}" if default else ""))
              for j, (kind, name, default) in enumerate(parameters(schema))]
    if method:
        names = [name for _, name, _ in params]
        bound = names.index("self") if "self" in names else 0
        return tuple(p for p in params if p[0] != bound)
    return tuple((j, "input" if name == "self" else name, t) for j, name, t in params)


def _signature_text(op, params: tuple[tuple[int, str, str], ...], number: int | None) -> str:
    """A signature as PyTorch's argument parser lists it: `(Tensor input, Number other)`, the argument at
    position `number` taking a number."""
    out = []
    for j, pname, type_text in params:
        if j == op.keyword_only_from:
            out.append("*")
        base, _, default = type_text.partition(" = ")
        if base.startswith("Tensor") and "[" not in base:
            base = "Number" if j == number else "Tensor"
        out.append(f"{base} {pname}" + (f" = {default}" if default else ""))
    return "(" + ", ".join(out) + ")"


# --------------------------------------------------------------------------- after an exception
def argument_error(op, args: tuple, exc: Exception) -> Exception | None:
    """The exception a dispatch function raises in place of `exc`, raised while running `op` on `args`:
    torch's TypeError naming the first argument of the wrong type, or None when there is none (`exc`
    goes on unchanged, with its own traceback).

    An EmberError is ember's own judgement of the call and passes unchanged: ember's ops take more
    than their schemas say where their bindings merge torch's overloads (conv1d's `padding` is a list
    of ints or 'same'), so only an exception ember did not mean to raise has its arguments checked."""
    if isinstance(exc, EmberError):
        return None
    problem = wrong_argument(op, args)
    if problem is None:
        return None
    error = ArgumentTypeError(problem)
    error.__suppress_context__ = True
    return error


def wrong_argument(op, args: tuple) -> str | None:
    """torch's message for the first argument of `args` whose type the schema of `op` refuses, or None."""
    for position, ((kind, name, _), value) in enumerate(zip(parameters(op.schema), args)):
        expected = _expected(kind, value)
        if expected is not None:
            shown = "input" if name == "self" else name
            return (f"{op.name.split('.')[0]}(): argument '{shown}' (position {position + 1}) must be {expected}, "
                    f"not {type(value).__name__}")
    return None


def _is_int(value: Any) -> bool:
    """An int, or what stands for one (a numpy integer, a SymInt, a one-element Tensor: torch reads its value)."""
    if isinstance(value, dispatch.Tensor):
        return value.numel() == 1
    return not isinstance(value, bool) and (isinstance(value, int) or hasattr(type(value), "__index__"))


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBER) or hasattr(type(value), "__float__") and not isinstance(value, (str, bytes))


def _expected(kind: str, value: Any) -> str | None:
    """What an argument of schema type `kind` must be, when `value` is not that; None when it is."""
    if kind.endswith("?"):
        if value is None:
            return None
        kind = kind[:-1]
    tensor = dispatch.Tensor
    if kind == "Tensor":
        return None if isinstance(value, tensor) or isinstance(value, _NUMBER) else "Tensor"
    if kind.startswith("Tensor") and kind.endswith("[]"):            # Tensor[], Tensor?[]
        optional = kind == "Tensor?[]"
        if isinstance(value, (list, tuple)) and all(isinstance(v, tensor) or (optional and v is None) for v in value):
            return None
        return "tuple of Tensors"
    if kind in ("int", "SymInt"):
        return None if _is_int(value) else "int"
    if re.fullmatch(r"(int|SymInt)\[\d*\]", kind):
        # one int stands for a list: for an int[N] in torch (kernel_size=3), for any int list in ember's ops,
        # whose bindings pass torch's int overloads on (squeeze(t, 1) is squeeze.dims)
        if _is_int(value) or isinstance(value, (list, tuple)) and all(map(_is_int, value)):
            return None
        return "tuple of ints"
    if kind == "bool":
        return None if isinstance(value, bool) or type(value).__name__ == "bool_" else "bool"
    if re.fullmatch(r"bool\[\d*\]", kind):
        return None if isinstance(value, (list, tuple)) and all(isinstance(v, bool) for v in value) else "tuple of bools"
    if kind == "float":
        return None if _is_number(value) and not isinstance(value, complex) else "float"
    if re.fullmatch(r"float\[\d*\]", kind):
        ok = _is_number(value) or isinstance(value, (list, tuple)) and all(_is_number(v) for v in value)
        return None if ok else "tuple of floats"
    if kind == "Scalar":
        return None if _is_number(value) or isinstance(value, tensor) else "Number"
    if kind == "str":
        return None if isinstance(value, str) else "str"
    if kind == "ScalarType":
        return None if isinstance(value, _DType) else "torch.dtype"
    return None                     # Device, Generator, Layout, MemoryFormat: not checked here
