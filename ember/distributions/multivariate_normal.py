"""MultivariateNormal (torch.distributions.MultivariateNormal): a Gaussian over vectors, given by its mean and
one of its covariance matrix, its precision matrix or the lower Cholesky factor of its covariance.

Everything is computed from that factor L (Sigma = L L^T): draws are loc + L eps, the log density needs
the Mahalanobis distance |L^-1 (x - loc)|^2 (one triangular solve) and log det Sigma = 2 sum log diag L.
The two matrices not given are derived on first use.
"""
from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def batch_mv(matrix, vector):
    """matrix @ vector over broadcast batches: (..., n, m) and (..., m) -> (..., n)."""
    return ember.matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(scale_tril, x):
    """x^T (L L^T)^-1 x for the lower factors `scale_tril` (..., n, n) and vectors `x` (..., n), their batch
    shapes broadcast: the squared norm of L^-1 x."""
    solved = ember.linalg.solve_triangular(scale_tril, x.unsqueeze(-1), upper=False).squeeze(-1)
    return solved.pow(2).sum(-1)


def half_log_det(scale_tril):
    """log det(L L^T) / 2 = the sum of log diag L."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def tril_inverse(scale_tril):
    """L^-1 for lower-triangular L (a triangular solve against the identity)."""
    n = scale_tril.shape[-1]
    eye = ember.eye(n, dtype=scale_tril.dtype, device=scale_tril.device)
    return ember.linalg.solve_triangular(scale_tril, eye, upper=False)


def precision_to_scale_tril(precision):
    """The lower Cholesky factor of P^-1 without inverting P: the reversed matrix's factor, J P J = Lf Lf^T
    (J reverses the order), gives P = U U^T for the upper-triangular U = J Lf J, so P^-1 = (U^T)^-1 (U^T)^-T
    and (U^T)^-1 is the lower factor sought."""
    flipped = ember.linalg.cholesky(ember.flip(precision, (-2, -1)))
    return tril_inverse(ember.flip(flipped, (-2, -1)).mT)


def scale_tril_of(scale_tril, covariance_matrix, precision_matrix):
    """The lower Cholesky factor of the covariance, from whichever one of the three matrices is given."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return ember.linalg.cholesky(covariance_matrix)
    return precision_to_scale_tril(precision_matrix)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of size n = loc.shape[-1], Sigma given by exactly one of covariance_matrix,
    precision_matrix (its inverse) or scale_tril (its lower Cholesky factor, positive diagonal)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix)) if m is not None)
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             "dimensions")
        batch_shape = ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_of(scale_tril, covariance_matrix, precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        return self._expanded(new, batch_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        inverse = tril_inverse(self._unbroadcasted_scale_tril)                  # P = L^-T L^-1
        return ember.matmul(inverse.mT, inverse).expand(self._batch_shape + self._event_shape + self._event_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(self._batch_shape) if self._batch_shape else h
