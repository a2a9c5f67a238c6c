"""ember.distributions against torch.distributions: for each family, from the same float64 parameters,
log_prob, cdf, icdf, entropy and the moments (to 1e-6 or tighter), their gradients with respect to the
parameters, shapes (batch, event, sample, expand), validation errors, KL divergences between pairs, and
statistical tests of the draws at fixed seeds (draws come from ember's generator, not torch's: their
distribution is compared, with a Kolmogorov-Smirnov test against torch's cdf or a chi-square test)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as ED
from distribution_support import TIGHT, close, validation_on  # noqa: F401  (validation_on: a fixture)

pytestmark = pytest.mark.usefixtures("validation_on")


def arrays(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"real": rng.standard_normal((2, 3)), "pos": rng.uniform(0.5, 2.0, (2, 3)),
            "prob": rng.uniform(0.1, 0.9, (2, 3)), "probs": rng.dirichlet(np.ones(4), size=(2, 3)),
            "low": rng.uniform(-2, -1, (2, 3)), "high": rng.uniform(1, 2, (2, 3))}


# family: (parameters from `arrays`, support points for log_prob: array of the batch shape)
FAMILIES = {
    "Normal": (lambda a: dict(loc=a["real"], scale=a["pos"]), lambda a: a["real"] * 1.3 + 0.2),
    "Uniform": (lambda a: dict(low=a["low"], high=a["high"]), lambda a: a["real"].clip(-0.9, 0.9)),
    "Exponential": (lambda a: dict(rate=a["pos"]), lambda a: a["pos"] * 0.7),
    "Laplace": (lambda a: dict(loc=a["real"], scale=a["pos"]), lambda a: a["real"] - 0.4),
    "LogNormal": (lambda a: dict(loc=a["real"] * 0.3, scale=a["pos"] * 0.5), lambda a: a["pos"] * 1.1),
    "Bernoulli": (lambda a: dict(probs=a["prob"]), lambda a: (a["real"] > 0).astype(np.float64)),
    "BernoulliLogits": (lambda a: dict(logits=a["real"]), lambda a: (a["real"] > 0.3).astype(np.float64)),
    "Categorical": (lambda a: dict(probs=a["probs"]), lambda a: (np.abs(a["real"]) * 2).astype(np.int64) % 4),
    "CategoricalLogits": (lambda a: dict(logits=np.log(a["probs"]) + 0.5), lambda a: np.arange(6).reshape(2, 3) % 4),
    "Poisson": (lambda a: dict(rate=a["pos"] * 3), lambda a: np.floor(a["pos"] * 4)),
    "Gamma": (lambda a: dict(concentration=a["pos"], rate=a["pos"][::-1].copy()), lambda a: a["pos"] * 0.8),
    "Chi2": (lambda a: dict(df=a["pos"] * 2), lambda a: a["pos"] * 1.2),
    "Beta": (lambda a: dict(concentration1=a["pos"], concentration0=a["pos"][::-1].copy()), lambda a: a["prob"]),
    "StudentT": (lambda a: dict(df=a["pos"] * 3, loc=a["real"], scale=a["pos"]), lambda a: a["real"] * 1.5),
}


def build(lib, family: str, params: dict, grad: bool = False):
    cls = getattr(lib.distributions, family.replace("Logits", ""))
    tensors = {k: lib.tensor(v, requires_grad=grad and v.dtype == np.float64) for k, v in params.items()}
    return cls(**tensors), tensors


@pytest.mark.parametrize("family", FAMILIES)
def test_densities_moments_and_their_gradients_match_torch(family):
    a = arrays()
    params, points = FAMILIES[family][0](a), FAMILIES[family][1](a)
    dtype = np.int64 if "Categorical" in family else np.float64
    t_value, e_value = torch.tensor(points.astype(dtype)), ember.tensor(points.astype(dtype))
    checked = []
    for name in ("log_prob", "cdf", "entropy", "mean", "variance", "stddev", "mode"):
        # fresh distributions each time: a lazily computed parameter (logits from probs) holds one graph
        (t, t_params), (e, e_params) = build(torch, family, params, True), build(ember, family, params, True)
        assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
        try:
            t_out = getattr(t, name)(t_value) if name in ("log_prob", "cdf") else \
                (t.entropy() if name == "entropy" else getattr(t, name))
        except NotImplementedError:
            continue
        e_out = getattr(e, name)(e_value) if name in ("log_prob", "cdf") else \
            (e.entropy() if name == "entropy" else getattr(e, name))
        close(e_out, t_out, equal_nan=True, **TIGHT)
        checked.append(name)
        if name in ("log_prob", "entropy") and t_out.requires_grad:
            weights = np.random.default_rng(len(checked)).standard_normal(tuple(t_out.shape))
            t_grads = torch.autograd.grad((t_out * torch.tensor(weights)).sum(), list(t_params.values()),
                                          allow_unused=True)
            e_grads = ember.autograd.grad((e_out * ember.tensor(weights)).sum(), list(e_params.values()),
                                          allow_unused=True)
            for eg, tg, p in zip(e_grads, t_grads, t_params.values()):
                close(eg if eg is not None else np.zeros(tuple(p.shape)), tg if tg is not None else np.zeros(tuple(p.shape)))
    assert "log_prob" in checked and "mean" in checked


@pytest.mark.parametrize("family", ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal"])
def test_icdf_inverts_cdf_as_torchs(family):
    a = arrays(1)
    params = FAMILIES[family][0](a)
    (t, _), (e, _) = build(torch, family, params), build(ember, family, params)
    q = np.random.default_rng(2).uniform(0.05, 0.95, (2, 3))
    close(e.icdf(ember.tensor(q)), t.icdf(torch.tensor(q)), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_shapes_of_samples_and_expand(family):
    a = arrays()
    (t, _), (e, _) = build(torch, family, FAMILIES[family][0](a)), build(ember, family, FAMILIES[family][0](a))
    for shape in ((), (5,), (4, 1)):
        assert tuple(e.sample(shape).shape) == tuple(t.sample(shape).shape)
    if t.has_rsample:
        assert e.has_rsample and tuple(e.rsample((2,)).shape) == tuple(t.rsample((2,)).shape)
    et, tt = e.expand((4, 2, 3)), t.expand((4, 2, 3))
    assert tuple(et.batch_shape) == tuple(tt.batch_shape)
    close(et.log_prob(ember.tensor(FAMILIES[family][1](a))), tt.log_prob(torch.tensor(FAMILIES[family][1](a))))


@pytest.mark.parametrize("family, n", [("Normal", 20000), ("Uniform", 20000), ("Exponential", 20000),
                                       ("Laplace", 20000), ("LogNormal", 20000), ("Gamma", 20000), ("Chi2", 20000)])
def test_draws_follow_the_distribution_kolmogorov_smirnov(family, n):
    """The empirical cdf of ember's draws against torch's cdf: the KS statistic under its 0.001 critical
    value (1.95 / sqrt(n)), per batch element, at a fixed seed."""
    a = arrays(3)
    params = FAMILIES[family][0](a)
    (t, _), (e, _) = build(torch, family, params), build(ember, family, params)
    ember.manual_seed(0)
    draws = (e.rsample((n,)) if e.has_rsample else e.sample((n,))).detach().numpy()
    cdf = t.cdf(torch.tensor(np.sort(draws, axis=0))).numpy()
    ecdf = (np.arange(1, n + 1) / n)[:, None, None]
    ks = np.max(np.maximum(np.abs(ecdf - cdf), np.abs(ecdf - 1 / n - cdf)), axis=0)
    assert (ks < 1.95 / math.sqrt(n)).all(), ks


@pytest.mark.parametrize("family", ["Bernoulli", "Categorical"])
def test_discrete_draws_follow_the_probabilities_chi_square(family):
    a = arrays(4)
    (t, _), (e, _) = build(torch, family, FAMILIES[family][0](a)), build(ember, family, FAMILIES[family][0](a))
    ember.manual_seed(1)
    n = 20000
    draws = e.sample((n,)).numpy().astype(np.int64)
    probs = t.probs.numpy()
    if family == "Bernoulli":
        probs = np.stack([1 - probs, probs], -1)
    k = probs.shape[-1]
    counts = np.stack([(draws == c).sum(0) for c in range(k)], -1)
    chi2 = ((counts - n * probs) ** 2 / (n * probs)).sum(-1)
    # the 0.999 quantile of chi-square with k - 1 degrees of freedom (1: 10.83, 3: 16.27)
    assert (chi2 < {2: 10.83, 4: 16.27}[k]).all(), chi2


def test_a_reparameterised_draw_carries_gradients_to_the_parameters():
    loc = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([2.0, 0.5], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    x = ED.Normal(loc, scale).rsample((4000,))
    x.mean().backward()                       # d/dloc E[x] = 1/2 per element exactly; d/dscale = mean(eps)/2
    np.testing.assert_allclose(loc.grad.numpy(), [0.5, 0.5])
    assert abs(float(scale.grad[0])) < 0.05


PAIRS = [("Normal", "Normal"), ("Uniform", "Uniform"), ("Exponential", "Exponential"), ("Laplace", "Laplace"),
         ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"), ("LogNormal", "LogNormal"), ("Normal", "Laplace"),
         ("Gamma", "Gamma"), ("Beta", "Beta"), ("Poisson", "Poisson")]


@pytest.mark.parametrize("p_family, q_family", PAIRS)
def test_kl_divergence_matches_torch(p_family, q_family):
    a, b = arrays(5), arrays(6)
    b["low"], b["high"] = b["low"] - 1, b["high"] + 1          # q's support covers p's: a finite KL
    (tp, tp_params), (ep, ep_params) = build(torch, p_family, FAMILIES[p_family][0](a), True), \
        build(ember, p_family, FAMILIES[p_family][0](a), True)
    (tq, _), (eq, _) = build(torch, q_family, FAMILIES[q_family][0](b)), build(ember, q_family, FAMILIES[q_family][0](b))
    t_kl, e_kl = TD.kl_divergence(tp, tq), ED.kl_divergence(ep, eq)
    close(e_kl, t_kl)
    t_grads = torch.autograd.grad(t_kl.sum(), list(tp_params.values()))
    e_grads = ember.autograd.grad(e_kl.sum(), list(ep_params.values()))
    for eg, tg in zip(e_grads, t_grads):
        close(eg, tg)


def test_kl_of_uniforms_outside_the_support_is_infinite_and_unknown_pairs_raise():
    assert math.isinf(float(ED.kl_divergence(ED.Uniform(0.0, 2.0), ED.Uniform(0.5, 1.0))))
    with pytest.raises(NotImplementedError):
        ED.kl_divergence(ED.Normal(0.0, 1.0), ED.Bernoulli(0.5))


def test_independent_sums_over_reinterpreted_dimensions():
    a = arrays()
    t = TD.Independent(TD.Normal(torch.tensor(a["real"]), torch.tensor(a["pos"])), 1)
    e = ED.Independent(ED.Normal(ember.tensor(a["real"]), ember.tensor(a["pos"])), 1)
    assert tuple(e.batch_shape) == (2,) and tuple(e.event_shape) == (3,)
    close(e.log_prob(ember.tensor(a["low"])), t.log_prob(torch.tensor(a["low"])))
    close(e.entropy(), t.entropy())
    close(ED.kl_divergence(e, e), TD.kl_divergence(t, t))
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_transformed_distribution_with_affine_and_sigmoid_matches_torch():
    a = arrays()
    value = 1 / (1 + np.exp(-(a["real"] * 0.5 + 0.1)))
    dists = []
    for lib in (torch, ember):
        base = lib.distributions.Normal(lib.tensor(a["real"] * 0.2), lib.tensor(a["pos"]))
        tr = lib.distributions.transforms
        dists.append(lib.distributions.TransformedDistribution(
            base, [tr.AffineTransform(0.5, 2.0), tr.SigmoidTransform()]))
    close(dists[1].log_prob(ember.tensor(value)), dists[0].log_prob(torch.tensor(value)))
    close(dists[1].cdf(ember.tensor(value)), dists[0].cdf(torch.tensor(value)))


@pytest.mark.parametrize("make", [
    lambda D, lib: D.Normal(lib.zeros(2), -lib.ones(2)),
    lambda D, lib: D.Bernoulli(lib.tensor([1.5])),
    lambda D, lib: D.Categorical(),
    lambda D, lib: D.Categorical(lib.tensor([0.5, -0.1, 0.6])),
    lambda D, lib: D.Normal(lib.zeros(2), lib.ones(2)).log_prob(lib.zeros(3)),
    lambda D, lib: D.Bernoulli(lib.tensor([0.2])).log_prob(lib.tensor([0.5])),
    lambda D, lib: D.Exponential(lib.ones(2)).log_prob(-lib.ones(2)),
    lambda D, lib: D.Uniform(1.0, 0.0),
    lambda D, lib: D.Independent(D.Normal(lib.zeros(2), 1.0), 2),
])
def test_validation_errors_are_torchs(make):
    messages = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as info:
            make(lib.distributions, lib)
        messages.append(str(info.value).replace("torch.", "").replace("ember.", ""))
    assert messages[1] == messages[0]


def test_validation_can_be_turned_off():
    d = ED.Normal(ember.zeros(2), -ember.ones(2), validate_args=False)
    assert tuple(d.log_prob(ember.zeros(2)).shape) == (2,)


def test_dirichlet_matches_torch():
    rng = np.random.default_rng(8)
    conc, value = rng.uniform(0.5, 3.0, (2, 4)), rng.dirichlet(np.ones(4), 2)
    t = TD.Dirichlet(torch.tensor(conc, requires_grad=True))
    e = ED.Dirichlet(ember.tensor(conc, requires_grad=True))
    assert tuple(e.event_shape) == (4,) and tuple(e.batch_shape) == (2,)
    for name in ("mean", "variance", "mode"):
        close(getattr(e, name), getattr(t, name))
    close(e.log_prob(ember.tensor(value)), t.log_prob(torch.tensor(value)))
    close(e.entropy(), t.entropy())
    q_conc = rng.uniform(0.5, 3.0, (2, 4))
    close(ED.kl_divergence(e, ED.Dirichlet(ember.tensor(q_conc))), TD.kl_divergence(t, TD.Dirichlet(torch.tensor(q_conc))))
    close(ED.Dirichlet(ember.tensor([0.5, 0.3, 0.7])).mode, TD.Dirichlet(torch.tensor([0.5, 0.3, 0.7])).mode)
    ember.manual_seed(2)
    draws = e.sample((20000,)).numpy()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(draws.mean(0), t.mean.detach().numpy(), atol=0.01)


def test_the_implicit_gradient_of_gamma_draws_matches_torch():
    """d x / d a of a Gamma(a, 1) draw x with its uniform fixed: ember differentiates the incomplete gamma
    function numerically (scipy on cpu, series in ember ops elsewhere), torch approximates; they agree to 2e-4."""
    from ember.decompositions.special import standard_gamma_grad

    a = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 50.0])
    x = np.array([1e-5, 0.1, 0.7, 2.0, 12.0, 45.0])
    want = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ember._standard_gamma_grad(ember.tensor(a), ember.tensor(x)).numpy(), want, rtol=2e-4)
    np.testing.assert_allclose(standard_gamma_grad(ember.tensor(a), ember.tensor(x)).numpy(), want, rtol=2e-4)


def test_reparameterised_gamma_draws_carry_the_gradient_of_the_mean():
    """E[x] = a / rate for x ~ Gamma(a, rate): the mean of the draws' gradients is 1 / rate for a and -a / rate^2
    for rate."""
    a = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    rate = ember.tensor([2.0, 0.5], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(3)
    ED.Gamma(a, rate).rsample((40000,)).mean(0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.5, 2.0], rtol=0.03)
    np.testing.assert_allclose(rate.grad.numpy(), [-0.175, -12.0], rtol=0.03)


@pytest.mark.parametrize("rates", [[0.3, 2.5, 7.0], [10.0, 25.0, 140.0]])
def test_poisson_draws_follow_the_probabilities_chi_square(rates):
    """Multiplication below rate 10, transformed rejection above: counts binned against torch's probabilities."""
    e = ED.Poisson(ember.tensor(rates, dtype=ember.float64))
    ember.manual_seed(5)
    n = 30000
    draws = e.sample((n,)).numpy()
    assert (draws == np.floor(draws)).all() and (draws >= 0).all()
    for j, rate in enumerate(rates):
        lo, hi = int(max(0, rate - 3 * rate ** 0.5)), int(rate + 3 * rate ** 0.5) + 1
        edges = np.arange(lo, hi + 1)
        probs = np.exp(TD.Poisson(torch.tensor(rate)).log_prob(torch.tensor(edges, dtype=torch.float64)).numpy())
        counts = np.array([(draws[:, j] == k).sum() for k in edges])
        keep = n * probs > 5
        chi2 = ((counts[keep] - n * probs[keep]) ** 2 / (n * probs[keep])).sum()
        assert chi2 < 3 * keep.sum() + 30, (rate, chi2)       # far above chi-square's 0.999 quantile only if wrong


def test_poisson_refuses_negative_rates_as_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="invalid Poisson rate"):
            lib.poisson(lib.tensor([-1.0]))
