"""Shape rules of factories: sizes, dtype defaults (float32 for floats, int64 for ints)."""
from __future__ import annotations

import math

from ember.core.errors import ArgumentTypeError, ArgumentValueError
from ember.core import dtype as _dt
from ember.core.spec import TensorSpec
from ember.core.symint import SymInt
from ember.core.type_promotion import dtype_of_scalar

from . import shape_rule
from .common import (NUMBER_TYPES, as_int, broadcast_shapes, check_dtype_arg, check_fits, check_int_list, check_kernel_dtype, check_tensor,
                     preserved_strides, with_layout)


#: the largest byte size a storage may have (an int64 count, as torch computes it)
MAX_STORAGE_BYTES = (1 << 63) - 1


def _size(op, size, dtype) -> tuple[int, ...]:
    """A factory's `size` for a storage of `dtype`: no negative dim, and a byte size an int64 holds."""
    size = check_int_list(op, size, "size")
    for s in size:
        if s < 0:
            raise ArgumentValueError(f"{op.name}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    return _storage_fits(op, size, dtype)


def _storage_fits(op, size: tuple, dtype) -> tuple:
    """`size`, when a storage of that many elements of `dtype` has a byte size an int64 holds (torch's check;
    past it numpy or a device allocator would fail with its own error)."""
    if math.prod(size) * dtype.itemsize > MAX_STORAGE_BYTES:
        raise ArgumentValueError(f"{op.name}(): Storage size calculation overflowed with sizes={list(size)}")
    return size


@shape_rule("factory", reads=("dtypes",))
def factory(op, size, *rest):
    """empty/zeros/ones/rand/randn: (size, *, [generator,] dtype, device, requires_grad); the dtypes
    the kernel fills (rand, randn: floating) are the registry's `dtypes`."""
    dtype = rest[-3]
    check_dtype_arg(op, dtype)
    out = dtype or _dt.get_default_dtype()
    shape = _size(op, size, out)
    if 0 not in shape:              # torch fills nothing, and checks no kernel dtype, for an empty result
        check_kernel_dtype(op, out, f" ({op.name} is only defined for floating-point dtypes)")
    return (shape, out)


@shape_rule("full")
def full(op, size, fill_value, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    if not isinstance(fill_value, NUMBER_TYPES):
        if isinstance(fill_value, TensorSpec) and fill_value.ndim == 0:
            fill_value = fill_value.item()
        else:
            raise ArgumentTypeError(f"{op.name}(): argument 'fill_value' must be Number, not {type(fill_value).__name__}")
    out = dtype or dtype_of_scalar(fill_value)
    return (_size(op, size, out), out)


@shape_rule("like")
def like(op, self, dtype=None, device=None, requires_grad=False):
    """empty_like/zeros_like/ones_like: self's shape and (dense) layout, `dtype` or self's."""
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    return _like(self, dtype)


@shape_rule("full_like")
def full_like(op, self, fill_value, dtype=None, device=None, requires_grad=False):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    if not isinstance(fill_value, NUMBER_TYPES) and not (isinstance(fill_value, TensorSpec) and fill_value.ndim == 0):
        raise ArgumentTypeError(f"{op.name}(): argument 'fill_value' must be Number, not {type(fill_value).__name__}")
    return _like(self, dtype)


def _like(self, dtype):
    strides = preserved_strides(self)
    return (self._data.shape, dtype or self._dtype) if strides is None else \
        with_layout(self._data.shape, dtype or self._dtype, strides)


@shape_rule("random_like", reads=("dtypes",))
def random_like(op, self, generator=None, dtype=None, device=None, requires_grad=False):
    """rand_like/randn_like: `self`'s shape and layout, a floating dtype (`self`'s unless given)."""
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    if 0 not in self._data.shape:        # as rand's rule: nothing drawn, no kernel dtype checked
        check_kernel_dtype(op, dtype or self._dtype)
    return _like(self, dtype)


@shape_rule("randint_like")
def randint_like(op, self, low, high, generator=None, dtype=None, device=None, requires_grad=False):
    """`self`'s shape and layout, `self`'s dtype unless given; low < high."""
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    low, high = as_int(op, low, "low"), as_int(op, high, "high")
    if high <= low:
        raise ArgumentValueError(f"{op.name}(): random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _like(self, dtype)


@shape_rule("randint_like_high")
def randint_like_high(op, self, high, generator=None, dtype=None, device=None, requires_grad=False):
    """randint_like(self, high): randint_like(self, 0, high)."""
    return randint_like(op, self, 0, high, generator, dtype, device, requires_grad)


def _nonnegative_std(op, std) -> None:
    if isinstance(std, (int, float)) and not std >= 0:
        raise ArgumentValueError(f"{op.name}(): normal expects std >= 0.0, but found std {std}")


@shape_rule("normal_tensors", reads=("dtypes",))
def normal_tensors(op, mean, std, generator=None):
    """normal with a tensor mean and/or std: their broadcast shape, the mean's dtype (the std's when the mean
    is a number)."""
    tensors = [t for t in (mean, std) if isinstance(t, TensorSpec)]
    _nonnegative_std(op, std)
    shape = broadcast_shapes(op, [t._data.shape for t in tensors])
    dtype = tensors[0]._dtype
    if 0 not in shape:
        check_kernel_dtype(op, dtype)
    return (shape, dtype)


@shape_rule("normal_size", reads=("dtypes",))
def normal_size(op, mean, std, size, generator=None, dtype=None, device=None, requires_grad=False):
    _nonnegative_std(op, std)
    return factory(op, size, generator, dtype, device, requires_grad)


@shape_rule("eye")
def eye(op, n, dtype=None, device=None, requires_grad=False):
    return eye_m(op, n, n, dtype, device, requires_grad)


@shape_rule("eye_m")
def eye_m(op, n, m, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    for name, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be int, not {type(v).__name__}")
        if v < 0:
            raise ArgumentValueError(f"{op.name}(): {name} must be greater or equal to 0, got {v}")
    if n * m > MAX_STORAGE_BYTES:
        raise ArgumentValueError(f"{op.name}(): numel: integer multiplication overflow")
    out = dtype or _dt.get_default_dtype()
    return (_storage_fits(op, (n, m), out), out)


@shape_rule("arange_end", reads=("dtypes",))
def arange_end(op, end, dtype=None, device=None, requires_grad=False):
    return arange(op, 0, end, 1, dtype, device, requires_grad)


@shape_rule("arange", reads=("dtypes",))
def arange(op, start, end, step=1, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, TensorSpec) and v.ndim == 0:
            v = v.item()
        if not isinstance(v, NUMBER_TYPES) and not isinstance(v, SymInt):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Number, not {type(v).__name__}")
    if step == 0:
        raise ArgumentValueError(f"{op.name}(): step must be nonzero")
    if isinstance(step, float) and not math.isfinite(step):
        raise ArgumentValueError(f"{op.name}(): step must be finite but got {step}")
    if not all(math.isfinite(v) for v in (start, end) if isinstance(v, float)):
        raise ArgumentValueError(f"{op.name}(): unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise ArgumentValueError(f"{op.name}(): upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = _dt.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else _dt.int64
    check_kernel_dtype(op, dtype)                   # no bool arange
    if dtype is _dt.int64 and any(isinstance(v, float) for v in (start, end, step)) and int(step):
        # torch's int64 kernel counts in truncated integers: (end - start + step - sign(step)) / step
        xstart, xend, xstep = int(start), int(end), int(step)
        length = max(0, int((xend - xstart + xstep - (1 if xstep > 0 else -1)) / xstep))
    elif any(isinstance(v, float) for v in (start, end, step)):
        length = max(0, math.ceil((end - start) / step))
    else:                           # integers (symbolic sizes too): exact ceiling division
        length = max(0, -((start - end) // step))
    return ((length,), dtype)


def _spaced(op, start, end, steps, dtype):
    """linspace's and logspace's spec: numbers or 0-d tensors for the ends, a non-negative int count; the
    default dtype unless given (an integer one must hold the ends)."""
    check_dtype_arg(op, dtype)
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, TensorSpec):
            if v.ndim != 0:
                raise ArgumentValueError(f"{op.name}(): {op.name} only supports 0-dimensional start and end tensors, "
                                         f"but got {name} with {v.ndim} dimension(s).")
        elif not isinstance(v, NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Number, not {type(v).__name__}")
    steps = as_int(op, steps, "steps")
    if steps < 0:
        raise ArgumentValueError(f"{op.name}(): number of steps must be non-negative, got {steps}")
    out = dtype or _dt.get_default_dtype()
    check_kernel_dtype(op, out)                     # no bool linspace or logspace
    for v in (start, end):                          # an integer dtype's ends are converted to it first
        check_fits(op, v, out)
    return (_storage_fits(op, (steps,), out), out)


@shape_rule("linspace", reads=("dtypes",))
def linspace(op, start, end, steps, dtype=None, device=None, requires_grad=False):
    return _spaced(op, start, end, steps, dtype)


@shape_rule("logspace", reads=("dtypes",))
def logspace(op, start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise ArgumentTypeError(f"{op.name}(): argument 'base' must be float, not {type(base).__name__}")
    return _spaced(op, start, end, steps, dtype)


@shape_rule("randint")
def randint(op, low, high, size, generator=None, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    if high <= low:
        raise ArgumentValueError(f"{op.name}(): random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    out = dtype or _dt.int64
    return (_size(op, size, out), out)


@shape_rule("randint_high")
def randint_high(op, high, size, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size): randint(0, high, size)."""
    return randint(op, 0, high, size, generator, dtype, device, requires_grad)
