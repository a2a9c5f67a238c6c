"""Factories and random tensors in terms of `empty` and in-place fills."""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError
from ember.dispatcher.operator import ALL_OPS
from ember.frontend.tensor import Tensor, holds_data, make_tensor
from ember.core.type_promotion import dtype_of_scalar
from ember.shape_rules.common import preserved_strides

from . import decomposition


@decomposition("zeros")
def zeros(size, dtype=None, device=None, requires_grad=False):
    return F.fill_(F.empty(size, dtype=dtype, device=device), 0)


@decomposition("ones")
def ones(size, dtype=None, device=None, requires_grad=False):
    return F.fill_(F.empty(size, dtype=dtype, device=device), 1)


@decomposition("full")
def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if hasattr(fill_value, "item"):
        fill_value = fill_value.item()
    return F.fill_(F.empty(size, dtype=dtype or dtype_of_scalar(fill_value), device=device), fill_value)


@decomposition("arange")
def arange(end, dtype=None, device=None, requires_grad=False):
    return F.arange(0, end, 1, dtype=dtype, device=device)


@decomposition("eye")
def eye(n, dtype=None, device=None, requires_grad=False):
    return eye_m(n, n, dtype, device, requires_grad)


@decomposition("eye.m")
def eye_m(n, m, dtype=None, device=None, requires_grad=False):
    out = F.zeros((n, m), dtype=dtype, device=device)
    if n and m:
        F.fill_(F.as_strided(out, (min(n, m),), (m + 1,), 0), 1)
    return out


def empty_with_layout(shape, strides, dtype, device):
    """A new tensor with the given (dense, non-overlapping) strides, or contiguous when None.

    `empty` only makes contiguous tensors, so a strided one is a window on a flat `empty`,
    detached from it (it is a new tensor, not a view: its `_base` is None).
    """
    if strides is None:
        return F.empty(tuple(shape), dtype=dtype, device=device)
    n = 1
    for s in shape:
        n *= s
    window = F.as_strided(F.empty((n,), dtype=dtype, device=device), tuple(shape), tuple(strides), 0)
    return make_tensor(window._data, window._dtype, window._device, window._keys, window._storage)


def _like(self, dtype, device):
    """empty_like(self) with memory_format=preserve: dense inputs keep their strides."""
    return empty_with_layout(tuple(self.shape), preserved_strides(self), dtype or self.dtype,
                             self.device if device is None else device)


@decomposition("empty_like")
def empty_like(self, dtype=None, device=None, requires_grad=False):
    return _like(self, dtype, device)


@decomposition("zeros_like")
def zeros_like(self, dtype=None, device=None, requires_grad=False):
    return F.fill_(_like(self, dtype, device), 0)


@decomposition("ones_like")
def ones_like(self, dtype=None, device=None, requires_grad=False):
    return F.fill_(_like(self, dtype, device), 1)


@decomposition("full_like")
def full_like(self, fill_value, dtype=None, device=None, requires_grad=False):
    return F.fill_(_like(self, dtype, device), fill_value)


@decomposition("rand")
def rand(size, generator=None, dtype=None, device=None, requires_grad=False):
    return F.uniform_(F.empty(size, dtype=dtype, device=device), 0.0, 1.0, generator=generator)


@decomposition("randn")
def randn(size, generator=None, dtype=None, device=None, requires_grad=False):
    out = F.empty(size, dtype=dtype, device=device)
    if 0 in tuple(out.shape):           # nothing to draw, of any dtype (torch's shape rule checked none)
        return out
    return F.normal_(out, 0.0, 1.0, generator=generator)


@decomposition("randint.low")
def randint(low, high, size, generator=None, dtype=None, device=None, requires_grad=False):
    return F.random_(F.empty(size, dtype=dtype or _dt.int64, device=device), low, high, generator=generator)


@decomposition("randint")
def randint_high(high, size, generator=None, dtype=None, device=None, requires_grad=False):
    return randint(0, high, size, generator, dtype, device, requires_grad)


