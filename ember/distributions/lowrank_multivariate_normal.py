"""LowRankMultivariateNormal (torch.distributions.LowRankMultivariateNormal): a Gaussian over vectors whose
covariance is low rank plus diagonal, Sigma = W W^T + diag(D), W = cov_factor (n x r), D = cov_diag.

Nothing of size n x n is factored: with the capacitance matrix K = I_r + W^T D^-1 W (r x r) and its
Cholesky factor L_K, the matrix determinant lemma gives log det Sigma = log det K + sum log D, and
Woodbury's identity Sigma^-1 = D^-1 - D^-1 W K^-1 W^T D^-1 gives the Mahalanobis distance
x^T D^-1 x - |L_K^-1 W^T D^-1 x|^2. Draws are loc + W eps_r + sqrt(D) eps_n.
"""
from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .multivariate_normal import batch_mv
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def capacitance_tril(cov_factor, cov_diag):
    """The lower Cholesky factor of K = I + W^T D^-1 W."""
    r = cov_factor.shape[-1]
    scaled = cov_factor.mT / cov_diag.unsqueeze(-2)                                     # W^T D^-1
    k = ember.matmul(scaled, cov_factor) + ember.eye(r, dtype=cov_factor.dtype, device=cov_factor.device)
    return ember.linalg.cholesky(k)


def log_det(cov_factor, cov_diag, capacitance):
    """log det(W W^T + diag(D)) = 2 sum log diag L_K + sum log D."""
    return 2 * capacitance.diagonal(dim1=-2, dim2=-1).log().sum(-1) + cov_diag.log().sum(-1)


def woodbury_solve_norm(cov_factor, cov_diag, capacitance, x):
    """|L_K^-1 W^T D^-1 x|^2 for vectors x (..., n)."""
    projected = batch_mv(cov_factor.mT, x / cov_diag)                                   # W^T D^-1 x
    solved = ember.linalg.solve_triangular(capacitance, projected.unsqueeze(-1), upper=False).squeeze(-1)
    return solved.pow(2).sum(-1)


def mahalanobis(cov_factor, cov_diag, capacitance, x):
    """x^T (W W^T + diag(D))^-1 x by Woodbury's identity."""
    return (x.pow(2) / cov_diag).sum(-1) - woodbury_solve_norm(cov_factor, cov_diag, capacitance, x)


class LowRankMultivariateNormal(Distribution):
    """N(loc, W W^T + diag(D)) with W = cov_factor (..., n, r) and positive D = cov_diag (..., n)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                       cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return self._expanded(new, batch_shape)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # Sigma = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: the factor of the well-conditioned middle matrix, scaled
        n = self._event_shape[0]
        root = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / root
        middle = ember.matmul(scaled, scaled.mT) + ember.eye(n, dtype=scaled.dtype, device=scaled.device)
        return (root * ember.linalg.cholesky(middle)).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        covariance = ember.matmul(w, w.mT) + ember.diag_embed(d)
        return covariance.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        # D^-1 - (L_K^-1 W^T D^-1)^T (L_K^-1 W^T D^-1)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = ember.linalg.solve_triangular(self._capacitance_tril, w.mT / d.unsqueeze(-2), upper=False)
        precision = ember.diag_embed(d.reciprocal()) - ember.matmul(a.mT, a)
        return precision.expand(self._batch_shape + self._event_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = ember.randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = mahalanobis(w, d, self._capacitance_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det(w, d, self._capacitance_tril) + m)

    def entropy(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det(w, d, self._capacitance_tril))
        return h.expand(self._batch_shape) if self._batch_shape else h
