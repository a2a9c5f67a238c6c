"""ember.linalg's LU-based ops beyond the conformance samples: the info and LinAlgError of singular matrices
(numpy's LAPACK kernels and the explicit kernels in ember ops, which devices without LAPACK run), the
explicit kernels' values and pivoting against torch on larger batches, second derivatives, and autocast."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.decompositions import linalg_lu as explicit

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def _batch_with_a_singular_matrix() -> np.ndarray:
    return np.stack([np.eye(2), SINGULAR, np.array([[0.0, 1.0], [1.0, 0.0]])])


def test_info_of_singular_matrices_matches_torch():
    a = _batch_with_a_singular_matrix()
    expected = torch.linalg.inv_ex(torch.tensor(a)).info.tolist()
    assert expected == [0, 2, 0]
    assert ember.linalg.inv_ex(ember.tensor(a)).info.tolist() == expected
    assert explicit.linalg_inv_ex(ember.tensor(a))[1].tolist() == expected
    b = np.ones((3, 2))
    assert ember.linalg.solve_ex(ember.tensor(a), ember.tensor(b)).info.tolist() == \
        torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b)).info.tolist()
    assert explicit.linalg_solve_ex(ember.tensor(a), ember.tensor(b))[1].tolist() == expected


@pytest.mark.parametrize("call, message", [
    (lambda m, a: m.linalg.inv(a), r"linalg.inv: \(Batch element 1\): The diagonal element 2 is zero"),
    (lambda m, a: m.linalg.solve(a, m.ones(3, 2, dtype=a.dtype)),
     r"torch.linalg.solve: \(Batch element 1\): The solver failed because the input matrix is singular"),
    (lambda m, a: m.linalg.inv_ex(a, check_errors=True), r"linalg.inv_ex: \(Batch element 1\)"),
    (lambda m, a: m.linalg.solve_ex(a, m.ones(3, 2, dtype=a.dtype), check_errors=True),
     r"torch.linalg.solve_ex: \(Batch element 1\)"),
    (lambda m, a: m.linalg.inv(a[1]), r"^linalg.inv: The diagonal element 2 is zero")])
def test_singular_matrices_raise_torchs_linalg_error(call, message):
    a = _batch_with_a_singular_matrix()
    with pytest.raises(torch.linalg.LinAlgError, match=message):
        call(torch, torch.tensor(a))
    with pytest.raises(ember.linalg.LinAlgError, match=message):
        call(ember, ember.tensor(a))


def test_singular_determinants_are_zero():
    for lib in (ember, torch):
        assert lib.linalg.det(lib.tensor(SINGULAR)).item() == 0.0
        sign, logabsdet = lib.linalg.slogdet(lib.tensor(SINGULAR))
        assert sign.item() == 0.0 and logabsdet.item() == -np.inf
        assert lib.logdet(lib.tensor(SINGULAR)).item() == -np.inf
        assert np.isnan(lib.logdet(-lib.eye(3, dtype=lib.float64)).item())


def test_explicit_kernels_match_torch_with_pivoting():
    """Matrices whose leading entries are small force row exchanges at several steps."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 2, 5, 5))
    a[..., 0, 0] = 1e-3
    a[0, 1, 1, :] = 0.0                              # a zero row: exchanged below every pivot column
    a[0, 1, 1, 4] = 2.0
    b = rng.standard_normal((2, 5, 3))
    ta, tb = torch.tensor(a), torch.tensor(b)
    np.testing.assert_allclose(explicit.linalg_det(ember.tensor(a)).numpy(), torch.linalg.det(ta).numpy(), rtol=1e-9)
    sign, logabsdet = explicit.linalg_slogdet(ember.tensor(a))
    ts, tl = torch.linalg.slogdet(ta)
    np.testing.assert_array_equal(sign.numpy(), ts.numpy())
    np.testing.assert_allclose(logabsdet.numpy(), tl.numpy(), rtol=1e-9)
    np.testing.assert_allclose(explicit.linalg_inv_ex(ember.tensor(a))[0].numpy(), torch.linalg.inv(ta).numpy(),
                               rtol=1e-8, atol=1e-10)
    x, info = explicit.linalg_solve_ex(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(x.numpy(), torch.linalg.solve(ta, tb).numpy(), rtol=1e-8, atol=1e-10)
    assert x.shape == (3, 2, 5, 3) and info.tolist() == [[0, 0]] * 3
    xr, _ = explicit.linalg_solve_ex(ember.tensor(a), ember.tensor(b.swapaxes(-1, -2)), False)
    np.testing.assert_allclose(xr.numpy(), torch.linalg.solve(ta, tb.mT, left=False).numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("call", [lambda m, a: m.linalg.inv(a), lambda m, a: m.linalg.det(a),
                                  lambda m, a: m.linalg.slogdet(a)[1],
                                  lambda m, a: m.linalg.solve(a, m.linalg.matrix_power(a, 2))])
def test_second_derivatives_match_torch(call):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    v = rng.standard_normal((2, 3, 3))
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        (g,) = lib.autograd.grad(call(lib, x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * lib.tensor(v)).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)


def test_autocast_runs_inverse_and_solve_in_float32():
    a = ember.eye(3) * 2
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert ember.linalg.inv(a.bfloat16()).dtype == ember.float32
        assert ember.linalg.det(a).dtype == ember.float32


def test_meta_shapes():
    a = ember.empty(2, 3, 3, device="meta", requires_grad=True)
    inverse, info = ember.linalg.inv_ex(a)
    assert tuple(inverse.shape) == (2, 3, 3) and info.dtype == ember.int32 and tuple(info.shape) == (2,)
    x = ember.linalg.solve(a, ember.empty(4, 1, 3, 5, device="meta"))
    assert tuple(x.shape) == (4, 2, 3, 5)
    (x.sum() + ember.linalg.det(a).sum()).backward()
    assert tuple(a.grad.shape) == (2, 3, 3)
