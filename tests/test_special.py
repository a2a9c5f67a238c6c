"""ember.special against torch.special: each function on the same float64 values (the registry's special
function ops are also in the conformance suite; these are the namespace's aliases and compositions)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

VALUES = np.array([0.0, 1e-3, 0.2, 0.5, 0.9, 1.0, 2.5, 30.0])


@pytest.mark.parametrize("name, args", [
    ("gammaln", ()), ("digamma", ()), ("psi", ()), ("erf", ()), ("expit", ()), ("expm1", ()), ("log1p", ()),
    ("exp2", ()), ("entr", ()), ("round", ()), ("logit", ()), ("logit", (0.01,)),
])
def test_unary_functions_match_torch(name, args):
    x = VALUES if name not in ("logit",) else np.clip(VALUES, 0.0, 1.0)
    e, t = getattr(ember.special, name)(ember.tensor(x), *args), getattr(torch.special, name)(torch.tensor(x), *args)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


def test_the_other_signatures_match_torch():
    x, y = np.abs(VALUES) + 0.1, VALUES
    cases = [("erfinv", (np.clip(VALUES, 0, 0.99),), {}), ("polygamma", (2, x), {}), ("xlogy", (y, x), {}),
             ("logsumexp", (x, 0), {}), ("softmax", (x, 0), {}), ("log_softmax", (x, 0), {})]
    for name, args, kwargs in cases:
        e = getattr(ember.special, name)(*(ember.tensor(a) if isinstance(a, np.ndarray) else a for a in args), **kwargs)
        t = getattr(torch.special, name)(*(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args), **kwargs)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_incomplete_gamma_functions_match_torch():
    a = np.array([0.05, 0.5, 2.0, 10.0, 50.0, 3.0])
    x = np.array([1e-3, 0.3, 5.0, 8.0, 45.0, 0.0])
    for name in ("gammainc", "gammaincc"):
        np.testing.assert_allclose(getattr(ember.special, name)(ember.tensor(a), ember.tensor(x)).numpy(),
                                   getattr(torch.special, name)(torch.tensor(a), torch.tensor(x)).numpy(),
                                   rtol=1e-8, atol=1e-12, err_msg=name)
