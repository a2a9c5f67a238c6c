"""TransformedDistribution (a base distribution pushed through bijective transforms) and LogNormal, the
normal distribution through exp (torch.distributions' classes of those names). The transforms here keep
shapes, so the event shape is the base's."""
from __future__ import annotations

import ember

from . import constraints
from .continuous import Normal
from .distribution import Distribution
from .transforms import ExpTransform, Transform
from .utils import sum_rightmost

__all__ = ["TransformedDistribution", "LogNormal"]


class TransformedDistribution(Distribution):
    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not (isinstance(transforms, list) and all(isinstance(t, Transform) for t in transforms)):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, but was {transforms}")
        self.transforms = transforms
        self.base_dist = base_distribution
        super().__init__(base_distribution.batch_shape, base_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = ember.Size(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape)
        new.transforms = self.transforms
        return self._expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        """log p(value): the base's log density at the inverse image, less each transform's log |det J|."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - sum_rightmost(transform.log_abs_det_jacobian(x, y), event_dim - transform.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotone_sign(self) -> int:
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        return sign

    def cdf(self, value):
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        value = self.base_dist.cdf(value)
        return value if self._monotone_sign() == 1 else 1.0 - value

    def icdf(self, value):
        value = value if self._monotone_sign() == 1 else 1.0 - value
        value = self.base_dist.icdf(value)
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        return f"LogNormal(loc: {self.loc.size() if self.loc.numel() > 1 else self.loc}, " \
               f"scale: {self.scale.size() if self.scale.numel() > 1 else self.scale})"


