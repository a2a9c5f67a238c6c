"""ember.distributions.MultivariateNormal and LowRankMultivariateNormal against torch.distributions: from the same
float64 parameters (the Gaussian given by each of scale_tril, covariance_matrix and precision_matrix), log_prob,
entropy, the moments and the derived matrices to 1e-6 or tighter, their gradients, KL divergences between the
pairs torch has, expand, the validation errors, the reparameterised draws' gradients (with the draw's own
noise recovered) and the draws' mean and covariance at a fixed seed within a statistical bound."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as ED
from distribution_support import TIGHT, close, validation_on  # noqa: F401  (validation_on: a fixture)

pytestmark = pytest.mark.usefixtures("validation_on")


def params(seed: int = 0, batch=(2,), n: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(tuple(batch) + (n, n))
    cov = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
    return {"loc": rng.standard_normal(tuple(batch) + (n,)), "covariance_matrix": cov,
            "precision_matrix": np.linalg.inv(cov), "scale_tril": np.linalg.cholesky(cov),
            "value": rng.standard_normal((4,) + tuple(batch) + (n,)), "rng": rng}


def mvn(lib, loc, kind: str, matrix, grad: bool = False):
    t = lib.tensor(loc, requires_grad=grad), lib.tensor(matrix, requires_grad=grad)
    return lib.distributions.MultivariateNormal(t[0], **{kind: t[1]}), t


KINDS = ["scale_tril", "covariance_matrix", "precision_matrix"]


@pytest.mark.parametrize("kind", KINDS)
def test_mvn_matches_torch_from_each_parametrisation(kind):
    p = params(1)
    (de, (le, me)), (dt, (lt, mt)) = mvn(ember, p["loc"], kind, p[kind], True), mvn(torch, p["loc"], kind, p[kind], True)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) and tuple(de.event_shape) == tuple(dt.event_shape)
    value = p["value"]
    close(de.log_prob(ember.tensor(value)), dt.log_prob(torch.tensor(value)))
    close(de.entropy(), dt.entropy())
    for name in ("mean", "mode", "variance", "stddev", "scale_tril", "covariance_matrix", "precision_matrix"):
        close(getattr(de, name), getattr(dt, name))
    # gradients of log_prob and entropy with respect to loc and the matrix given
    w = p["rng"].standard_normal((4, 2))
    se = (de.log_prob(ember.tensor(value)) * ember.tensor(w)).sum() + de.entropy().sum()
    st = (dt.log_prob(torch.tensor(value)) * torch.tensor(w)).sum() + dt.entropy().sum()
    for e, t in zip(ember.autograd.grad(se, (le, me)), torch.autograd.grad(st, (lt, mt))):
        close(e, t, rtol=1e-6, atol=1e-8)


def test_batch_shapes_broadcast_loc_and_matrix():
    p = params(2, batch=(), n=2)
    loc = np.random.default_rng(3).standard_normal((3, 1, 2))
    cov = np.stack([p["covariance_matrix"], 2 * p["covariance_matrix"]])
    de = ED.MultivariateNormal(ember.tensor(loc), covariance_matrix=ember.tensor(cov))
    dt = TD.MultivariateNormal(torch.tensor(loc), covariance_matrix=torch.tensor(cov))
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) == (3, 2)
    value = np.random.default_rng(4).standard_normal((5, 1, 2, 2))
    close(de.log_prob(ember.tensor(value)), dt.log_prob(torch.tensor(value)))
    close(de.entropy(), dt.entropy())
    ee, et = de.expand((4, 3, 2)), dt.expand((4, 3, 2))
    assert tuple(ee.batch_shape) == tuple(et.batch_shape)
    close(ee.log_prob(ember.tensor(value[:1])), et.log_prob(torch.tensor(value[:1])))
    close(ee.covariance_matrix, et.covariance_matrix)
    assert tuple(ee.sample((6,)).shape) == tuple(et.sample((6,)).shape) == (6, 4, 3, 2, 2)


def test_rsample_gradients_from_the_draws_own_noise():
    p = params(5, batch=(), n=3)
    loc = ember.tensor(p["loc"], requires_grad=True)
    L = ember.tensor(p["scale_tril"], requires_grad=True)
    ember.manual_seed(0)
    x = ED.MultivariateNormal(loc, scale_tril=L).rsample((7,))
    w = p["rng"].standard_normal((7, 3))
    gl, gL = ember.autograd.grad((x * ember.tensor(w)).sum(), (loc, L))
    eps = np.linalg.solve(p["scale_tril"], (x.detach().numpy() - p["loc"]).T).T       # x = loc + L eps
    lt, Lt = torch.tensor(p["loc"], requires_grad=True), torch.tensor(p["scale_tril"], requires_grad=True)
    xt = lt + (Lt @ torch.tensor(eps).unsqueeze(-1)).squeeze(-1)        # torch's rsample with that noise
    close(torch.tensor(x.detach().numpy()), xt, rtol=1e-10, atol=1e-10)
    gt = torch.autograd.grad((xt * torch.tensor(w)).sum(), (lt, Lt))
    close(gl, gt[0], rtol=1e-10, atol=1e-10)
    close(gL, gt[1], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("family", ["mvn", "lowrank"])
def test_draws_have_the_distributions_mean_and_covariance(family):
    p = params(6, batch=(), n=3)
    ember.manual_seed(1)
    if family == "mvn":
        d = ED.MultivariateNormal(ember.tensor(p["loc"]), covariance_matrix=ember.tensor(p["covariance_matrix"]))
        cov = p["covariance_matrix"]
    else:
        w, diag = p["scale_tril"][:, :2], np.array([0.5, 1.0, 2.0])
        d = ED.LowRankMultivariateNormal(ember.tensor(p["loc"]), ember.tensor(w), ember.tensor(diag))
        cov = w @ w.T + np.diag(diag)
    n = 20000
    x = d.sample((n,)).numpy()
    # the sample mean's standard error is sqrt(diag(cov) / n); 5 of them is far out in the tail
    assert np.all(np.abs(x.mean(0) - p["loc"]) < 5 * np.sqrt(np.diag(cov) / n))
    sd = np.sqrt(np.outer(np.diag(cov), np.diag(cov)) * 2 / n)          # about the sample covariance's error
    assert np.all(np.abs(np.cov(x.T) - cov) < 5 * sd)


def test_mvn_validation_errors_match_torch():
    p = params(7, batch=(), n=2)
    loc = p["loc"]
    bad = {"covariance_matrix": np.array([[1.0, 2.0], [2.0, 1.0]]), "precision_matrix": np.array([[1.0, 0.5], [0.0, 1.0]]),
           "scale_tril": np.array([[1.0, 0.5], [0.0, 1.0]])}
    for kind, matrix in bad.items():
        with pytest.raises(ValueError) as t_err:
            TD.MultivariateNormal(torch.tensor(loc), **{kind: torch.tensor(matrix)})
        with pytest.raises(ValueError) as e_err:
            ED.MultivariateNormal(ember.tensor(loc), **{kind: ember.tensor(matrix)})
        head = lambda err: str(err.value).split("of distribution")[0]          # noqa: E731
        tail = lambda err: str(err.value).split("to satisfy the constraint")[1].split(", but")[0]  # noqa: E731
        assert head(e_err) == head(t_err) and tail(e_err) == tail(t_err)
    calls = [lambda m: m.distributions.MultivariateNormal(m.tensor(1.0), covariance_matrix=m.eye(1, dtype=m.float64)),
             lambda m: m.distributions.MultivariateNormal(m.zeros(2, dtype=m.float64)),
             lambda m: m.distributions.MultivariateNormal(m.zeros(2), scale_tril=m.eye(2), covariance_matrix=m.eye(2)),
             lambda m: m.distributions.MultivariateNormal(m.zeros(2), scale_tril=m.ones(2))]
    for call in calls:
        with pytest.raises(ValueError) as t_err:
            call(torch)
        with pytest.raises(ValueError) as e_err:
            call(ember)
        assert str(e_err.value) == str(t_err.value)
    de = ED.MultivariateNormal(ember.zeros(2, dtype=ember.float64), scale_tril=ember.eye(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="must match event_shape"):
        de.log_prob(ember.zeros(3, dtype=ember.float64))


def test_constraints_match_torch():
    cases = [np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[1.0, 0.0], [0.3, 2.0]]),
             np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[-1.0, 0.0], [0.3, 2.0]]), np.ones((2, 3))]
    for name in ("positive_definite", "lower_cholesky", "lower_triangular", "square", "symmetric"):
        ce, ct = getattr(ED.constraints, name), getattr(TD.constraints, name)
        assert repr(ce) == repr(ct) and ce.event_dim == ct.event_dim
        for m in cases:
            if m.shape[0] != m.shape[1] and name in ("positive_definite", "lower_cholesky"):
                continue
            assert ce.check(ember.tensor(m)).tolist() == ct.check(torch.tensor(m)).tolist(), (name, m)


@pytest.mark.parametrize("batch_p, batch_q", [((2,), (2,)), ((), (3, 1))])
def test_kl_between_multivariate_normals(batch_p, batch_q):
    p, q = params(8, batch=batch_p), params(9, batch=batch_q)
    for kind_p, kind_q in (("scale_tril", "covariance_matrix"), ("precision_matrix", "scale_tril")):
        (dpe, _), (dpt, _) = mvn(ember, p["loc"], kind_p, p[kind_p]), mvn(torch, p["loc"], kind_p, p[kind_p])
        (dqe, _), (dqt, _) = mvn(ember, q["loc"], kind_q, q[kind_q]), mvn(torch, q["loc"], kind_q, q[kind_q])
        close(ED.kl_divergence(dpe, dqe), TD.kl_divergence(dpt, dqt))
    other = ED.MultivariateNormal(ember.zeros(2, dtype=ember.float64), scale_tril=ember.eye(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="different event shapes"):
        ED.kl_divergence(dpe, other)


# ---------------------------------------------------------------- LowRankMultivariateNormal
def lowrank(lib, p, grad: bool = False):
    ts = [lib.tensor(p[k], requires_grad=grad) for k in ("loc", "cov_factor", "cov_diag")]
    return lib.distributions.LowRankMultivariateNormal(*ts), ts


def lowrank_params(seed: int, batch=(2,), n: int = 4, r: int = 2) -> dict:
    rng = np.random.default_rng(seed)
    return {"loc": rng.standard_normal(tuple(batch) + (n,)), "cov_factor": rng.standard_normal((n, r)),
            "cov_diag": rng.uniform(0.5, 2.0, tuple(batch) + (n,)), "value": rng.standard_normal((3,) + tuple(batch) + (n,)),
            "rng": rng}


def test_lowrank_matches_torch():
    p = lowrank_params(10)
    (de, te), (dt, tt) = lowrank(ember, p, True), lowrank(torch, p, True)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape) and tuple(de.event_shape) == tuple(dt.event_shape)
    close(de.log_prob(ember.tensor(p["value"])), dt.log_prob(torch.tensor(p["value"])))
    close(de.entropy(), dt.entropy())
    for name in ("mean", "mode", "variance", "scale_tril", "covariance_matrix", "precision_matrix"):
        close(getattr(de, name), getattr(dt, name))
    se = de.log_prob(ember.tensor(p["value"])).sum() + de.entropy().sum()
    st = dt.log_prob(torch.tensor(p["value"])).sum() + dt.entropy().sum()
    for e, t in zip(ember.autograd.grad(se, te), torch.autograd.grad(st, tt)):
        close(e, t, rtol=1e-6, atol=1e-8)
    ee, et = de.expand((3, 2)), dt.expand((3, 2))
    close(ee.log_prob(ember.tensor(p["value"][0])), et.log_prob(torch.tensor(p["value"][0])))
    assert tuple(ee.rsample((5,)).shape) == tuple(et.rsample((5,)).shape)


def test_lowrank_errors_match_torch():
    z = lambda m, *s: m.zeros(*s, dtype=m.float64)   # noqa: E731
    o = lambda m, *s: m.ones(*s, dtype=m.float64)    # noqa: E731
    calls = [lambda m: m.distributions.LowRankMultivariateNormal(m.tensor(0.0), o(m, 1, 1), o(m, 1)),
             lambda m: m.distributions.LowRankMultivariateNormal(z(m, 2), o(m, 2), o(m, 2)),
             lambda m: m.distributions.LowRankMultivariateNormal(z(m, 2), o(m, 3, 1), o(m, 2)),
             lambda m: m.distributions.LowRankMultivariateNormal(z(m, 2), o(m, 2, 1), o(m, 3)),
             lambda m: m.distributions.LowRankMultivariateNormal(z(m, 3, 2), o(m, 4, 2, 1), o(m, 2))]
    for call in calls:
        with pytest.raises(ValueError) as t_err:
            call(torch)
        with pytest.raises(ValueError) as e_err:
            call(ember)
        assert str(e_err.value).replace("ember.Size", "torch.Size") == str(t_err.value)
    with pytest.raises(ValueError, match="cov_diag .* to satisfy the constraint"):
        ED.LowRankMultivariateNormal(z(ember, 2), o(ember, 2, 1), -o(ember, 2))


@pytest.mark.parametrize("pair", ["lowrank-lowrank", "mvn-lowrank", "lowrank-mvn"])
def test_kl_pairs_with_low_rank(pair):
    a, b = lowrank_params(11), lowrank_params(12, batch=(3, 1))
    m = params(13, batch=(2,), n=4)

    def make(lib, which, p):
        if which == "lowrank":
            return lowrank(lib, p)[0]
        return mvn(lib, m["loc"], "scale_tril", m["scale_tril"])[0]
    kp, kq = pair.split("-")
    close(ED.kl_divergence(make(ember, kp, a), make(ember, kq, b)),
          TD.kl_divergence(make(torch, kp, a), make(torch, kq, b)))
    small = ED.MultivariateNormal(ember.zeros(2, dtype=ember.float64), scale_tril=ember.eye(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="different event shapes"):
        ED.kl_divergence(make(ember, kp, a), small) if kq == "mvn" else ED.kl_divergence(small, make(ember, kq, b))
