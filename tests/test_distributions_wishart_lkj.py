"""ember.distributions.Wishart and LKJCholesky against torch.distributions: from the same float64 parameters (each
of Wishart's three parametrisations, several matrix sizes and batch shapes), log_prob, entropy, the moments and
derived matrices to 1e-6, log_prob's gradients, expand, the corr_cholesky constraint, the validation errors,
the reparameterised draws' gradients, and the draws' distribution at fixed seeds: the Wishart sample mean
against df * Sigma within a bound from its variance, LKJ draws valid Cholesky factors of correlation matrices
whose off-diagonal correlations follow their Beta marginal (Kolmogorov-Smirnov)."""
from __future__ import annotations


import numpy as np
import pytest
import torch
import torch.distributions as TD
from scipy import stats

import ember
import ember.distributions as ED
from distribution_support import TIGHT, close, validation_on  # noqa: F401  (validation_on: a fixture)

# torch warns "Singular sample detected" on every Wishart draw
pytestmark = [pytest.mark.usefixtures("validation_on"), pytest.mark.filterwarnings("ignore:Singular sample detected")]

KINDS = ["covariance_matrix", "precision_matrix", "scale_tril"]


def spd(rng, batch, n: int) -> np.ndarray:
    x = rng.standard_normal(tuple(batch) + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def matrix_for(kind: str, cov: np.ndarray) -> np.ndarray:
    return {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
            "scale_tril": np.linalg.cholesky(cov)}[kind]


def wishart(lib, df, kind: str, matrix, grad: bool = False):
    m = lib.tensor(matrix, requires_grad=grad)
    d = df if isinstance(df, float) else lib.tensor(df, requires_grad=grad)
    return lib.distributions.Wishart(d, **{kind: m}), (d, m)


# (df, matrix batch shape, n): df a number, a batch of dfs, and dfs broadcast against the matrices' batch
CASES = [(3.5, (), 2), (np.array([4.0, 7.5]), (2,), 3), (np.array([[5.0], [9.0], [4.2]]), (2,), 4)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_wishart_matches_torch(kind, case):
    df, batch, n = CASES[case]
    rng = np.random.default_rng(case)
    matrix = matrix_for(kind, spd(rng, batch, n))
    grad = not isinstance(df, float)
    (de, pe), (dt, pt) = wishart(ember, df, kind, matrix, grad), wishart(torch, df, kind, matrix, grad)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) and tuple(de.event_shape) == tuple(dt.event_shape)
    with torch.no_grad():
        value = dt.sample((3,)).numpy()
    lpe, lpt = de.log_prob(ember.tensor(value)), dt.log_prob(torch.tensor(value))
    close(lpe, lpt)
    close(de.entropy(), dt.entropy())
    for name in ("mean", "variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(de, name), getattr(dt, name))
    np.testing.assert_allclose(de.mode.detach().numpy(), dt.mode.detach().numpy(), **TIGHT)   # nan where df <= n+1
    if grad:
        w = rng.standard_normal(tuple(lpt.shape))
        se = (lpe * ember.tensor(w)).sum() + de.entropy().sum()
        st = (lpt * torch.tensor(w)).sum() + dt.entropy().sum()
        for e, t in zip(ember.autograd.grad(se, pe), torch.autograd.grad(st, pt)):
            close(e, t, rtol=1e-6, atol=1e-8)


def test_wishart_expand_matches_torch():
    cov = spd(np.random.default_rng(5), (), 3)
    de = ED.Wishart(ember.tensor([4.0, 6.0], dtype=ember.float64), covariance_matrix=ember.tensor(cov))
    dt = TD.Wishart(torch.tensor([4.0, 6.0], dtype=torch.float64), covariance_matrix=torch.tensor(cov))
    ee, et = de.expand((3, 2)), dt.expand((3, 2))
    assert tuple(ee.batch_shape) == tuple(et.batch_shape) == (3, 2)
    value = et.sample((2,)).numpy()
    close(ee.log_prob(ember.tensor(value)), et.log_prob(torch.tensor(value)))
    close(ee.entropy(), et.entropy())
    close(ee.mean, et.mean)
    assert tuple(ee.sample((4,)).shape) == (4, 3, 2, 3, 3)


def test_wishart_sample_mean_within_its_standard_error():
    ember.manual_seed(0)
    n, df, draws = 3, 5.5, 4000
    cov = spd(np.random.default_rng(6), (), n)
    d = ED.Wishart(ember.tensor(df, dtype=ember.float64), scale_tril=ember.tensor(np.linalg.cholesky(cov)))
    x = d.sample((draws,))
    assert tuple(x.shape) == (draws, n, n)
    assert bool(ED.constraints.positive_definite.check(x).all())
    xs = x.numpy()
    np.testing.assert_array_equal(xs, np.swapaxes(xs, -1, -2))
    std_error = np.sqrt(d.variance.numpy() / draws)
    np.testing.assert_allclose(d.mean.numpy(), df * cov, rtol=1e-12)
    assert np.all(np.abs(xs.mean(0) - df * cov) < 4.5 * std_error)
    # the sample variance too, loosely: Var X_ij = df (S_ij^2 + S_ii S_jj)
    np.testing.assert_allclose(xs.var(0), d.variance.numpy(), rtol=0.25)


def test_wishart_rsample_gradients_flow():
    ember.manual_seed(1)
    cov = spd(np.random.default_rng(7), (2,), 3)
    df = ember.tensor([4.0, 8.0], dtype=ember.float64, requires_grad=True)
    tril = ember.tensor(np.linalg.cholesky(cov), requires_grad=True)
    w = ember.tensor(np.random.default_rng(8).standard_normal((5, 2, 3, 3)))
    x = ED.Wishart(df, scale_tril=tril).rsample((5,))
    g_df, g_tril = ember.autograd.grad((x * w).sum(), (df, tril))
    lower = np.tril_indices(3)
    for g in (g_df.numpy(), g_tril.numpy()[..., lower[0], lower[1]]):
        assert np.all(np.isfinite(g)) and np.all(g != 0)
    # the draw's noise does not depend on scale_tril: a central difference at the same seed gives its gradient
    base, h = np.linalg.cholesky(cov), 1e-6
    for i, j in [(0, 0), (2, 1)]:
        values = []
        for sign in (1, -1):
            shifted = base.copy()
            shifted[1, i, j] += sign * h
            ember.manual_seed(1)
            d = ED.Wishart(df.detach(), scale_tril=ember.tensor(shifted))
            values.append(float((d.rsample((5,)) * w).sum()))
        np.testing.assert_allclose((values[0] - values[1]) / (2 * h), g_tril.numpy()[1, i, j], rtol=1e-6)
    # sample() keeps no graph
    assert not ED.Wishart(df, scale_tril=tril).sample().requires_grad


def test_wishart_errors_match_torch():
    eye = np.eye(3)
    bad = [dict(df=5.0), dict(df=5.0, covariance_matrix=eye, scale_tril=eye),          # AssertionError
           dict(df=5.0, scale_tril=np.ones(3)),                                         # ValueError: 1-d
           dict(df=1.5, covariance_matrix=eye),                                         # df <= n - 1
           dict(df=5.0, covariance_matrix=-eye),                                        # not positive-definite
           dict(df=5.0, scale_tril=np.triu(np.ones((3, 3)))),                           # not lower-triangular
           dict(df=5.0, precision_matrix=eye + np.triu(np.ones((3, 3)), 1))]            # not symmetric
    for kwargs in bad:
        classes = []
        for lib in (torch, ember):
            args = {k: v if isinstance(v, float) else lib.tensor(v) for k, v in kwargs.items()}
            with pytest.raises(Exception) as info:
                lib.distributions.Wishart(**args)
            classes.append(type(info.value))
        assert classes[0] is classes[1], (kwargs, classes)
    with pytest.raises(ValueError, match="df=1.5 expected to be greater than ndim - 1 = 2"):
        ED.Wishart(1.5, covariance_matrix=ember.tensor(eye))
    with pytest.raises(AssertionError, match="Exactly one of"):
        ED.Wishart(5.0)
    d = ED.Wishart(5.0, covariance_matrix=ember.tensor(eye))
    with pytest.raises(ValueError, match="within the support"):
        d.log_prob(ember.tensor(-eye))
    with pytest.raises(ValueError, match="right-most size"):
        d.log_prob(ember.tensor(np.eye(2)))
    with pytest.warns(UserWarning, match="Low df values"):
        ED.Wishart(2.5, covariance_matrix=ember.tensor(eye))


# ---------------------------------------------------------------- LKJCholesky

@pytest.mark.parametrize("dim,concentration", [(2, 0.7), (3, [0.5, 1.0, 2.5]), (5, [[1.5], [4.0]])])
def test_lkj_log_prob_matches_torch(dim, concentration):
    conc = np.asarray(concentration, dtype=np.float64)
    ce, ct = ember.tensor(conc, requires_grad=True), torch.tensor(conc, requires_grad=True)
    de, dt = ED.LKJCholesky(dim, ce), TD.LKJCholesky(dim, ct)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) and tuple(de.event_shape) == tuple(dt.event_shape)
    torch.manual_seed(0)
    value = dt.sample((4,)).numpy()
    lpe, lpt = de.log_prob(ember.tensor(value)), dt.log_prob(torch.tensor(value))
    close(lpe, lpt)
    close(ember.autograd.grad(lpe.sum(), ce)[0], torch.autograd.grad(lpt.sum(), ct)[0])
    ee, et = de.expand((2,) + tuple(de.batch_shape)), dt.expand((2,) + tuple(dt.batch_shape))
    close(ee.log_prob(ember.tensor(value[:1])), et.log_prob(torch.tensor(value[:1])))
    assert tuple(ee.sample((3,)).shape) == (3,) + tuple(et.batch_shape) + (dim, dim)


def test_lkj_draws_are_correlation_cholesky_factors_with_beta_marginals():
    ember.manual_seed(0)
    dim, draws = 4, 3000
    conc = np.array([0.6, 2.0])
    d = ED.LKJCholesky(dim, ember.tensor(conc))
    L = d.sample((draws,))
    assert tuple(L.shape) == (draws, 2, dim, dim) and not L.requires_grad
    assert bool(ED.constraints.corr_cholesky.check(L).all())
    Ln = L.numpy()
    assert bool(TD.constraints.corr_cholesky.check(torch.tensor(Ln)).all())
    corr = Ln @ np.swapaxes(Ln, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    # each off-diagonal correlation r has (r + 1) / 2 ~ Beta(eta - 1 + dim / 2, eta - 1 + dim / 2)
    for b, eta in enumerate(conc):
        a = eta - 1 + dim / 2
        for i, j in [(1, 0), (3, 2), (3, 0)]:
            r = corr[:, b, i, j]
            assert stats.kstest((r + 1) / 2, stats.beta(a, a).cdf).pvalue > 1e-3, (eta, i, j)
    # the log densities of ember's draws agree with torch's at them
    close(d.log_prob(L[:5]), TD.LKJCholesky(dim, torch.tensor(conc)).log_prob(torch.tensor(Ln[:5])))


def test_corr_cholesky_constraint_matches_torch():
    rng = np.random.default_rng(3)
    L = np.linalg.cholesky(spd(rng, (3,), 3))
    corr_tril = L / np.linalg.norm(L, axis=-1, keepdims=True)
    cases = [corr_tril, L, np.swapaxes(corr_tril, -1, -2), -corr_tril, corr_tril * (1 + 1e-9),
             corr_tril.astype(np.float32) * (1 + 1e-7)]
    for value in cases:
        np.testing.assert_array_equal(ED.constraints.corr_cholesky.check(ember.tensor(value)).numpy(),
                                      TD.constraints.corr_cholesky.check(torch.tensor(value)).numpy())
    assert ED.constraints.corr_cholesky.event_dim == 2


def test_lkj_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="greater than or equal to 2. Found dim=1"):
            lib.distributions.LKJCholesky(1, 1.0)
        with pytest.raises(ValueError):
            lib.distributions.LKJCholesky(3, -1.0)
        d = lib.distributions.LKJCholesky(3, 1.0)
        with pytest.raises(ValueError, match="within the support"):
            d.log_prob(lib.eye(3) * 2)
        with pytest.raises(NotImplementedError):
            d.rsample()
        with pytest.raises(NotImplementedError):
            d.mean
        assert not d.has_rsample
    with pytest.raises(ValueError, match="concentration"):
        ED.LKJCholesky(3, ember.tensor([1.0, 0.0]))
