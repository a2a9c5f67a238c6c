"""ember.distributions (torch.distributions): probability distributions with sampling (reparameterised where
the family allows), log densities, entropies and moments, parameter and sample validation, and KL
divergences between pairs.

Families here: Normal, Uniform, Exponential, Laplace, Bernoulli, Categorical, LogNormal, Independent and
TransformedDistribution (with the exp, affine, sigmoid, tanh and composed transforms). The families whose
densities need special functions (Gamma, Beta, Dirichlet, Poisson, Binomial, StudentT, ...) and
MultivariateNormal (a Cholesky factorisation) are not here yet: docs/coverage.md lists them.
Draws come from ember's generator, so they are not torch's numbers; their distribution is.
"""
from __future__ import annotations

from . import constraints, transforms
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl
from .transformed_distribution import LogNormal, TransformedDistribution

__all__ = ["Bernoulli", "Categorical", "Distribution", "Exponential", "Independent", "Laplace", "LogNormal", "Normal",
           "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl", "transforms"]
