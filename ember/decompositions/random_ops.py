"""Random ops in terms of the Philox fills (uniform_): bernoulli, multinomial, randperm, dropout.

* bernoulli: uniform < p.
* multinomial: with replacement, the inverse cdf (one uniform per sample, placed among the
  cdf by one stable sort); without, the exponential race (the largest log(u) / p wins).
  The winners of the race are its `topk` (a stable descending sort: ties go to the lower index, as argmax), so the
  samples come out in the order they were drawn and zero-probability categories (keys -inf)
  fill any remaining places in index order, each drawn once.
* randperm: the ranks of n uniform keys (ties broken by position) are a uniform random
  permutation: a stable argsort of the keys, inverted with one scatter_add (O(n log n)); the
  cpu's native kernel ranks the same Philox keys the same way.
* dropout: input * (uniform < 1 - p) / (1 - p), differentiated through. No native cpu kernel:
  the Philox fill is ~88% of its time, and training runs it under autograd, where a native
  kernel of a composite op would not be used.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core.errors import ArgumentValueError
from ember.core import dtype as _dt

from . import decomposition, explicit_kernel
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


def _inverse_cdf(probs, num_samples: int, generator):
    """Samples with replacement: category i where cdf[i-1] <= u * total < cdf[i], one uniform each.

    The count of cdf entries <= each target comes from one stable sort of the cdf and the
    targets together (cdf entries first, so a target equal to cdf[j] counts it): O((C + S)
    log(C + S)) per row instead of a race over every (sample, category) pair. A zero-weight
    category i has cdf[i] == cdf[i-1], so no target lands in it; a target rounded up to the
    total goes to the last category of nonzero weight.
    """
    rows, classes = probs.shape
    device = probs.device
    cdf = F.cumsum(probs, -1)
    u = F.uniform_(F.empty((rows, num_samples), dtype=_dt.float64, device=device), 0.0, 1.0, generator=generator)
    targets = F.mul(u, F.slice(cdf, -1, classes - 1, classes))
    keys = F.cat([cdf, targets], -1)
    is_cdf = F.cat([F.ones((rows, classes), dtype=_dt.int64, device=device),
                    F.zeros((rows, num_samples), dtype=_dt.int64, device=device)], -1)
    order = F.argsort(keys, stable=True)
    cdf_before = F.cumsum(F.gather(is_cdf, -1, order), -1)               # cdf entries up to each sorted place
    width = classes + num_samples
    place = F.scatter_add(F.zeros((rows, width), dtype=_dt.int64, device=device), -1, order,
                          F.expand(F.arange(width, device=device), (rows, width)))   # sorted place of each key
    picked = F.gather(cdf_before, -1, F.slice(place, -1, classes, width))
    last = F.amax(F.where(F.gt(probs, 0), F.arange(classes, device=device), -1), -1, True)
    return F.minimum(picked, last)


@decomposition("multinomial")
def multinomial(self, num_samples, replacement=False, generator=None):
    one_d = self.dim() == 1
    probs = F._to_copy(F.unsqueeze(self, 0) if one_d else self, dtype=_dt.float64)
    _check_distribution(probs)
    rows, classes = probs.shape
    if replacement:
        out = _inverse_cdf(probs, num_samples, generator)
    else:
        u = F.uniform_(F.empty((rows, classes), dtype=_dt.float64, device=self.device), 0.0, 1.0,
                       generator=generator)
        keys = F.div(F.log(u), probs)                                     # the largest log(u) / p win the race
        keys = F.where(F.isnan(keys), float("-inf"), keys)               # sort counts NaN as the largest
        out = F.topk(keys, num_samples, -1)[1]
    return F.reshape(out, (num_samples,)) if one_d else out


@decomposition("randperm")
def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    keys = F.uniform_(F.empty((n,), dtype=_dt.float64, device=device), 0.0, 1.0, generator=generator)
    order = F.argsort(keys, stable=True)                          # order[r]: the position of rank r
    ranks = F.arange(n, device=device)
    out = F.scatter_add(F.zeros((n,), dtype=_dt.int64, device=device), 0, order, ranks)   # out[order[r]] = r
    return out if dtype in (None, _dt.int64) else F._to_copy(out, dtype=dtype)


def _keep_mask(input, p, generator):
    return F.lt(_uniform_like(input, generator), 1.0 - p)


@decomposition("dropout")
def dropout(input, p, train):
    if not train or p == 0:
        return input                    # the input itself, as torch's dropout returns it
    if p == 1:
        return F.mul(input, 0.0)
    return F._dropout_noise(input, p)[0]


@explicit_kernel("_dropout_noise")
def dropout_noise(input, p, generator=None):
    noise = F.div(F._to_copy(_keep_mask(input, p, generator), dtype=input.dtype), 1.0 - p)
    return F.mul(input, noise), noise


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
