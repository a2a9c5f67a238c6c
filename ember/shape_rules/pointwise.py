"""Shape rules of pointwise ops: broadcasting plus PyTorch's type promotion."""
from __future__ import annotations

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.frontend.tensor import Tensor
from ember.core.type_promotion import can_cast, elementwise_dtypes, result_type

from . import shape_rule
from .common import (NUMBER_TYPES, check_no_internal_overlap, broadcast_shapes, is_contiguous_data, iterator_strides, trivial_layout, type_name,
                     with_layout)

_ROUNDING_MODES = (None, "trunc", "floor")


def _operands(op, args):
    """The tensor-or-number operands of a pointwise op, type-checked."""
    out = []
    for i in op.tensor_args:
        a = args[i]
        if not isinstance(a, (Tensor,) + NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{op.arg_names[i]}' must be Tensor or a number, "
                                    f"not {type(a).__name__}")
        out.append(a)
    return out


def _check_sub(op, args, operands, result_dtype):
    bools = [isinstance(o, bool) or (isinstance(o, Tensor) and o._dtype is _dt.bool) for o in operands]
    if all(bools):
        raise DTypeError(f"{op.name}(): Subtraction, the `-` operator, with two bool tensors is not supported. "
                         "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise DTypeError(f"{op.name}(): Subtraction, the `-` operator, with a bool tensor is not supported. "
                         "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_neg(op, args, operands, result_dtype):
    if result_dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): Negation, the `-` operator, on a bool tensor is not supported. "
                         "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_div(op, args, operands, result_dtype):
    mode = args[2]
    if mode not in _ROUNDING_MODES:
        raise ArgumentValueError(f"{op.name}(): div expected rounding_mode to be one of None, 'trunc', or "
                                 f"'floor' but found '{mode}'")
    if mode is not None and result_dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "div_{mode}_cpu" not implemented for \'Bool\'')


def _check_floor_divide(op, args, operands, result_dtype):
    if result_dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "div_floor_cpu" not implemented for \'Bool\'')


def _check_pow(op, args, operands, result_dtype):
    exponent = args[1]
    if result_dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "pow" not implemented for \'Bool\'')
    if type(exponent) is int and exponent < 0 and not result_dtype.is_floating_point:
        raise ArgumentValueError(f"{op.name}(): Integers to negative integer powers are not allowed "
                                 f"(exponent={exponent}, self is {type_name(result_dtype)}).")


def _check_abs(op, args, operands, result_dtype):
    if result_dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "abs_cpu" not implemented for \'Bool\'')


def _check_relu(op, args, operands, result_dtype):
    if result_dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): Boolean inputs not supported for relu")


def _check_alpha(op, args, operands, result_dtype):
    alpha = args[op.arg_names.index("alpha")]
    if not isinstance(alpha, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    if isinstance(alpha, float) and not result_dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): For integral input tensors, argument alpha must not be a floating point number.")


def _check_sub_alpha(op, args, operands, result_dtype):
    _check_sub(op, args, operands, result_dtype)
    _check_alpha(op, args, operands, result_dtype)


def _check_no_bool(kernel):
    def check(op, args, operands, result_dtype):
        if result_dtype is _dt.bool:
            raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'Bool\'')
    return check


def _check_float_only(kernel):
    def check(op, args, operands, result_dtype):
        if not result_dtype.is_floating_point:
            raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'{type_name(result_dtype)}\'')
    return check


def _check_integral(kernel):
    def check(op, args, operands, result_dtype):
        if result_dtype.is_floating_point:
            raise MissingKernelError(f'{op.name}(): "{kernel}" not implemented for \'{type_name(result_dtype)}\'')
    return check


