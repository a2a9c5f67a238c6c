"""Shape rules of the torch.nn.functional activations (gelu, silu, softplus, elu, ...).

An activation is a unary pointwise op: the output has the input's shape, dtype and layout
(the `pointwise` rule computes them, in-place twins included); these rules add PyTorch's
dtype and argument checks.
"""
from __future__ import annotations

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, MissingKernelError
from ember.core import dtype as _dt
from ember.frontend.tensor import Tensor
from ember.core.type_promotion import result_type

from . import RULES, shape_rule
from .common import (NUMBER_TYPES, broadcast_shapes, check_tensor, is_contiguous_data, iterator_strides, type_name,
                     with_layout)

# the name of PyTorch's cpu kernel, quoted in its "not implemented for 'Long'" errors
_KERNELS = {"gelu": "GeluKernelImpl", "silu": "silu_cpu", "softplus": "softplus_cpu", "leaky_relu": "leaky_relu_cpu",
            "elu": "elu_cpu", "mish": "mish_cpu", "hardswish": "hardswish_cpu", "hardsigmoid": "hardsigmoid_cpu",
            "gelu_backward": "GeluBackwardKernelImpl", "silu_backward": "silu_backward_cpu",
            "threshold_backward": "threshold_cpu"}
_APPROXIMATIONS = ("none", "tanh")


def _base(op) -> str:
    return op.name.split(".")[0].rstrip("_")


def _check_scalars(op, args, first: int = 1) -> None:
    for name, value in zip(op.arg_names[first:], args):
        if name == "approximate":
            if not isinstance(value, str):
                raise ArgumentTypeError(f"{op.name}(): argument 'approximate' must be str, not {type(value).__name__}")
            if value not in _APPROXIMATIONS:
                raise ArgumentValueError(f"{op.name}(): approximate argument must be either none or tanh "
                                         f"(got {value!r})")
        elif not isinstance(value, NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Number, not {type(value).__name__}")


@shape_rule("float_activation")
def float_activation(op, self, *args):
    """An activation of floating-point inputs (hardtanh also takes integers, as in PyTorch)."""
    check_tensor(op, self, "input")
    _check_scalars(op, args)
    base = _base(op)
    if base == "hardtanh":
        if self._dtype is _dt.bool:
            raise DTypeError(f"{op.name}(): Bool inputs not supported for hardtanh")
        min_val, max_val = args[0], args[1]
        if min_val > max_val:
            raise ArgumentValueError(f"{op.name}(): min_val cannot be greater than max_val "
                                     f"(min_val={min_val}, max_val={max_val})")
    elif not self._dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "{_KERNELS[base]}" not implemented for \'{type_name(self._dtype)}\'')
    return RULES["pointwise"](op, self, *args)


@shape_rule("activation_backward")
def activation_backward(op, grad_output, self, *args):
    """gelu_backward / silu_backward: the broadcast shape of grad_output and self."""
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, self, "self")
    _check_scalars(op, args, 2)
    dtype = result_type(grad_output, self)
    if not dtype.is_floating_point:
        raise MissingKernelError(f'{op.name}(): "{_KERNELS[_base(op)]}" not implemented for \'{type_name(dtype)}\'')
    shape = broadcast_shapes(op, [grad_output._data.shape, self._data.shape])
    return with_layout(shape, dtype, iterator_strides(shape, [grad_output, self], [dtype, dtype]))


@shape_rule("threshold_backward")
def threshold_backward(op, grad_output, self, threshold):
    """threshold_backward: the broadcast shape of grad_output and self in their promoted dtype, any
    dtype but bool (as torch's threshold_cpu)."""
    if not (isinstance(grad_output, Tensor) and isinstance(self, Tensor)):
        check_tensor(op, grad_output, "grad_output")        # the error names the argument
        check_tensor(op, self, "self")
    _check_scalars(op, (threshold,), 2)
    dtype = result_type(grad_output, self)
    if dtype is _dt.bool:
        raise MissingKernelError(f'{op.name}(): "{_KERNELS[_base(op)]}" not implemented for \'{type_name(dtype)}\'')
    dg, dx = grad_output._data, self._data
    shape = dg.shape
    if shape == dx.shape:                                       # relu's backward: the common case
        try:
            contiguous = dg.flags.c_contiguous and dx.flags.c_contiguous
        except AttributeError:                                  # not a numpy array (meta, opencl)
            contiguous = is_contiguous_data(dg) and is_contiguous_data(dx)
        if contiguous:
            return (shape, dtype)
    shape = broadcast_shapes(op, [shape, self._data.shape])
    # torch's TensorIterator takes `self` first, so the output follows its layout
    return with_layout(shape, dtype, iterator_strides(shape, [self, grad_output], [dtype, dtype]))
