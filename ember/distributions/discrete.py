"""Bernoulli and Categorical (torch.distributions' families): parametrised by probabilities or by logits
(exactly one), each computed from the other on first use; and Poisson."""
from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from . import constraints
from .distribution import Distribution, _Expandable
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Categorical", "Poisson"]


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _expand_param(self, new, shape) -> None:
    """Set on `new` the given one of probs / logits (and any already computed other) expanded to `shape`."""
    for name in ("probs", "logits"):
        if name in self.__dict__:
            setattr(new, name, getattr(self, name).expand(shape))
            new._param = getattr(new, name)


class Bernoulli(Distribution):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = ember.Size(batch_shape)
        _expand_param(self, new, batch_shape)
        return self._expanded(new, batch_shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ember.broadcast_tensors(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True):
        values = ember.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(Distribution):
    """One of the categories 0 .. K-1 of the last dimension of `probs` (normalised) or `logits`."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size(-1)
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else ember.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = ember.Size(batch_shape)
        _expand_param(self, new, batch_shape + ember.Size((self._num_events,)))
        new._num_events = self._num_events
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        with ember.no_grad():
            samples_2d = ember.multinomial(probs_2d, math.prod(sample_shape), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = ember.finfo(self.logits.dtype).min
        logits = ember.clamp(self.logits, min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = ember.arange(self._num_events, dtype=ember.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Poisson(_Expandable):
    """The number of events at rate `rate`: P(k) = rate^k e^(-rate) / k!."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _params = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.poisson(self.rate.expand(shape).contiguous())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
