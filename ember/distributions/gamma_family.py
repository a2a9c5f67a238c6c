"""Gamma, Chi2, Dirichlet, Beta and StudentT (torch.distributions' families): draws built on gamma draws
(`ember._standard_gamma`, reparameterised by its implicit gradient), densities and entropies through
lgamma and digamma, with torch's formulas."""
from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution, _Expandable
from .utils import broadcast_all

__all__ = ["Gamma", "Chi2", "Dirichlet", "Beta", "StudentT"]


def _clamp_to_tiny(x):
    return ember.clamp(x, min=ember.finfo(x.dtype).tiny)


class Gamma(_Expandable):
    """Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = ember._standard_gamma(self.concentration.expand(shape).contiguous()) / self.rate.expand(shape)
        return _clamp_to_tiny(value.detach()) + (value - value.detach())     # never 0, gradients kept

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration, self.rate) + ember.xlogy(self.concentration - 1, value)
                - self.rate * value - ember.lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        return (self.concentration - ember.log(self.rate) + ember.lgamma(self.concentration)
                + (1.0 - self.concentration) * ember.digamma(self.concentration))


class Chi2(Gamma):
    """The chi-square distribution with df degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, ember.full_like(df, 0.5), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of the last dimension of `concentration`."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self._event_shape)
        return self._expanded(new, batch_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = ember._standard_gamma(self.concentration.expand(shape).contiguous())
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (ember.xlogy(self.concentration - 1.0, value).sum(-1) + ember.lgamma(self.concentration.sum(-1))
                - ember.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        concentration_m1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentration_m1 / concentration_m1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)    # then the mode is a vertex (torch's choice)
        k = concentration_m1.shape[-1]
        vertex = (ember.arange(k, device=mode.device) == mode.argmax(-1, keepdim=True)).to(mode.dtype)
        return ember.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (ember.lgamma(self.concentration).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((self.concentration - 1.0) * ember.digamma(self.concentration)).sum(-1))


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1]: the first coordinate of a two-category Dirichlet."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(ember.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = ember.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return self._expanded(new, batch_shape)

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    def __repr__(self) -> str:
        c1, c0 = self.concentration1, self.concentration0
        show = lambda t: t if t.numel() == 1 else t.size()    # noqa: E731
        return f"Beta(concentration1: {show(c1)}, concentration0: {show(c0)})"


class StudentT(_Expandable):
    """Student's t with df degrees of freedom, location loc and scale scale."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._chi2 = self._chi2.expand(ember.Size(batch_shape))
        return new

    @property
    def mean(self):
        return ember.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        var = self.scale.pow(2) * self.df / (self.df - 2)
        var = ember.where(self.df <= 2, float("inf"), var)
        return ember.where(self.df <= 1, float("nan"), var)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = ember.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * ember.rsqrt(z / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + ember.lgamma(0.5 * self.df)
             - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = ember.lgamma(0.5 * self.df) + math.lgamma(0.5) - ember.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (ember.digamma(0.5 * (self.df + 1))
                                                          - ember.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
