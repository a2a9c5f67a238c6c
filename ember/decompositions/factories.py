"""Factories and random tensors in terms of `empty` and in-place fills."""
from __future__ import annotations

from ember._generated import functions as F
from ember.frontend import dtype as _dt
from ember.frontend.type_promotion import dtype_of_scalar

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


@decomposition("eye")
def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    out = F.zeros((n, m), dtype=dtype, device=device)
    if n and m:
        F.fill_(F.as_strided(out, (min(n, m),), (m + 1,), 0), 1)
    return out


def _like(self, dtype, device):
    return F.empty(tuple(self.shape), dtype=dtype or self.dtype, device=self.device if device is None else device)


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
    return F.normal_(F.empty(size, dtype=dtype, device=device), 0.0, 1.0, generator=generator)


@decomposition("randint.low")
def randint(low, high, size, generator=None, dtype=None, device=None, requires_grad=False):
    return F.random_(F.empty(size, dtype=dtype or _dt.int64, device=device), low, high, generator=generator)