# ------------------------------------------------------------------------------------------ ranges
def _spaced(name: str, start, end, steps: int, dtype, device):
    """linspace's values before the final cast: `steps` values from `start` to `end` in the dtype they are
    computed in (a float dtype itself, float64 for an integer one, whose ends are first converted to it),
    the first half counted up from `start`, the rest down from `end`, so both ends come out exact (torch's
    kernel counts so too; its vectorised loop rounds a few values differently). The ends and the step are
    0-d tensors, so their arithmetic rounds in that dtype."""
    start, end = (v.item() if hasattr(v, "item") else v for v in (start, end))
    if dtype.is_floating_point:
        compute = dtype
    else:
        compute = _dt.float64
        start, end = _as_integer(name, start, dtype), _as_integer(name, end, dtype)
    first = F.full((), start, dtype=compute, device=device)
    if steps == 1:
        return F.reshape(first, (1,))
    last = F.full((), end, dtype=compute, device=device)
    step = F.div(F.sub(last, first), steps - 1)
    index = F.arange(0, steps, 1, dtype=compute, device=device)
    up = F.add(first, F.mul(step, index))
    down = F.sub(last, F.mul(step, F.rsub(index, steps - 1)))
    return F.where(F.lt(index, steps // 2), up, down)


def _as_integer(name: str, value, dtype) -> int:
    """A Python number converted to the integer dtype as C converts it: truncated toward zero, wrapped into
    the dtype's range (torch's `Scalar.to<int>()`). An infinite or NaN end is an error (C's conversion of
    one is undefined: torch returns whatever its CPU makes of it)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ArgumentValueError(f"{name}(): start and end must be finite for an integer dtype "
                                 f"({dtype}), but got {value}")
    v = int(value)
    bits = dtype.itemsize * 8
    if dtype is _dt.uint8:
        return v % (1 << bits)
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


@decomposition("linspace")
def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dtype = dtype or _dt.get_default_dtype()
    values = _spaced("linspace", start, end, steps, dtype, device)
    return values if values.dtype is dtype else F._to_copy(values, dtype=dtype)


@decomposition("logspace")
def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    dtype = dtype or _dt.get_default_dtype()
    powers = F.pow(base, _spaced("logspace", start, end, steps, dtype, device))
    return powers if powers.dtype is dtype else F._to_copy(powers, dtype=dtype)


# ------------------------------------------------------------------------------------------ random likes
@decomposition("rand_like")
def rand_like(self, generator=None, dtype=None, device=None, requires_grad=False):
    return F.uniform_(_like(self, dtype, device), 0.0, 1.0, generator=generator)


@decomposition("randn_like")
def randn_like(self, generator=None, dtype=None, device=None, requires_grad=False):
    out = _like(self, dtype, device)
    return out if 0 in tuple(out.shape) else F.normal_(out, 0.0, 1.0, generator=generator)


@decomposition("randint_like.low_dtype")
def randint_like(self, low, high, generator=None, dtype=None, device=None, requires_grad=False):
    return F.random_(_like(self, dtype, device), low, high, generator=generator)


@decomposition("randint_like")
def randint_like_high(self, high, generator=None, dtype=None, device=None, requires_grad=False):
    return randint_like(self, 0, high, generator, dtype, device, requires_grad)


# ------------------------------------------------------------------------------------------ normal
def _scaled_normal(name: str, mean, std, generator):
    """Standard normal draws of the operands' broadcast shape (normal's shape rule), times std plus mean
    (torch's arithmetic); std checked non-negative on a backend holding data."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if isinstance(std, Tensor) and holds_data(std) and std.numel() and F.amin(std).item() < 0:
        raise ArgumentValueError("normal(): normal expects all elements of std >= 0.0")
    op = ALL_OPS[name]
    shape, dtype = op.shape_rule(op, mean, std, generator)[:2]
    draws = F.empty(tuple(shape), dtype=dtype, device=tensors[0].device)
    if 0 not in shape:
        F.normal_(draws, 0.0, 1.0, generator=generator)
    out = F.add(F.mul(draws, std), mean)
    return out if out.dtype is dtype else F._to_copy(out, dtype=dtype)       # (torch's in-place mul_, add_)


@decomposition("normal.Tensor_Tensor")
def normal_tensor_tensor(mean, std, generator=None):
    return _scaled_normal("normal.Tensor_Tensor", mean, std, generator)


@decomposition("normal.Tensor_float")
def normal_tensor_float(mean, std=1.0, generator=None):
    return _scaled_normal("normal.Tensor_float", mean, std, generator)


@decomposition("normal.float_Tensor")
def normal_float_tensor(mean, std, generator=None):
    return _scaled_normal("normal.float_Tensor", mean, std, generator)


@decomposition("normal.float_float")
def normal_float_float(mean, std, size, generator=None, dtype=None, device=None, requires_grad=False):
    out = F.empty(size, dtype=dtype, device=device)
    return out if 0 in tuple(out.shape) else F.normal_(out, mean, std, generator=generator)
