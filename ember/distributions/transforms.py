"""Bijective transforms of random variables (torch.distributions.transforms), each with its inverse and
the log absolute determinant of its Jacobian, for TransformedDistribution: exp, affine, sigmoid, tanh,
and their compositions. All are elementwise (event_dim 0) unless built with a larger event_dim."""
from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from . import constraints
from .utils import sum_rightmost

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform", "TanhTransform", "Transform",
           "identity_transform"]


class Transform:
    """y = T(x) with x in `domain`, y in `codomain`; `inv` is the inverse transform."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real
    sign = 1

    @property
    def event_dim(self) -> int:
        return self.domain.event_dim

    @property
    def inv(self) -> "Transform":
        return _InverseTransform(self)

    def __call__(self, x):
        return self._call(x)

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        self._inv = transform
        self.bijective = transform.bijective

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def inv(self) -> Transform:
        return self._inv

    def __call__(self, x):
        return self._inv._inverse(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)


class _Identity(Transform):
    bijective = True

    def _call(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y):
        return ember.zeros_like(x)


identity_transform = _Identity()


class ExpTransform(Transform):
    bijective = True
    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    bijective = True
    codomain = constraints.unit_interval

    def _call(self, x):
        finfo = ember.finfo(x.dtype)
        return ember.clamp(ember.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)

    def _inverse(self, y):
        finfo = ember.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    bijective = True
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (y.log1p() - (-y).log1p())          # atanh

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0) -> None:
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self):
        return self.domain

    @property
    def sign(self):
        return self.scale.sign() if isinstance(self.scale, ember.Tensor) else (1 if self.scale > 0 else -1)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, ember.Tensor):
            result = ember.abs(scale).log()
        else:
            result = ember.full_like(x, math.log(abs(scale)))
        shape = tuple(x.shape)
        return sum_rightmost(result, self._event_dim).expand(shape[:len(shape) - self._event_dim])


class ComposeTransform(Transform):
    """The transforms applied in order (the first to x first)."""

    def __init__(self, parts: list) -> None:
        self.parts = list(parts)

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def domain(self):
        return self.parts[0].domain if self.parts else constraints.real

    @property
    def codomain(self):
        return self.parts[-1].codomain if self.parts else constraints.real

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        total = 0
        for part in self.parts:
            y_part = part(x)
            total = total + part.log_abs_det_jacobian(x, y_part)
            x = y_part
        return total
