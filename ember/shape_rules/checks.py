"""Per-op argument and dtype checks that the registry names (`checks: [sub_bool]`).

A check is `check(op, args, operands, dtype)`: `args` are the op's arguments in schema order,
`operands` its tensor-or-number operands and `dtype` the result dtype the rule computed. It
raises PyTorch's error or returns. Register one with `@op_check("name")`; codegen checks that
every name an entry gives exists (it reads the decorators). The pointwise rule runs an op's
checks after its `dtypes` check (common.check_kernel_dtype) and before its alpha check.
"""
from __future__ import annotations

from typing import Callable

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, MissingKernelError
from ember.core import dtype as _dt

from .common import NUMBER_TYPES, type_name

CHECKS: dict[str, Callable] = {}
_ROUNDING_MODES = (None, "trunc", "floor")


def op_check(name: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the check called `name` in the registry's `checks`."""
    def register(fn: Callable) -> Callable:
        CHECKS[name] = fn
        return fn
    return register


def check_alpha(op, alpha, result_dtype) -> None:
    """PyTorch's alpha_check, for the `Scalar alpha` of add, sub, rsub (OpDef.alpha_arg)."""
    if not isinstance(alpha, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    if isinstance(alpha, float) and not result_dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, bool) and result_dtype is not _dt.bool:
        raise DTypeError(f"{op.name}(): Boolean alpha only supported for Boolean results.")


@op_check("sub_bool")
def sub_bool(op, args, operands, result_dtype):
    """sub and rsub refuse bool operands."""
    bools = [isinstance(o, bool) or getattr(o, "_dtype", None) is _dt.bool for o in operands]   # a tensor or a number
    if all(bools):
        raise DTypeError(f"{op.name}(): Subtraction, the `-` operator, with two bool tensors is not supported. "
                         "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise DTypeError(f"{op.name}(): Subtraction, the `-` operator, with a bool tensor is not supported. "
                         "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


@op_check("neg_bool")
def neg_bool(op, args, operands, result_dtype):
    """neg refuses a bool tensor."""
    if result_dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): Negation, the `-` operator, on a bool tensor is not supported. "
                         "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


@op_check("relu_bool")
def relu_bool(op, args, operands, result_dtype):
    """relu refuses a bool tensor."""
    if result_dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): Boolean inputs not supported for relu")


@op_check("hardtanh_bool")
def hardtanh_bool(op, args, operands, result_dtype):
    """hardtanh refuses a bool tensor (it takes integers, unlike the other activations), and negative bounds for
    an unsigned one."""
    if result_dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): Bool inputs not supported for hardtanh")
    if result_dtype is _dt.uint8 and (args[1] < 0 or args[2] < 0):
        raise ArgumentValueError(f"{op.name}(): cannot do hardtanh on an unsigned type with negative limits")


@op_check("min_val_max_val")
def min_val_max_val(op, args, operands, result_dtype):
    """hardtanh(self, min_val, max_val): the bounds are ordered."""
    min_val, max_val = args[1], args[2]
    if min_val > max_val:
        raise ArgumentValueError(f"{op.name}(): min_val cannot be greater than max_val "
                                 f"(min_val={min_val}, max_val={max_val})")


@op_check("rounding_mode")
def rounding_mode(op, args, operands, result_dtype):
    """div(self, other, rounding_mode): None, 'trunc' or 'floor'; a rounding division has no bool kernel."""
    mode = args[2]
    if mode not in _ROUNDING_MODES:
        raise ArgumentValueError(f"{op.name}(): div expected rounding_mode to be one of None, 'trunc', or "
                                 f"'floor' but found '{mode}'")
    if mode is not None and result_dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "div_{mode}_cpu" not implemented for \'Bool\'')


@op_check("int_pow_exponent")
def int_pow_exponent(op, args, operands, result_dtype):
    """pow(self, exponent): an integral result has no negative integer exponent."""
    exponent = args[1]
    if type(exponent) is int and exponent < 0 and not result_dtype.is_floating_point:
        raise ArgumentValueError(f"{op.name}(): Integers to negative integer powers are not allowed "
                                 f"(exponent={exponent}, self is {type_name(result_dtype)}).")


@op_check("nonnegative_order")
def nonnegative_order(op, args, operands, result_dtype):
    """polygamma's order n (its first argument) is not negative."""
    if isinstance(args[0], int) and args[0] < 0:
        raise ArgumentValueError(f"{op.name}(): polygamma(n, x) does not support negative n.")


@op_check("same_dtype_operands")
def same_dtype_operands(op, args, operands, result_dtype):
    """heaviside's tensors share one dtype (torch does not promote them)."""
    dtypes = {o._dtype for o in operands if hasattr(o, "_dtype")}
    if len(dtypes) > 1:
        raise DTypeError(f"{op.name}(): heaviside is not yet implemented for tensors with different dtypes.")
