"""Shape rules of pointwise ops: broadcasting plus PyTorch's type promotion."""
from __future__ import annotations

import warnings

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.spec import TensorSpec
from ember.core.symint import SymInt
from ember.core.type_promotion import can_cast, elementwise_dtypes, result_type

from . import shape_rule
from .checks import CHECKS, check_alpha
from .common import (KERNEL_LACKS, NUMBER_TYPES, check_kernel_dtype, check_no_internal_overlap,
                     check_no_partial_overlap, broadcast_shapes,
                     is_contiguous_data, iterator_strides, trivial_layout, type_name, with_layout)


_OPERAND_TYPES = (TensorSpec, SymInt) + NUMBER_TYPES     # a symbolic size is an int operand


def _operands(op, args):
    """The tensor-or-number operands of a pointwise op, type-checked."""
    out = []
    for i in op.tensor_args:
        a = args[i]
        if not isinstance(a, _OPERAND_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{op.arg_names[i]}' must be Tensor or a number, "
                                    f"not {type(a).__name__}")
        out.append(a)
    return out


def _checker(op):
    """The op's registry checks as one function `check(op, args, operands, result_dtype)`: the dtypes
    its kernel supports (`dtypes`), then its `checks`. Built on the op's first call, kept in
    OpDef.checker, so a call pays one attribute read and one call (only ops with checks)."""
    fns = [CHECKS[name] for name in op.checks]
    if op.dtypes is not None:
        lacks = KERNEL_LACKS[op.dtypes]

        def kernel_dtype(op, args, operands, result_dtype):
            if result_dtype in lacks:
                check_kernel_dtype(op, result_dtype)
        fns.insert(0, kernel_dtype)
    if len(fns) == 1:
        check = fns[0]
    else:
        def check(op, args, operands, result_dtype):
            for fn in fns:
                fn(op, args, operands, result_dtype)
    op.checker = check
    return check


@shape_rule("pointwise", reads=("dtypes", "checks", "promotion_if_given", "iterator_operands"))
def pointwise(op, *args):
    """Broadcast shape of the tensor operands; dtype by the op's promotion rule; the op's registry
    checks (`dtypes`, `checks`, and PyTorch's alpha_check of a `Scalar alpha`)."""
    return pointwise_on_args(op, args)


# promotion rules under which one tensor's result dtype is its own (not bool_to_long: PyTorch's
# square is pow(self, 2), bool promotes to int64)
_OWN_DTYPE_RULES = frozenset({"default", "none"})


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
        if isinstance(a, TensorSpec) and isinstance(b, TensorSpec) and a._dtype is b._dtype and op.promotion == "default":
            da, db = a._data, b._data
            sa = da.shape
            alpha = op.alpha_arg
            if sa == db.shape and (alpha is None or args[alpha].__class__ is int):
                if len(sa) < 2 and not op.mutated:
                    contiguous = True
                else:
                    try:
                        contiguous = da.flags.c_contiguous and db.flags.c_contiguous
                    except AttributeError:
                        contiguous = is_contiguous_data(da) and is_contiguous_data(db)
                if contiguous:
                    if op.checks or op.dtypes is not None:      # (an int alpha passes the alpha check)
                        (op.checker or _checker(op))(op, args, (a, b), a._dtype)
                    if op.inplace_of is not None:
                        check_no_partial_overlap(op, a, b)
                    return (sa, a._dtype)
    elif len(args) == 1 and op.promotion in _OWN_DTYPE_RULES and op.inplace_of is None:
        # fast path of a unary op (relu, neg, ...) on a contiguous tensor: its own shape, dtype and layout
        a = args[0]
        if isinstance(a, TensorSpec):
            da = a._data
            try:
                contiguous = da.flags.c_contiguous
            except AttributeError:
                contiguous = is_contiguous_data(da)
            if contiguous:
                if op.checks or op.dtypes is not None:
                    (op.checker or _checker(op))(op, args, [a], a._dtype)
                return (da.shape, a._dtype)
    operands = _operands(op, args)
    tensors = [o for o in operands if isinstance(o, TensorSpec)]
    if not tensors:
        raise ArgumentTypeError(f"{op.name}(): expected at least one Tensor argument, got only numbers")
    if op.promotion == "none":
        result = tensors[0]._dtype
    else:
        rule = op.promotion
        given = op.promotion_if_given          # div(..., rounding_mode=...) keeps ints: (2, "default")
        if given is not None and args[given[0]] is not None:
            rule = given[1]
        _, result = elementwise_dtypes(*operands, rule=rule)
    # torch's order: the broadcast shape, then an in-place write's shape and cast, then the kernel's dtypes
    if len(tensors) == 1:
        shape = tensors[0]._data.shape
    else:
        shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    inplace = op.inplace_of is not None
    if inplace:
        out = _inplace_result(op, args[0], shape, result, tensors)
    if op.checks or op.dtypes is not None:
        (op.checker or _checker(op))(op, args, operands, result)
    if op.alpha_arg is not None:
        check_alpha(op, args[op.alpha_arg], result)
    if inplace:
        return out
    # Python numbers are 0-d operands of PyTorch's TensorIterator, except where the registry says
    # `iterator_operands: tensors_only` (pow: torch's Scalar overloads take the number as a scalar)
    order = op.iterator_operands
    scalars = len(tensors) != len(operands) and order != "tensors_only"
    if trivial_layout(shape, tensors, scalars):
        return (shape, result)
    if order == "reversed":
        tensors.reverse()           # rsub is computed as sub(other, self): other leads the layout
    common = result_type(*operands) if op.promotion == "always_bool" else result
    return with_layout(shape, result, iterator_strides(shape, tensors, [common] * len(tensors), scalars))


pointwise.on_args = pointwise_on_args


