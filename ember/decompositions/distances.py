"""Pairwise distances (cdist, pdist) composed from broadcasting differences and reductions.

The p = 2 distance uses the "safe sqrt" pattern, so the gradient at a zero distance is 0,
as PyTorch's cdist backward gives, instead of NaN.
"""
from __future__ import annotations

import math

from ember._generated import functions as F

from . import decomposition


def _norm_last(diff, p: float):
    """The p-norm of `diff` over its last dimension."""
    if p == 0:
        return F.sum(F._to_copy(F.ne(diff, 0), dtype=diff.dtype), -1)
    a = F.abs(diff)
    if p == math.inf:
        return F.amax(a, -1) if diff.shape[-1] else F.sum(a, -1)
    if p == 1:
        return F.sum(a, -1)
    if p == 2:
        squared = F.sum(F.mul(diff, diff), -1)
        zero = F.eq(squared, 0)
        return F.where(zero, 0.0, F.sqrt(F.where(zero, 1.0, squared)))
    return F.pow(F.sum(F.pow(a, p), -1), 1.0 / p)


@decomposition("_cdist_forward")
def _cdist_forward(x1, x2, p, compute_mode):
    if x2.dtype is not x1.dtype:        # an empty result or no columns (the shape rule refuses others): x1's dtype
        x2 = F._to_copy(x2, dtype=x1.dtype)
    diff = F.sub(F.unsqueeze(x1, -2), F.unsqueeze(x2, -3))    # [..., P, R, M], batch dims broadcast
    return _norm_last(diff, p)


@decomposition("cdist")
def cdist(x1, x2, p=2.0, compute_mode=None):
    return F._cdist_forward(x1, x2, p, compute_mode)


@decomposition("_pdist_forward")
def _pdist_forward(self, p=2.0):
    n = self.shape[0]
    if n < 2:
        return F.slice(F.sum(self, -1), 0, 0, 0)       # empty, and still connected to self
    rows = [_norm_last(F.sub(F.slice(self, 0, i + 1, n), F.select(self, 0, i)), p) for i in range(n - 1)]
    return F.cat(rows)


@decomposition("pdist")
def pdist(self, p=2.0):
    return F._pdist_forward(self, p)
