"""torch's numerical functions where the conformance samples cannot reach: cov and corrcoef on meta (torch's own
do not run on meta tensors, so the samples compare them on real devices only), and the degrees-of-freedom
corner of cov, unravel_index and the narrow_copy gradient torch gets wrong."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("shape", [(3, 5), (5,), (), (0, 4)])
@pytest.mark.parametrize("name", ["cov", "corrcoef"])
def test_meta_shapes_and_dtypes_match_torchs_cpu_results(name, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = getattr(torch, name)(torch.tensor(x))
    out = getattr(ember, name)(ember.empty(shape, device="meta"))
    assert tuple(out.shape) == tuple(expected.shape) and out.dtype.name == str(expected.dtype).split(".")[1]
    ints = getattr(ember, name)(ember.empty(shape, dtype=ember.int64, device="meta"))
    assert ints.dtype == ember.float32


def test_cov_with_no_degrees_of_freedom_is_inf_or_nan_as_torchs():
    x = np.array([[1.0, 2.0, 4.0]])
    ours = ember.cov(ember.tensor(x), correction=3).numpy()
    with pytest.warns(UserWarning):
        theirs = torch.cov(torch.tensor(x), correction=3).numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("indices, shape", [([4, 1, 6, -1], (2, 3)), (5, (2, 3)), ([[0, 7], [11, 3]], (3, 4)),
                                            ([2], 5), ([0, 1], (1, 2, 1))])
def test_unravel_index_matches_torch(indices, shape):
    ours = ember.unravel_index(ember.tensor(indices), shape)
    theirs = torch.unravel_index(torch.tensor(indices), shape)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == ember.int64 and tuple(a.shape) == tuple(b.shape) and a.tolist() == b.tolist()


@pytest.mark.parametrize("indices, shape, exc", [([1.0], (2, 3), TypeError), ([1], (2, -3), ValueError)])
def test_unravel_index_errors_match_torch(indices, shape, exc):
    with pytest.raises(exc):
        torch.unravel_index(torch.tensor(indices), shape)
    with pytest.raises(exc):
        ember.unravel_index(ember.tensor(indices), shape)


def test_narrow_copy_gradient_with_a_negative_start_is_the_positive_starts():
    """torch's narrow_copy backward gives zeros for a negative start (a torch bug): ember's gradient is the one
    torch gives the same window named by its positive start."""
    grad = np.arange(1.0, 4.0).reshape(3, 1)
    x = ember.arange(12.0).reshape(3, 4).requires_grad_()
    x.narrow_copy(1, -1, 1).backward(ember.tensor(grad, dtype=ember.float32))
    t = torch.arange(12.0).reshape(3, 4).requires_grad_()
    t.narrow_copy(1, 3, 1).backward(torch.tensor(grad, dtype=torch.float32))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
