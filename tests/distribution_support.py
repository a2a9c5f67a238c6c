"""What the distribution tests share: validation switched on in both libraries, and value comparison."""
from __future__ import annotations

import numpy as np
import pytest
import torch.distributions as TD

import ember.distributions as ED

TIGHT = dict(rtol=1e-6, atol=1e-9)


@pytest.fixture
def validation_on():
    """Validation on in both libraries (their default under __debug__; another test in the process may have
    turned torch's off), restored afterwards."""
    saved = TD.Distribution._validate_args, ED.Distribution._validate_args
    TD.Distribution.set_default_validate_args(True)
    ED.Distribution.set_default_validate_args(True)
    yield
    TD.Distribution.set_default_validate_args(saved[0])
    ED.Distribution.set_default_validate_args(saved[1])


def _values(x) -> np.ndarray:
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x)


def close(e, t, **tol) -> None:
    """ember's values equal torch's (tensors or numbers), to TIGHT unless given."""
    np.testing.assert_allclose(_values(e), _values(t), **(tol or TIGHT))
