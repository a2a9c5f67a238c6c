"""OpInfos of the special functions: lgamma, digamma, polygamma (n = 0 .. 3), erfinv (and their in-place twins)
and xlogy, against torch's. Samples stay off the poles (the negative integers) where the functions jump."""
from __future__ import annotations

import numpy as np

from ..tolerances import SOFTMAX_TOL
from .samples import ALL, FLOAT, NP_DTYPE, OpInfo, Sample, T, fn, is_float, make
from .database import (EXCLUDED, E, add, add_pointwise, binary_samples, f32, unary_errors, unary_inplace_errors,
                       unary_samples)


def _off_poles(rng, dtype):
    """Negative non-integers (between the poles) and large values, for the float dtypes."""
    if not is_float(dtype):
        return []
    x = np.array([-2.5, -1.25, -0.5, 0.01, 0.3, 12.5, 50.0], NP_DTYPE[dtype])
    return [Sample((T(x, grad=True),), desc="between poles and far out")]


add_pointwise("lgamma", "lgamma", dtypes=ALL, samples=unary_samples(domain="positive", extra=_off_poles),
              errors=unary_errors("lgamma"), inplace_errors=unary_inplace_errors("lgamma_", float_only=True),
              inplace_dtypes=FLOAT, inplace_samples=unary_samples(domain="positive"), tol=SOFTMAX_TOL)
add_pointwise("digamma", "digamma", dtypes=ALL, samples=unary_samples(domain="positive", extra=_off_poles),
              errors=unary_errors("digamma"), inplace_errors=unary_inplace_errors("digamma_", float_only=True),
              inplace_dtypes=FLOAT, inplace_samples=unary_samples(domain="positive"), tol=SOFTMAX_TOL)
add_pointwise("erfinv", "erfinv", dtypes=ALL, samples=unary_samples(domain="unit"), errors=unary_errors("erfinv"),
              inplace_errors=unary_inplace_errors("erfinv_", float_only=True), inplace_dtypes=FLOAT,
              inplace_samples=unary_samples(domain="unit"), tol=SOFTMAX_TOL)


def _polygamma_samples(rng, dtype):
    g = is_float(dtype)
    samples = []
    for n in (0, 1, 2, 3):
        samples += [Sample((n, T(make(rng, (2, 3), dtype, domain="positive") + 0.25, grad=g)), desc=f"n={n}"),
                    Sample((n, T(make(rng, (), dtype, domain="positive"), grad=g)), desc=f"n={n}, 0-d"),
                    Sample((n, T(make(rng, (0, 2), dtype), grad=g)), desc=f"n={n}, empty"),
                    Sample((n, T(make(rng, (3, 2), dtype, domain="positive") + 0.25, "t", grad=g)),
                           desc=f"n={n}, transposed")]
    return samples


add(OpInfo("polygamma", fn("polygamma"), _polygamma_samples, dtypes=FLOAT, grad=True, tol=SOFTMAX_TOL,
           errors=lambda rng: [E((-1, T(f32(rng, (2,)))), RuntimeError, "polygamma", "negative n", desc="n < 0")]))

add(OpInfo("xlogy.Tensor", fn("xlogy"), binary_samples(domain="positive"), dtypes=FLOAT, grad=True,
           tol=SOFTMAX_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "xlogy",
                                 desc="shapes do not broadcast")]))

EXCLUDED["_standard_gamma"] = (
    "random draws (ember's generator, not torch's): tests/test_distributions.py tests their distribution (the "
    "Kolmogorov-Smirnov test of Gamma and Chi2 draws) and their gradient (the mean of reparameterised draws)")
EXCLUDED["_standard_gamma_grad"] = (
    "torch's is an approximation of the implicit gradient, ember's a finite difference of the incomplete gamma "
    "function: tests/test_distributions.py checks the two agree to 2e-4 on both of ember's kernels")
EXCLUDED["poisson"] = (
    "random draws (ember's generator, not torch's): tests/test_distributions.py tests their distribution (a chi-square "
    "test against the Poisson probabilities, small and large rates) and torch's error for a negative rate")
