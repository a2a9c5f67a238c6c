"""Binomial, Multinomial and NegativeBinomial (torch.distributions' families): counts of successes of
independent trials, parametrised by a number of trials and by probabilities or logits (exactly one).

Binomial draws come from the `binomial` op, Multinomial's from Categorical draws counted per category, and
NegativeBinomial's from Poisson draws at Gamma-distributed rates (the gamma-Poisson mixture), as torch's.
"""
from __future__ import annotations

import ember
from ember.nn import functional as F

from . import constraints
from .discrete import Categorical, _expand_param, _one_of
from .distribution import Distribution
from .gamma_family import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial", "Multinomial", "NegativeBinomial"]


def _half_relu(x):
    """max(x, 0), written so that its gradient at 0 is 1/2 (torch's binomial normaliser is, too)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class _CountFamily(Distribution):
    """A `total_count` broadcast with `probs` or `logits` and cast to its dtype; the batch shape is theirs."""

    def __init__(self, total_count, probs, logits, validate_args) -> None:
        _one_of(probs, logits)
        name = "probs" if probs is not None else "logits"
        total_count, param = broadcast_all(total_count, probs if probs is not None else logits)
        self.total_count = total_count.type_as(param)
        setattr(self, name, param)
        self._param = param
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        family = next(c for c in type(self).__mro__ if c in (Binomial, NegativeBinomial))
        new = self._get_checked_instance(family, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        _expand_param(self, new, batch_shape)
        return self._expanded(new, batch_shape)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()


class Binomial(_CountFamily):
    """The number of successes in `total_count` trials, each of probability `probs` (or sigmoid(`logits`))."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = ember.lgamma(n + 1) - ember.lgamma(value + 1) - ember.lgamma(n - value + 1)
        # n log(1 + e^logits), stably: n (max(logits, 0) + log1p(e^-|logits|))
        log_normaliser = n * _half_relu(logits) + n * ember.log1p(ember.exp(-ember.abs(logits)))
        return log_choose + value * logits - log_normaliser

    def _homogeneous_count(self, what: str) -> int:
        count = int(self.total_count.max())
        if not bool(self.total_count.min() == count):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return count

    def entropy(self):
        """The exact entropy, summed over the support 0 .. total_count (which must be one count for the batch)."""
        self._homogeneous_count("entropy")
        log_p = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_p) * log_p).sum(0)

    def enumerate_support(self, expand: bool = True):
        count = self._homogeneous_count("enumerate_support")
        values = ember.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class _MultinomialConstraint(constraints.Constraint):
    """Non-negative counts whose sum over the last dimension is at most `upper_bound` (torch checks this
    weaker condition, not that the sum equals it)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        return (value >= 0).all(dim=-1) & (value.sum(dim=-1) <= self.upper_bound)

    def __repr__(self) -> str:
        return "Multinomial()"


class Multinomial(Distribution):
    """Counts of `total_count` draws among the categories of the last dimension of `probs` (normalised) or
    `logits`. `total_count` is one int for the whole batch (sampling needs it; log_prob reads the count from
    the value)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs, validate_args=False)
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return _MultinomialConstraint(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        with ember.no_grad():
            draws = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
            draws = draws.permute(*range(1, draws.dim()), 0)              # the draws of one count last
            counts = ember.zeros(self._extended_shape(sample_shape), dtype=draws.dtype, device=draws.device)
            counts.scatter_add_(-1, draws, ember.ones_like(draws))
        return counts.type_as(self.probs)

    def entropy(self):
        """n H(categorical) - log n! + sum over categories of E[log k!] under each category's Binomial(n, p)
        (log n! in the default dtype, as torch computes it from an int64 count)."""
        n = ember.tensor(self.total_count)
        first = n * self._categorical.entropy() - ember.lgamma(n + 1)
        counts = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ember.exp(self._binomial.log_prob(counts))
        return first + (binomial_probs * ember.lgamma(counts + 1)).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = ember.where((value == 0) & (logits == float("-inf")), 0.0, logits)    # 0 log 0 = 0
        return (ember.lgamma(value.sum(-1) + 1) - ember.lgamma(value + 1).sum(-1)
                + (logits * value).sum(-1))


class NegativeBinomial(_CountFamily):
    """The number of successes, each of probability `probs` (or sigmoid(`logits`)), before `total_count`
    failures (a real count is allowed)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        """The rates' distribution: Gamma(total_count, rate = (1 - p) / p)."""
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        unnormalised = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        # log((n + k - 1)! / (k! (n - 1)!)), through lgamma; 0 at n + k = 0 (the certain count 0 of n = 0)
        log_norm = ember.lgamma(n + value) - ember.lgamma(1.0 + value) - ember.lgamma(n)
        return unnormalised + log_norm.masked_fill(n + value == 0.0, 0.0)