_CHECKS = {"sub": _check_sub_alpha, "rsub": _check_sub_alpha, "add": _check_alpha, "neg": _check_neg,
           "div": _check_div, "floor_divide": _check_floor_divide, "pow": _check_pow, "abs": _check_abs,
           "relu": _check_relu, "floor": _check_no_bool("floor_vml_cpu"), "ceil": _check_no_bool("ceil_vml_cpu"),
           "round": _check_no_bool("round_vml_cpu"), "trunc": _check_no_bool("trunc_vml_cpu"),
           "fmod": _check_no_bool("fmod_cpu"), "remainder": _check_no_bool("remainder_cpu"),
           "frac": _check_float_only("frac_cpu"), "hypot": _check_float_only("hypot_cpu"),
           "bitwise_and": _check_integral("bitwise_and_cpu"), "bitwise_or": _check_integral("bitwise_or_cpu"),
           "bitwise_xor": _check_integral("bitwise_xor_cpu"), "bitwise_not": _check_integral("bitwise_not_cpu")}
_CHECK_OF_OP: dict[str, object] = {}     # op name (overload, in-place) -> check or None
_UNSET = object()


def _check_of(op):
    """The per-op check of `op` (None for most ops), looked up once per op name."""
    name = op.name
    try:
        return _CHECK_OF_OP[name]
    except KeyError:
        check = _CHECKS.get(name.split(".")[0].rstrip("_"))
        if check is None and "alpha" in op.arg_names:
            check = _check_alpha
        _CHECK_OF_OP[name] = check
        return check


def _extra_checks(op, args, operands, result_dtype):
    """Per-op argument and dtype checks of pointwise ops (PyTorch's errors)."""
    check = _check_of(op)
    if check is not None:
        check(op, args, operands, result_dtype)


@shape_rule("pointwise")
def pointwise(op, *args):
    """Broadcast shape of the tensor operands; dtype by the op's promotion rule."""
    return pointwise_on_args(op, args)


# promotion rules under which one tensor's result dtype is its own, but for the ops that promote
# bool (PyTorch's square is pow(self, 2): bool promotes to int64)
_OWN_DTYPE_RULES = frozenset({"default", "none"})
_BOOL_TO_INT64 = frozenset({"square", "square_"})


def pointwise_on_args(op, args: tuple):
    """`pointwise` taking the argument tuple itself: backend entries call this form (a call
    with `*args` repacks the tuple, a measurable part of a tiny op's cost)."""
    idx = op.tensor_args
    if len(idx) == 2:
        # fast path, the common case: two tensors of one dtype and shape and an int alpha,
        # both contiguous or one-dimensional (either way the result is a plain contiguous
        # tensor of that dtype and shape; an in-place op's `self` must be contiguous, not
        # expanded, so it always takes the test)
        a = args[idx[0]]
        b = args[idx[1]]
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a._dtype is b._dtype and op.promotion == "default":
            da, db = a._data, b._data
            sa = da.shape
            if sa == db.shape and (op.arg_names[-1] != "alpha" or args[-1].__class__ is int):
                if len(sa) < 2 and not op.mutated:
                    contiguous = True
                else:
                    try:
                        contiguous = da.flags.c_contiguous and db.flags.c_contiguous
                    except AttributeError:
                        contiguous = is_contiguous_data(da) and is_contiguous_data(db)
                if contiguous:
                    check = _CHECK_OF_OP.get(op.name, _UNSET)
                    if check is _UNSET:
                        check = _check_of(op)
                    if check is not None and check is not _check_alpha:   # an int alpha passes it
                        check(op, args, (a, b), a._dtype)
                    return (sa, a._dtype)
    elif len(args) == 1 and op.promotion in _OWN_DTYPE_RULES and op.inplace_of is None \
            and op.name not in _BOOL_TO_INT64:
        # fast path of a unary op (relu, neg, ...) on a contiguous tensor: its own shape, dtype and layout
        a = args[0]
        if isinstance(a, Tensor):
            da = a._data
            try:
                contiguous = da.flags.c_contiguous
            except AttributeError:
                contiguous = is_contiguous_data(da)
            if contiguous:
                check = _check_of(op)
                if check is not None:
                    check(op, args, [a], a._dtype)
                return (da.shape, a._dtype)
    operands = _operands(op, args)
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if not tensors:
        raise ArgumentTypeError(f"{op.name}(): expected at least one Tensor argument, got only numbers")
    if op.promotion == "none":
        result = tensors[0]._dtype
    elif op.promotion == "int_to_float" and op.arg_names[-1] == "rounding_mode" and args[2] is not None:
        _, result = elementwise_dtypes(*operands, rule="default")     # div(..., rounding_mode=...) keeps ints
    else:
        _, result = elementwise_dtypes(*operands, rule=op.promotion)
        if result is _dt.bool and op.name in _BOOL_TO_INT64:
            result = _dt.int64
    _extra_checks(op, args, operands, result)
    if len(tensors) == 1:
        shape = tensors[0]._data.shape
    else:
        shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    if op.inplace_of is not None:
        return _inplace_result(op, args[0], shape, result)
    # Python numbers are 0-d operands of PyTorch's TensorIterator, except pow's Scalar overloads
    scalars = len(tensors) != len(operands) and not op.name.startswith("pow")
    if trivial_layout(shape, tensors, scalars):
        return (shape, result)
    if op.name == "rsub.Tensor":
        tensors.reverse()           # computed as sub(other, self): other leads the layout
    common = result_type(*operands) if op.promotion == "always_bool" else result
    return with_layout(shape, result, iterator_strides(shape, tensors, [common] * len(tensors), scalars))


