"""ember.linalg's norms and products beyond the conformance samples: the matrix norms that need singular
values (refused with NotImplementedError, where torch computes them), torch.cross's deprecated default
dim (the same warning), tensordot's tensor form of `dims`, and linalg.norm picking the vector or matrix
norm as torch's does."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_orders_needing_singular_values_are_refused(ord):
    x = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    torch.linalg.matrix_norm(torch.tensor(x), ord)                  # torch computes them
    for call in (ember.linalg.matrix_norm, ember.linalg.norm):
        with pytest.raises(NotImplementedError, match="singular value"):
            call(ember.tensor(x), ord)


def test_cross_default_dim_warns_as_torch():
    """torch warns once per process (a C++ TORCH_WARN_ONCE, which an earlier test may have spent); ember warns
    through Python's warnings, with torch's text, and takes the same dim."""
    a, b = np.random.default_rng(1).standard_normal((2, 3, 3)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ember.cross(ember.tensor(a), ember.tensor(b))
    assert any("Using torch.cross without specifying the dim arg is deprecated" in str(w.message) for w in caught)
    np.testing.assert_allclose(out.numpy(), torch.cross(torch.tensor(a), torch.tensor(b), dim=0).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dims", [1, [[1], [0]]])
def test_tensordot_dims_as_a_tensor(dims):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    ours = ember.tensordot(ember.tensor(a), ember.tensor(b), dims=ember.tensor(dims))
    theirs = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=torch.tensor(dims))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("shape, ord, dim", [((4,), None, None), ((3, 4), None, None), ((2, 3, 4), None, None),
                                             ((3, 4), 1, None), ((3, 4), float("inf"), None), ((4,), 1, None),
                                             ((2, 3, 4), 0.5, 2), ((2, 3, 4), -1, (0, 2)), ((2, 3, 4), "fro", (2, 1)),
                                             ((2, 3, 4), None, (0, 1))])
def test_linalg_norm_dispatch_matches_torch(shape, ord, dim):
    x = np.random.default_rng(3).standard_normal(shape)
    ours = ember.linalg.norm(ember.tensor(x), ord, dim)
    theirs = torch.linalg.norm(torch.tensor(x), ord, dim)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_multi_dot_multiplies_in_the_cheapest_order():
    from ember.decompositions.linalg_products import chain_order

    # (10x100)(100x5)(5x50): ((AB)C) costs 7500 multiplications, (A(BC)) 75000
    assert chain_order([10, 100, 5, 50])[0][2] == 1
    assert chain_order([50, 5, 100, 10])[0][2] == 0                 # the mirror: A(BC) is the cheap one


def test_chain_matmul_is_multi_dot_with_torchs_warning_and_errors():
    rng = np.random.default_rng(4)
    mats = [rng.standard_normal(s) for s in ((2, 3), (3, 4), (4, 1))]
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        ours = ember.chain_matmul(*(ember.tensor(m) for m in mats))
    np.testing.assert_allclose(ours.numpy(), torch.linalg.multi_dot([torch.tensor(m) for m in mats]).numpy(),
                               rtol=1e-12)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="one or more matrices"):
        ember.chain_matmul()
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="dimension is 1, expected 2"):
        ember.chain_matmul(ember.ones(3), ember.ones(3))
