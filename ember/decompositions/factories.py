"""Factories and random tensors in terms of `empty` and in-place fills."""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.frontend.tensor import make_tensor
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
