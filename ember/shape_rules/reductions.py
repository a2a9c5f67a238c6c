"""Shape rules of reductions (sum, mean, amax, max.dim, argmax) and softmax."""
from __future__ import annotations

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, MissingKernelError
from ember.core import dtype as _dt

from . import shape_rule
from .common import check_dtype_arg, check_tensor, type_name, wrap_dim, wrap_dims


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
        kernel = "lastdim_kernel_impl" if d == len(shape) - 1 or not shape else "kernel_impl"
        raise MissingKernelError(f'{op.name}(): "{op.name.split(".")[0]}_{kernel}" not implemented for '
                                 f"'{type_name(out)}'")
    return (self._data.shape, out)


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
