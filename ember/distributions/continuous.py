"""Normal, Uniform, Exponential, Laplace (torch.distributions' families of the same names): reparameterised
samples, log densities, cdfs and inverse cdfs, entropies and moments, with torch's formulas."""
from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import _Expandable
from .utils import broadcast_all

__all__ = ["Normal", "Uniform", "Exponential", "Laplace"]


class _LocationScale(_Expandable):
    """A family with a real location `loc` (its mean and mode) and a positive `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc


class Normal(_LocationScale):
    """The normal distribution N(loc, scale^2)."""

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ember.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + ember.log(self.scale)


class Uniform(_Expandable):
    """The uniform distribution on the half-open interval [low, high)."""

    has_rsample = True
    _params = ("low", "high")

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.size(), validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return ember.full_like(self.high, float("nan"))

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rand = ember.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return ember.log(lb.mul(ub)) - ember.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return ember.log(self.high - self.low)


class Exponential(_Expandable):
    """The exponential distribution with rate `rate` (mean 1 / rate)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -ember.log1p(-u) / self.rate           # the inverse cdf of a uniform draw

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)


class Laplace(_LocationScale):
    """The Laplace distribution with location `loc` and scale `scale`."""

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.finfo(self.loc.dtype).eps
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)   # in (-1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)
