"""Wishart (torch.distributions.Wishart): the distribution of sums of df outer products of N(0, Sigma) vectors,
over symmetric positive-definite p x p matrices, given by df > p - 1 and one of Sigma (covariance_matrix), its
inverse (precision_matrix) or its lower Cholesky factor L (scale_tril).

As MultivariateNormal, everything is computed from L. Draws use the Bartlett decomposition: X = (L A)(L A)^T
where A is lower-triangular with sqrt(chi2(df - i)) on its diagonal (i = 0..p-1) and standard normals below
it, so draws are reparameterised (gradients reach df through the chi-square draws and L through the product).
The density and entropy use the multivariate log-gamma and digamma functions, written here from lgamma and
digamma: log Gamma_p(a) = p(p-1)/4 log(pi) + sum_j log Gamma(a - j/2).
"""
from __future__ import annotations

import math
import numbers
import warnings

import ember

from . import constraints
from .distribution import Distribution
from .gamma_family import Chi2
from .multivariate_normal import scale_tril_of
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2.0)


def _half_steps(x, p: int):
    """x[..., None] - (0, 1/2, ..., (p-1)/2): the arguments the multivariate gamma functions sum over."""
    return x.unsqueeze(-1) - ember.arange(p, dtype=x.dtype, device=x.device) / 2


def mvlgamma(x, p: int):
    """The log of the multivariate gamma function of order p, elementwise (torch.mvlgamma), for x > (p-1)/2."""
    return ember.lgamma(_half_steps(x, p)).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def mvdigamma(x, p: int):
    """The derivative of mvlgamma(x, p) in x: the sum of digamma(x - j/2) over j < p."""
    return ember.digamma(_half_steps(x, p)).sum(-1)


class Wishart(Distribution):
    """Wishart(df, Sigma) over p x p symmetric positive-definite matrices, p = the matrix's last dimension;
    Sigma given by exactly one of covariance_matrix, precision_matrix or scale_tril. Its mean is df * Sigma.
    df between p - 1 and p is allowed (with a warning): draws are then often singular."""

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self) -> dict:
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (precision_matrix is not None) + (scale_tril is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                                 "specified.")
        name, matrix = next((n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix),
                                                ("scale_tril", scale_tril)) if m is not None)
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = ember.Size(matrix.shape[:-2])
            df_tensor = ember.tensor(df, dtype=matrix.dtype, device=matrix.device)
        else:
            batch_shape = ember.broadcast_shapes(matrix.shape[:-2], df.shape)
            df_tensor = df
        self.df = df_tensor.expand(batch_shape)
        event_shape = ember.Size(matrix.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_of(scale_tril, covariance_matrix, precision_matrix)
        self._chi2 = self._bartlett_chi2(self.df)

    def _bartlett_chi2(self, df) -> Chi2:
        """The chi-square laws of the squared diagonal of the Bartlett factor: df - i for i = 0..p-1."""
        p = self._event_shape[-1]
        offsets = ember.arange(p, dtype=self._unbroadcasted_scale_tril.dtype, device=df.device)
        return Chi2(df.unsqueeze(-1) - offsets, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(batch_shape)
        matrix_shape = batch_shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(matrix_shape)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(matrix_shape))
        self._expanded(new, batch_shape)
        new._chi2 = new._bartlett_chi2(new.df)
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return ember.matmul(L, L.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return ember.cholesky_solve(eye, L).expand(self._batch_shape + self._event_shape)

    def _per_matrix(self, x):
        """A batch-shaped tensor with two trailing singleton dimensions, to scale matrices."""
        return x.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._per_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        """(df - p - 1) Sigma, nan where df <= p + 1 (no mode inside the support)."""
        factor = self.df - self._event_shape[-1] - 1
        factor = ember.where(factor > 0, factor, float("nan"))
        return self._per_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        """Var X_ij = df (Sigma_ij^2 + Sigma_ii Sigma_jj)."""
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._per_matrix(self.df) * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape):
        shape = self._extended_shape(sample_shape)
        L = self._unbroadcasted_scale_tril
        diagonal = self._chi2.rsample(sample_shape).sqrt()
        diagonal = ember.clamp(diagonal, min=ember.finfo(diagonal.dtype).eps)
        below = ember.randn(shape, dtype=L.dtype, device=L.device).tril(-1)
        factor = ember.matmul(L, ember.diag_embed(diagonal) + below)
        return ember.matmul(factor, factor.mT)

    def rsample(self, sample_shape=(), max_try_correction: int | None = None):
        """A reparameterised draw (Bartlett decomposition). A draw that is not numerically positive-definite
        (likely for df close to p - 1) is redrawn up to `max_try_correction` times (10 by default), with a
        warning; one still singular after that is returned as it is, and its log_prob may be -inf."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = ember.Size(sample_shape)
        sample = self._bartlett_sample(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample = ember.where(singular.unsqueeze(-1).unsqueeze(-1), self._bartlett_sample(sample_shape),
                                     sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value):
        """The log density at symmetric positive-definite `value` (its log-determinant is read from its
        Cholesky factor; with validation off, a value that has none gives nan)."""
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        value_tril, info = ember.linalg.cholesky_ex(value)
        value_logdet = 2 * value_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        value_logdet = ember.where(info == 0, value_logdet, float("nan"))
        trace = ember.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)      # tr(Sigma^-1 X)
        half_log_det_sigma = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det_sigma) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * value_logdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        half_log_det_sigma = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det_sigma) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2)
