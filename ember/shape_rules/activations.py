"""Shape rules of the torch.nn.functional activations (gelu, silu, softplus, elu, ...).

An activation is a unary pointwise op: the output has the input's shape, dtype and layout
(the `pointwise` rule computes them, in-place twins included, and checks the dtypes the
op's kernel takes: the registry's `dtypes`); these rules add PyTorch's argument checks.
"""
from __future__ import annotations

from ember.core.errors import ArgumentTypeError, ArgumentValueError
from ember.core.spec import TensorSpec
from ember.core.type_promotion import result_type

from . import shape_rule
from .common import (NUMBER_TYPES, broadcast_shapes, check_kernel_dtype, check_tensor, is_contiguous_data,
                     iterator_strides, with_layout)
from .pointwise import pointwise_on_args

_APPROXIMATIONS = ("none", "tanh")


def _check_numbers(op, args, first: int = 1) -> None:
    """The Scalar arguments (from position `first`) are Python numbers."""
    for name, value in zip(op.arg_names[first:], args):
        if not isinstance(value, NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Number, not {type(value).__name__}")


def _check_approximate(op, approximate) -> None:
    """gelu's `approximate`: "none" or "tanh"."""
    if not isinstance(approximate, str):
        raise ArgumentTypeError(f"{op.name}(): argument 'approximate' must be str, not {type(approximate).__name__}")
    if approximate not in _APPROXIMATIONS:
        raise ArgumentValueError(f"{op.name}(): approximate argument must be either none or tanh "
                                 f"(got {approximate!r})")


@shape_rule("float_activation", reads=("dtypes", "checks"))
def float_activation(op, self, *args):
    """An activation with Number arguments: the pointwise rule, which checks the dtypes the kernel takes
    (the registry's `dtypes`: floating, but for hardtanh) and the op's `checks` (hardtanh's)."""
    check_tensor(op, self, "input")
    _check_numbers(op, args)
    return pointwise_on_args(op, (self,) + args)


@shape_rule("gelu", reads=("dtypes",))
def gelu(op, self, approximate="none"):
    """gelu(self, approximate): float_activation with a str argument."""
    check_tensor(op, self, "input")
    _check_approximate(op, approximate)
    return pointwise_on_args(op, (self, approximate))


def _activation_backward(op, grad_output, self):
    dtype = result_type(grad_output, self)
    check_kernel_dtype(op, dtype)
    shape = broadcast_shapes(op, [grad_output._data.shape, self._data.shape])
    return with_layout(shape, dtype, iterator_strides(shape, [grad_output, self], [dtype, dtype]))


@shape_rule("activation_backward", reads=("dtypes",))
def activation_backward(op, grad_output, self, *args):
    """silu_backward and others: the broadcast shape of grad_output and self."""
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, self, "self")
    _check_numbers(op, args, 2)
    return _activation_backward(op, grad_output, self)


@shape_rule("gelu_backward", reads=("dtypes",))
def gelu_backward(op, grad_output, self, approximate="none"):
    """gelu_backward: activation_backward with gelu's `approximate`."""
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, self, "self")
    _check_approximate(op, approximate)
    return _activation_backward(op, grad_output, self)


@shape_rule("threshold_backward", reads=("dtypes",))
def threshold_backward(op, grad_output, self, threshold):
    """threshold_backward: the broadcast shape of grad_output and self in their promoted dtype, any
    dtype but bool (as torch's threshold_cpu)."""
    if not (isinstance(grad_output, TensorSpec) and isinstance(self, TensorSpec)):
        check_tensor(op, grad_output, "grad_output")        # the error names the argument
        check_tensor(op, self, "self")
    _check_numbers(op, (threshold,), 2)
    dtype = result_type(grad_output, self)
    check_kernel_dtype(op, dtype)                  # any dtype but bool, as torch's threshold_cpu
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
