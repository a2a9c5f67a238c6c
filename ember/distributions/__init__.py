"""ember.distributions (torch.distributions): probability distributions with sampling (reparameterised where
the family allows), log densities, entropies and moments, parameter and sample validation, and KL
divergences between pairs.

Families here: Normal, Uniform, Exponential, Laplace, Bernoulli, Categorical, LogNormal, Gamma, Chi2, Beta,
Dirichlet, StudentT, Independent and TransformedDistribution (with the exp, affine, sigmoid, tanh and
composed transforms), Poisson, Binomial, Multinomial, NegativeBinomial, MultivariateNormal,
LowRankMultivariateNormal, Wishart and LKJCholesky. The others are listed with their reasons in docs/coverage.md.
Draws come from ember's generator, so they are not torch's numbers; their distribution is.
"""
from __future__ import annotations

from . import constraints, transforms
from .binomial import Binomial, Multinomial, NegativeBinomial
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, Poisson
from .gamma_family import Beta, Chi2, Dirichlet, Gamma, StudentT
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .transformed_distribution import LogNormal, TransformedDistribution
from .wishart import Wishart

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Chi2", "Dirichlet", "Distribution", "Exponential",
           "Gamma", "Independent", "LKJCholesky", "Laplace", "LogNormal", "LowRankMultivariateNormal", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "Poisson", "StudentT", "TransformedDistribution",
           "Uniform", "Wishart", "constraints", "kl_divergence", "register_kl", "transforms"]