pointwise.on_args = pointwise_on_args


def _inplace_result(op, self: Tensor, shape, result):
    """An in-place op writes into `self`: the result must fit its shape and dtype."""
    if tuple(shape) != tuple(self._data.shape):
        raise ShapeError(f"{op.name}(): output with shape {list(self._data.shape)} doesn't match the broadcast "
                         f"shape {list(shape)}")
    if not can_cast(result, self._dtype):
        raise DTypeError(f"{op.name}(): result type {type_name(result)} can't be cast to the desired output type "
                         f"{type_name(self._dtype)}")
    check_no_internal_overlap(op, self)
    return (self._data.shape, self._dtype)


@shape_rule("where")
def where(op, condition, self, other):
    if not isinstance(condition, Tensor):
        raise ArgumentTypeError(f"{op.name}(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not _dt.bool:
        raise DTypeError(f"{op.name}(): where expected condition to be a boolean tensor, but got a tensor with "
                         f"dtype {type_name(condition._dtype)}")
    operands = _operands(op, (condition, self, other))[1:]
    tensors = [condition] + [o for o in operands if isinstance(o, Tensor)]
    _, result = elementwise_dtypes(*operands, rule="default")
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    scalars = len(tensors) != len(operands) + 1
    if trivial_layout(shape, tensors, scalars):
        return (shape, result)
    dtypes = [None] + [result] * (len(tensors) - 1)      # self and other are converted, not condition
    return with_layout(shape, result, iterator_strides(shape, tensors, dtypes, scalars))


@shape_rule("clamp")
def clamp(op, self, min=None, max=None):
    if not isinstance(self, Tensor):
        raise ArgumentTypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(self).__name__}")
    if min is None and max is None:
        raise ArgumentValueError(f"{op.name}(): At least one of 'min' or 'max' must not be None")
    operands = [self]
    for name, bound in (("min", min), ("max", max)):
        if bound is None:
            continue
        if not isinstance(bound, (Tensor,) + NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Tensor or a number, not "
                                    f"{type(bound).__name__}")
        operands.append(bound)
    _, result = elementwise_dtypes(*operands, rule="default")
    if result is _dt.bool and (len(operands) == 3 or not isinstance(operands[1], Tensor)):
        # one tensor bound is maximum/minimum, which bool supports; PyTorch has no other bool clamp
        raise MissingKernelError(f'{op.name}(): "clamp_cpu" not implemented for \'Bool\'')
    tensors = [o for o in operands if isinstance(o, Tensor)]
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    if op.inplace_of is not None:
        return _inplace_result(op, self, shape, result)
    if trivial_layout(shape, tensors):
        return (shape, result)
    return with_layout(shape, result, iterator_strides(shape, tensors, [result] * len(tensors)))
