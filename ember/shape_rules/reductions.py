"""Shape rules of reductions (sum, mean, amax, max.dim, argmax, their NaN-ignoring forms, median and kthvalue)
and softmax."""
from __future__ import annotations

from ember.core.errors import (ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, IndexOutOfRangeError,
                               MissingKernelError, ShapeError)
from ember.core import dtype as _dt

from . import shape_rule
from .common import (as_int, check_dtype_arg, check_kernel_dtype, check_tensor, shape_of, type_name, wrap_dim,
                     wrap_dims)


def reduced_shape(shape, dims, keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _dims(op, self, dim) -> tuple[int, ...]:
    """Reduction dims; None or [] means every dimension."""
    ndim = len(self._data.shape)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return wrap_dims(op, dim, ndim)


@shape_rule("sum")
def sum_(op, self, dim=None, keepdim=False, dtype=None):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    dims = _dims(op, self, dim)
    if dtype is None:
        dtype = _dt.int64 if self._dtype.category < 2 else self._dtype
    return (reduced_shape(self._data.shape, dims, keepdim), dtype)


@shape_rule("mean")
def mean(op, self, dim=None, keepdim=False, dtype=None):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    out = dtype or self._dtype
    if not out.is_floating_point:
        raise DTypeError(f"{op.name}(): could not infer output dtype. Input dtype must be either a floating point "
                         f"or complex dtype. Got: {type_name(out)}")
    dims = _dims(op, self, dim)
    return (reduced_shape(self._data.shape, dims, keepdim), out)


@shape_rule("amax")
def amax(op, self, dim=(), keepdim=False):
    """amax/amin (and max()/min() of all elements): empty reductions are errors."""
    check_tensor(op, self, "input")
    shape = self._data.shape
    every = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    if every and any(s == 0 for s in shape):
        raise ArgumentValueError(f"{op.name}(): Expected reduction dim to be specified for input.numel() == 0. "
                                 "Specify the reduction dim with the 'dim' argument.")
    dims = _dims(op, self, dim)
    for d in dims:
        if shape and shape[d] == 0:
            raise DimensionError(f"{op.name}(): Expected reduction dim {d} to have non-zero size.")
    return (reduced_shape(shape, dims, keepdim), self._dtype)


@shape_rule("max_dim")
def max_dim(op, self, dim, keepdim=False):
    check_tensor(op, self, "input")
    shape = self._data.shape
    d = wrap_dim(op, dim, len(shape))
    if shape and shape[d] == 0:
        raise DimensionError(f"{op.name}(): Expected reduction dim {d} to have non-zero size.")
    out = reduced_shape(shape, (d,) if shape else (), keepdim)
    return ((out, self._dtype), (out, _dt.int64))


@shape_rule("argmax")
def argmax(op, self, dim=None, keepdim=False):
    check_tensor(op, self, "input")
    shape = self._data.shape
    if self._dtype is _dt.bool:
        raise DTypeError(f'{op.name}(): "{op.name.split(".")[0]}_cpu" not implemented for \'Bool\'')
    if dim is None:
        if any(s == 0 for s in shape):
            raise DimensionError(f"{op.name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return ((1,) * len(shape) if keepdim else (), _dt.int64)
    d = wrap_dim(op, dim, len(shape))
    if shape and shape[d] == 0:
        raise DimensionError(f"{op.name}(): Expected reduction dim {d} to have non-zero size.")
    return (reduced_shape(shape, (d,) if shape else (), keepdim), _dt.int64)


@shape_rule("softmax")
def softmax(op, self, dim, dtype=None):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    shape = self._data.shape
    d = wrap_dim(op, dim, len(shape))
    out = dtype or self._dtype
    if not out.is_floating_point and 0 not in shape:    # torch's kernel returns an empty input untouched
        raise _no_softmax_kernel(op, op.name.split(".")[0], d, len(shape), out)
    return (self._data.shape, out)


def _no_softmax_kernel(op, kernel: str, d: int, ndim: int, dtype) -> MissingKernelError:
    """torch's error for a softmax kernel (`kernel`: softmax, log_softmax_backward, ...) of a non-float dtype,
    which names the kernel for the last dim or for another one."""
    impl = "lastdim_kernel_impl" if d == ndim - 1 or not ndim else "kernel_impl"
    return MissingKernelError(f'{op.name}(): "{kernel}_{impl}" not implemented for \'{type_name(dtype)}\'')


@shape_rule("softmax_backward_data")
def softmax_backward_data(op, grad_output, output, dim, input_dtype):
    """_softmax_backward_data/_log_softmax_backward_data: torch's checks (the two of one size and dtype, a
    floating one, `dim` in range; a float32 gradient of a float16 input, torch's half_to_float case, is
    refused as torch's cpu kernel refuses it); the result in grad_output's dtype, whatever `input_dtype`."""
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, output, "output")
    check_dtype_arg(op, input_dtype, "input_dtype")
    shape = shape_of(grad_output)
    if shape != shape_of(output):
        raise ShapeError(f"{op.name}(): Expected tensor for argument #1 'grad' to have same size as tensor for "
                         f"argument #2 'output'; but {list(shape)} does not equal {list(shape_of(output))} (while "
                         "checking arguments for softmax_backward)")
    dtype = grad_output._dtype
    if output._dtype is not dtype:
        raise DTypeError(f"{op.name}(): expected scalar type {type_name(dtype)} but found {type_name(output._dtype)}")
    if dtype is _dt.float32 and input_dtype is _dt.float16:
        raise DTypeError(f"{op.name}(): expected scalar type Float but found Half")
    d = wrap_dim(op, dim, len(shape))
    if not dtype.is_floating_point:
        raise _no_softmax_kernel(op, op.name.strip("_")[:-len("_data")], d, len(shape), dtype)
    return (shape, dtype)


@shape_rule("softmax_half_to_float")
def softmax_half_to_float(op, self, dim, half_to_float):
    """_softmax/_log_softmax: softmax's rule, float32 out when half_to_float."""
    if not isinstance(half_to_float, bool):
        raise ArgumentTypeError(f"{op.name}(): argument 'half_to_float' must be bool, not {type(half_to_float).__name__}")
    return softmax(op, self, dim, _dt.float32 if half_to_float else None)


@shape_rule("count_nonzero")
def count_nonzero(op, self, dim=None):
    """int64 counts over `dim` (every dim when None or empty), the reduced dims dropped."""
    check_tensor(op, self, "input")
    return (reduced_shape(self._data.shape, _dims(op, self, dim), False), _dt.int64)


@shape_rule("nanmean")
def nanmean(op, self, dim=None, keepdim=False, dtype=None):
    """mean's dims, for a floating-point input (torch's message names the input's dtype)."""
    check_tensor(op, self, "input")
    if not (dtype or self._dtype).is_floating_point:
        raise DTypeError(f"{op.name}(): expected input to have floating point or complex dtype but got "
                         f"{type_name(self._dtype)}")
    return mean(op, self, dim, keepdim, dtype)


@shape_rule("median_all", reads=("dtypes",))
def median_all(op, self):
    check_tensor(op, self, "input")
    check_kernel_dtype(op, self._dtype)
    if not self._dtype.is_floating_point and 0 in self._data.shape:
        raise IndexOutOfRangeError(f"{op.name}(): the median of an empty integer tensor is undefined")
    return ((), self._dtype)


def _selected_along(op, self, dim, keepdim):
    """(values spec, indices spec) of a selection along `dim` (median, kthvalue), with torch's empty-dim error."""
    check_tensor(op, self, "input")
    shape = tuple(self._data.shape)
    d = wrap_dim(op, dim, len(shape))
    if shape and shape[d] == 0:
        raise IndexOutOfRangeError(f"{op.name}(): Expected reduction dim {d} to have non-zero size.")
    out = reduced_shape(shape, (d,) if shape else (), keepdim)
    return (out, self._dtype), (out, _dt.int64)


@shape_rule("median_dim", reads=("dtypes",))
def median_dim(op, self, dim, keepdim=False):
    check_tensor(op, self, "input")
    check_kernel_dtype(op, self._dtype)
    return _selected_along(op, self, dim, keepdim)


@shape_rule("kthvalue")
def kthvalue(op, self, k, dim=-1, keepdim=False):
    check_tensor(op, self, "input")
    k = as_int(op, k, "k")
    shape = tuple(self._data.shape)
    d = wrap_dim(op, dim, len(shape))
    if not 1 <= k <= (shape[d] if shape else 1):
        raise ArgumentValueError(f"{op.name}(): selected number k out of range for dimension {d}")
    return _selected_along(op, self, dim, keepdim)


@shape_rule("aminmax")
def aminmax(op, self, dim=None, keepdim=False):
    """amin's spec twice; an empty reduction has no identity (torch's message)."""
    check_tensor(op, self, "input")
    shape = tuple(self._data.shape)
    if dim is None:
        if 0 in shape:
            raise ArgumentValueError(f"{op.name}(): cannot compute aminmax over an empty dimension as the operation "
                                     "has no identity.")
        spec = ((1,) * len(shape) if keepdim else (), self._dtype)
    else:
        spec = amax(op, self, dim, keepdim)
    return (spec, spec)
