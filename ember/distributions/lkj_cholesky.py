"""LKJCholesky (torch.distributions.LKJCholesky): the LKJ distribution of Lewandowski, Kurowicka and Joe over
correlation matrices M, density proportional to det(M)^(eta - 1), expressed over their lower Cholesky factors L
(M = L L^T); eta = `concentration`, and eta = 1 is uniform over correlation matrices.

Draws use the onion method, vectorised over rows: row i of L (i >= 1) is sqrt(y_i) times a uniform direction
in its first i coordinates, y_i ~ Beta(i/2, eta + (dim - 2)/2 - (i - 1)/2), and its diagonal entry makes the
row unit length. (torch 2.x draws y_i ~ Beta(i - 1/2, ...) instead, so its draws' correlations beyond the
first row do not follow the LKJ marginals; ember's do, and its log_prob equals torch's.) The density over L is prod_i L_ii^(2(eta - 1) + dim - 1 - i) (the LKJ density times the
Jacobian of L -> L L^T) over the normaliser of the LKJ paper (its equation on page 1999).
"""
from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .gamma_family import Beta
from .utils import broadcast_all
from .wishart import mvlgamma

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ(dim, concentration) over the lower Cholesky factors of dim x dim correlation matrices. Draws are not
    reparameterised (`sample` only), as torch's."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)
        # The Beta laws of the squared lengths of the rows' off-diagonal parts: row i >= 1 has i entries and
        # Beta(i/2, eta + (dim - 2)/2 - (i - 1)/2); row 0 (none) gets row 1's law, never used.
        offset = ember.arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ember.cat([ember.zeros(1, dtype=offset.dtype, device=offset.device), offset])     # i - 1
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        return self._expanded(new, batch_shape)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = normal.pow(2).sum(-1, keepdim=True).sqrt()
            direction = normal / norm.clamp(min=ember.finfo(y.dtype).tiny)     # row 0 is all zeros: stays so
            w = y.sqrt() * direction
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=ember.finfo(y.dtype).tiny).sqrt()
            return w + ember.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        dim, eta = self.dim, self.concentration
        diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        power = 2 * (eta - 1).unsqueeze(-1) + dim - ember.arange(2, dim + 1, dtype=eta.dtype, device=eta.device)
        unnormalised = (power * diagonal.log()).sum(-1)
        alpha = eta + 0.5 * (dim - 1)
        log_normaliser = (0.5 * (dim - 1) * math.log(math.pi) + mvlgamma(alpha - 0.5, dim - 1)
                          - (dim - 1) * ember.lgamma(alpha))
        return unnormalised - log_normaliser
