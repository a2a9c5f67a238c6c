"""Random ops in terms of the Philox fills (uniform_): bernoulli, multinomial, randperm, dropout.

* bernoulli: uniform < p.
* multinomial: the exponential race (the largest log(u) / p wins: the Gumbel-max trick).
  With replacement every sample is a race of its own; without, the winners of one race are
  taken one by one with argmax, so the samples come out in the order they were drawn.
* randperm: the ranks of n uniform keys (ties broken by position) are a uniform random
  permutation; ranking compares every pair, O(n**2) work in chunks, until a sort op lands.
* dropout: input * (uniform < 1 - p) / (1 - p), differentiated through.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.errors import ArgumentValueError
from ember.frontend import dtype as _dt

from . import decomposition
from .losses import _any


def _uniform_like(self, generator, dtype=None):
    """Uniform [0, 1) draws with the shape and layout of `self` (float32 for low-precision/integer self)."""
    if dtype is None:
        dtype = self.dtype if self.dtype in (_dt.float32, _dt.float64) else _dt.float32
    return F.uniform_(F.empty_like(self, dtype=dtype), 0.0, 1.0, generator=generator)


@decomposition("bernoulli")
def bernoulli(self, generator=None):
    if _any(F.logical_not(F.logical_and(F.ge(self, 0), F.le(self, 1)))):
        raise ArgumentValueError("bernoulli(): Expected p_in >= 0 && p_in <= 1 (every probability in [0, 1])")
    u = _uniform_like(self, generator)
    return F._to_copy(F.lt(u, self), dtype=self.dtype)


@decomposition("bernoulli.p")
def bernoulli_p(self, p, generator=None):
    u = _uniform_like(self, generator)
    return F._to_copy(F.lt(u, p), dtype=self.dtype)


@decomposition("bernoulli_.float")
def bernoulli_inplace(self, p=0.5, generator=None):
    return F.copy_(self, F.lt(_uniform_like(self, generator), p))


def _check_distribution(probs):
    finite_nonneg = F.logical_and(F.isfinite(probs), F.ge(probs, 0))
    if _any(F.logical_not(finite_nonneg)):
        raise ArgumentValueError("multinomial(): probability tensor contains either `inf`, `nan` or element < 0")
    if _any(F.le(F.sum(probs, -1), 0)):
        raise ArgumentValueError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")


_RACE_ELEMENTS = 1 << 22       # uniform draws per chunk of samples with replacement


@decomposition("multinomial")
def multinomial(self, num_samples, replacement=False, generator=None):
    one_d = self.dim() == 1
    probs = F._to_copy(F.unsqueeze(self, 0) if one_d else self, dtype=_dt.float64)
    _check_distribution(probs)
    rows, classes = probs.shape
    positions = F.arange(classes, device=self.device)
    if replacement:
        # each sample is its own race (the Gumbel-max trick): draws chunked to bound memory
        step = max(1, _RACE_ELEMENTS // max(rows * classes, 1))
        picks = []
        for start in range(0, num_samples, step):
            k = min(step, num_samples - start)
            u = F.uniform_(F.empty((rows, k, classes), dtype=_dt.float64, device=self.device), 0.0, 1.0,
                           generator=generator)
            picks.append(F.argmax(F.div(F.log(u), F.unsqueeze(probs, 1)), -1))
        out = F.cat(picks, -1)
    else:
        u = F.uniform_(F.empty((rows, classes), dtype=_dt.float64, device=self.device), 0.0, 1.0,
                       generator=generator)
        keys = F.div(F.log(u), probs)                                     # the largest log(u) / p win the race
        picks = []
        for _ in range(num_samples):
            winner = F.argmax(keys, -1, True)
            picks.append(winner)
            keys = F.where(F.eq(positions, winner), float("-inf"), keys)
            keys = F.where(F.isnan(keys), float("-inf"), keys)
        out = F.cat(picks, -1)
    return F.reshape(out, (num_samples,)) if one_d else out


_RANK_CHUNK = 2048


@decomposition("randperm")
def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    keys = F.uniform_(F.empty((n,), dtype=_dt.float64, device=device), 0.0, 1.0, generator=generator)
    positions = F.arange(n, device=device)
    ranks = []
    for start in range(0, n, _RANK_CHUNK):
        stop = min(n, start + _RANK_CHUNK)
        mine = F.reshape(F.slice(keys, 0, start, stop), (stop - start, 1))
        mine_pos = F.reshape(F.slice(positions, 0, start, stop), (stop - start, 1))
        before = F.logical_or(F.lt(keys, mine), F.logical_and(F.eq(keys, mine), F.lt(positions, mine_pos)))
        ranks.append(F.sum(before, 1))
    out = F.cat(ranks, 0) if ranks else F.empty((0,), dtype=_dt.int64, device=device)
    return out if dtype in (None, _dt.int64) else F._to_copy(out, dtype=dtype)


def _keep_mask(input, p, generator):
    return F.lt(_uniform_like(input, generator), 1.0 - p)


@decomposition("dropout")
def dropout(input, p, train):
    if not train or p == 0:
        return F.clone(input)
    if p == 1:
        return F.mul(input, 0.0)
    noise = F.div(F._to_copy(_keep_mask(input, p, None), dtype=input.dtype), 1.0 - p)
    return F.mul(input, noise)


@decomposition("native_dropout")
def native_dropout(input, p, train=None):
    mask_dtype = input.dtype if input.numel() == 0 else _dt.bool      # as PyTorch's cpu kernel
    if train is False:
        return F.clone(input), F.ones_like(input, dtype=mask_dtype)
    if input.numel() == 0:
        return F.clone(input), F.ones_like(input, dtype=mask_dtype)
    mask = _keep_mask(input, p, None)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return F.mul(F.mul(input, mask), scale), mask