def _inplace_result(op, self: TensorSpec, shape, result, tensors=()):
    """An in-place op writes into `self`: the result must fit its shape and dtype, and no other operand
    may partly overlap it."""
    if tuple(shape) != tuple(self._data.shape):
        raise ShapeError(f"{op.name}(): output with shape {list(self._data.shape)} doesn't match the broadcast "
                         f"shape {list(shape)}")
    if not can_cast(result, self._dtype):
        raise DTypeError(f"{op.name}(): result type {type_name(result)} can't be cast to the desired output type "
                         f"{type_name(self._dtype)}")
    check_no_internal_overlap(op, self)
    for t in tensors:
        if t is not self:
            check_no_partial_overlap(op, self, t)
    return (self._data.shape, self._dtype)


@shape_rule("where")
def where(op, condition, self, other):
    if not isinstance(condition, TensorSpec):
        raise ArgumentTypeError(f"{op.name}(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not _dt.bool:
        if condition._dtype is not _dt.uint8:
            raise DTypeError(f"{op.name}(): where expected condition to be a boolean tensor, but got a tensor with "
                             f"dtype {type_name(condition._dtype)}")
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in "
                      "a future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=2)
    operands = _operands(op, (condition, self, other))[1:]
    tensors = [condition] + [o for o in operands if isinstance(o, TensorSpec)]
    _, result = elementwise_dtypes(*operands, rule="default")
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    scalars = len(tensors) != len(operands) + 1
    if trivial_layout(shape, tensors, scalars):
        return (shape, result)
    dtypes = [None] + [result] * (len(tensors) - 1)      # self and other are converted, not condition
    return with_layout(shape, result, iterator_strides(shape, tensors, dtypes, scalars))


@shape_rule("isclose")
def isclose(op, self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Two tensors of one dtype, broadcast together; non-negative tolerances; a bool result laid out as a
    comparison of the two (the composite's ops give that layout on every backend)."""
    for name, t in (("self", self), ("other", other)):
        if not isinstance(t, TensorSpec):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if self._dtype is not other._dtype:
        raise DTypeError(f"{op.name}(): {type_name(self._dtype)} did not match {type_name(other._dtype)}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be float, not {type(v).__name__}")
        if not v >= 0:                                  # NaN fails too, as in torch
            raise ArgumentValueError(f"{op.name}(): {name} must be greater than or equal to zero, but got {v}")
    tensors = [self, other]
    shape = broadcast_shapes(op, [self._data.shape, other._data.shape])
    if trivial_layout(shape, tensors, False):
        return (shape, _dt.bool)
    return with_layout(shape, _dt.bool, iterator_strides(shape, tensors, [self._dtype] * 2, False))


@shape_rule("isin")
def isin(op, elements, test_elements, assume_unique=False, invert=False):
    """A bool tensor shaped as `elements` (a number: 0-d); at least one operand a tensor."""
    operands = _operands(op, (elements, test_elements))
    if not any(isinstance(o, TensorSpec) for o in operands):
        raise ArgumentTypeError(f"{op.name}(): expected at least one Tensor argument, got only numbers")
    shape = elements._data.shape if isinstance(elements, TensorSpec) else ()
    return (shape, _dt.bool)


@shape_rule("clamp_min")
def clamp_min(op, self, min):
    """clamp(self, min=min)'s rule; the bound is required."""
    if min is None:
        raise ArgumentTypeError(f"{op.name}(): argument 'min' must be Tensor or a number, not NoneType")
    return clamp(op, self, min, None)


@shape_rule("clamp_max")
def clamp_max(op, self, max):
    """clamp(self, max=max)'s rule; the bound is required."""
    if max is None:
        raise ArgumentTypeError(f"{op.name}(): argument 'max' must be Tensor or a number, not NoneType")
    return clamp(op, self, None, max)


@shape_rule("clamp")
def clamp(op, self, min=None, max=None):
    if not isinstance(self, TensorSpec):
        raise ArgumentTypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(self).__name__}")
    if min is None and max is None:
        raise ArgumentValueError(f"{op.name}(): At least one of 'min' or 'max' must not be None")
    operands = [self]
    for name, bound in (("min", min), ("max", max)):
        if bound is None:
            continue
        if not isinstance(bound, (TensorSpec,) + NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Tensor or a number, not "
                                    f"{type(bound).__name__}")
        operands.append(bound)
    if len(operands) == 3 and any(isinstance(b, TensorSpec) and b._data.ndim for b in operands[1:]) \
            and any(isinstance(b, NUMBER_TYPES) for b in operands[1:]):
        # torch's overloads take two Scalars (a 0-d tensor is one) or two Tensors, never a number beside a tensor
        given = ", ".join("Tensor" if isinstance(o, TensorSpec) else type(o).__name__ for o in operands)
        raise ArgumentTypeError(f"{op.name.split('.')[0]}() received an invalid combination of arguments - got "
                                f"({given}), but expected one of:\n * (Tensor input, Tensor min = None, Tensor max = "
                                f"None)\n * (Tensor input, Number min = None, Number max = None)")
    _, result = elementwise_dtypes(*operands, rule="default")
    if result is _dt.bool and (len(operands) == 3 or not isinstance(operands[1], TensorSpec)):
        # one tensor bound is maximum/minimum, which bool supports; PyTorch has no other bool clamp
        raise MissingKernelError(f'{op.name}(): "clamp_cpu" not implemented for \'Bool\'')
    tensors = [o for o in operands if isinstance(o, TensorSpec)]
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    if op.inplace_of is not None:
        return _inplace_result(op, self, shape, result, tensors)
    if trivial_layout(shape, tensors):
        return (shape, result)
    return with_layout(shape, result, iterator_strides(shape, tensors, [result] * len(tensors)))
