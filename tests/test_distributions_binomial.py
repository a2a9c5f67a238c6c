"""ember.distributions.Binomial, Multinomial and NegativeBinomial and the `binomial` op against torch: from the
same float64 parameters (probs or logits, batch shapes, broadcast counts), log_prob, entropy, moments and
log_prob's gradients to 1e-6; shapes, expand and enumerate_support; torch's validation errors; the KL pairs
torch registers for them; and chi-square tests of the draws (ember's generator, not torch's numbers) against
torch's probabilities at fixed seeds, in both sampling regimes of the op, at the edges of p and for count 0."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD
from scipy import stats

import ember
import ember.distributions as ED
from distribution_support import TIGHT, close, validation_on  # noqa: F401  (validation_on: a fixture)

pytestmark = pytest.mark.usefixtures("validation_on")


_RNG = np.random.default_rng(0)
_P = _RNG.uniform(0.05, 0.95, (2, 3))
_L = _RNG.normal(0, 1.5, (2, 3))
_SIMPLEX = _RNG.dirichlet(np.ones(4), size=(2, 3))

# case: (family, parameters (numpy arrays / numbers), values for log_prob)
CASES = {
    "binomial-probs": ("Binomial", dict(total_count=np.full((2, 3), 7.0), probs=_P),
                       np.array([[0.0, 3.0, 7.0], [1.0, 5.0, 2.0]])),
    "binomial-logits": ("Binomial", dict(total_count=np.full((2, 3), 12.0), logits=_L),
                        np.array([[0.0, 6.0, 12.0], [11.0, 4.0, 9.0]])),
    "binomial-count-broadcast": ("Binomial", dict(total_count=np.array([[4.0], [9.0]]), probs=_P[0]),
                                 np.array([[0.0, 2.0, 4.0], [9.0, 3.0, 1.0]])),
    "binomial-int-count": ("Binomial", dict(total_count=10, probs=_P), np.full((2, 3), 4.0)),
    "binomial-edge-probs": ("Binomial", dict(total_count=np.full(4, 6.0), probs=np.array([0.0, 1.0, 0.5, 1e-6])),
                            np.array([0.0, 6.0, 3.0, 0.0])),
    "negbin-probs": ("NegativeBinomial", dict(total_count=np.array([[0.7], [5.0]]), probs=_P),
                     np.array([[0.0, 3.0, 9.0], [1.0, 12.0, 2.0]])),
    "negbin-logits": ("NegativeBinomial", dict(total_count=np.full((2, 3), 2.5), logits=_L),
                      np.array([[0.0, 6.0, 1.0], [11.0, 4.0, 3.0]])),
    "negbin-zero-count": ("NegativeBinomial", dict(total_count=np.array([0.0, 0.0, 3.0]), probs=_P[0]),
                          np.array([0.0, 2.0, 0.0])),
    "multinomial-probs": ("Multinomial", dict(total_count=6, probs=_SIMPLEX * 3.0),
                          np.array([[[1.0, 2.0, 3.0, 0.0], [6.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 4.0]],
                                    [[2.0, 2.0, 1.0, 1.0], [0.0, 0.0, 0.0, 6.0], [3.0, 3.0, 0.0, 0.0]]])),
    "multinomial-logits": ("Multinomial", dict(total_count=3, logits=np.log(_SIMPLEX[0]) + 0.5),
                           np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 3.0, 0.0], [2.0, 0.0, 0.0, 1.0]])),
    "multinomial-zero-prob": ("Multinomial", dict(total_count=4, probs=np.array([0.5, 0.0, 0.25, 0.25])),
                              np.array([[2.0, 0.0, 1.0, 1.0], [0.0, 0.0, 4.0, 0.0]])),
}


def build(lib, family: str, params: dict, grad: bool = False):
    tensors = {k: lib.tensor(v, requires_grad=grad and k != "total_count") if isinstance(v, np.ndarray) else v
               for k, v in params.items()}
    return getattr(lib.distributions, family)(**tensors), tensors


@pytest.mark.parametrize("case", CASES)
def test_log_prob_entropy_moments_and_gradients_match_torch(case):
    family, params, values = CASES[case]
    checked = []
    for name in ("log_prob", "entropy", "mean", "mode", "variance", "stddev"):
        (t, t_params), (e, e_params) = build(torch, family, params, True), build(ember, family, params, True)
        assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
        try:
            t_out = t.log_prob(torch.tensor(values)) if name == "log_prob" else \
                (t.entropy() if name == "entropy" else getattr(t, name))
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                e.entropy() if name == "entropy" else getattr(e, name)
            continue
        e_out = e.log_prob(ember.tensor(values)) if name == "log_prob" else \
            (e.entropy() if name == "entropy" else getattr(e, name))
        assert e_out.dtype == ember.float64 and tuple(e_out.shape) == tuple(t_out.shape)
        close(e_out, t_out, equal_nan=True, **TIGHT)
        checked.append(name)
        grads = [k for k, v in t_params.items() if isinstance(v, torch.Tensor) and v.requires_grad]
        if name in ("log_prob", "entropy") and t_out.requires_grad and grads:
            w = np.random.default_rng(len(checked)).standard_normal(tuple(t_out.shape))
            t_g = torch.autograd.grad((t_out * torch.tensor(w)).sum(), [t_params[k] for k in grads])
            e_g = ember.autograd.grad((e_out * ember.tensor(w)).sum(), [e_params[k] for k in grads])
            for eg, tg in zip(e_g, t_g):
                close(eg, tg)
    assert {"log_prob", "mean", "variance"} <= set(checked)
    if family != "NegativeBinomial" and np.unique(params["total_count"]).size == 1:   # one count: an entropy
        assert "entropy" in checked


@pytest.mark.parametrize("count", [0, 1, 5, 40])
def test_binomial_exact_entropy_over_a_grid_of_probs(count):
    probs = np.linspace(0.0, 1.0, 11)
    t, e = TD.Binomial(count, torch.tensor(probs)), ED.Binomial(count, ember.tensor(probs))
    close(e.entropy(), t.entropy())
    t, e = TD.Binomial(count, logits=torch.tensor(probs * 8 - 4)), ED.Binomial(count, logits=ember.tensor(probs * 8 - 4))
    close(e.entropy(), t.entropy())


@pytest.mark.parametrize("count, k", [(1, 2), (5, 3), (12, 4)])
def test_multinomial_entropy_as_torch_computes_it(count, k):
    probs = np.random.default_rng(count).dirichlet(np.ones(k), size=(3,))
    close(ED.Multinomial(count, ember.tensor(probs)).entropy(), TD.Multinomial(count, torch.tensor(probs)).entropy())


def test_inhomogeneous_counts_have_no_entropy_or_support_as_in_torch():
    counts, probs = np.array([3.0, 4.0]), np.array([0.2, 0.6])
    for lib in (torch, ember):
        d = lib.distributions.Binomial(lib.tensor(counts), lib.tensor(probs))
        for method in (d.entropy, d.enumerate_support):
            with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
                method()


@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_and_support_match_torch(expand):
    probs = np.array([[0.1, 0.5, 0.9]])
    t, e = TD.Binomial(3, torch.tensor(probs)), ED.Binomial(3, ember.tensor(probs))
    ts, es = t.enumerate_support(expand), e.enumerate_support(expand)
    assert es.dtype == ember.float64
    np.testing.assert_array_equal(es.numpy(), ts.numpy())
    assert e.has_enumerate_support and not ED.Multinomial.has_enumerate_support
    values = np.array([-1.0, 0.0, 1.5, 3.0, 4.0])[:, None]
    np.testing.assert_array_equal(e.support.check(ember.tensor(values)).numpy(),
                                  t.support.check(torch.tensor(values)).numpy())
    assert e.support.is_discrete and ED.NegativeBinomial(2.0, ember.tensor(0.3)).support.is_discrete
    m_values = np.array([[1.0, 2.0], [2.0, 2.0], [-1.0, 3.0], [0.5, 0.5]])
    tm, em = TD.Multinomial(3, torch.tensor([0.4, 0.6])), ED.Multinomial(3, ember.tensor([0.4, 0.6]))
    np.testing.assert_array_equal(em.support.check(ember.tensor(m_values)).numpy(),
                                  tm.support.check(torch.tensor(m_values)).numpy())
    assert em.support.event_dim == 1 and repr(em.support) == repr(tm.support)


@pytest.mark.parametrize("case", ["binomial-probs", "binomial-count-broadcast", "negbin-logits", "multinomial-probs"])
def test_shapes_of_samples_and_expand(case):
    family, params, values = CASES[case]
    (t, _), (e, _) = build(torch, family, params), build(ember, family, params)
    for shape in ((), (5,), (4, 1)):
        es, ts = e.sample(shape), t.sample(shape)
        assert tuple(es.shape) == tuple(ts.shape) and es.dtype == ember.float64
    new_batch = (4,) + tuple(t.batch_shape)
    et, tt = e.expand(new_batch), t.expand(new_batch)
    assert type(et) is type(e) and tuple(et.batch_shape) == tuple(tt.batch_shape)
    assert tuple(et.event_shape) == tuple(tt.event_shape) and tuple(et.sample((2,)).shape) == tuple(tt.sample((2,)).shape)
    close(et.log_prob(ember.tensor(values)), tt.log_prob(torch.tensor(values)))
    close(et.mean, tt.mean)
    if family == "Multinomial":          # (torch's expanded Multinomial has no entropy; ember's has)
        close(et.entropy(), t.entropy().expand(new_batch))


def test_kl_pairs_match_torch():
    probs_p, probs_q = _P, _P[::-1].copy()
    count = np.array([[5.0, 5.0, 7.0], [5.0, 2.0, 3.0]])
    for q_count in (count, np.minimum(count, 4.0)):       # equal counts, and q with fewer trials (infinite)
        t = TD.kl_divergence(TD.Binomial(torch.tensor(count), torch.tensor(probs_p)),
                             TD.Binomial(torch.tensor(q_count), logits=torch.tensor(_L)))
        e = ED.kl_divergence(ED.Binomial(ember.tensor(count), ember.tensor(probs_p)),
                             ED.Binomial(ember.tensor(q_count), logits=ember.tensor(_L)))
        close(e, t)
    close(ED.kl_divergence(ED.Binomial(6, ember.tensor(probs_p)), ED.Binomial(6, ember.tensor(probs_q))),
          TD.kl_divergence(TD.Binomial(6, torch.tensor(probs_p)), TD.Binomial(6, torch.tensor(probs_q))))
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
            lib.distributions.kl_divergence(lib.distributions.Binomial(3, lib.tensor(probs_p)),
                                            lib.distributions.Binomial(4, lib.tensor(probs_q)))
    rate = np.array([0.5, 2.0])
    for q in ("Binomial", "Bernoulli"):
        q_args = (5, torch.tensor([0.3, 0.6])) if q == "Binomial" else (torch.tensor([0.3, 0.6]),)
        t = TD.kl_divergence(TD.Poisson(torch.tensor(rate)), getattr(TD, q)(*q_args))
        e_args = tuple(ember.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in q_args)
        e = ED.kl_divergence(ED.Poisson(ember.tensor(rate)), getattr(ED, q)(*e_args))
        close(e, t)
    for lib in (torch, ember):    # no closed form for the other families, in either library
        with pytest.raises(NotImplementedError):
            lib.distributions.kl_divergence(lib.distributions.NegativeBinomial(2.0, lib.tensor(0.3)),
                                            lib.distributions.NegativeBinomial(2.0, lib.tensor(0.4)))


BAD_ARGS = [
    ("Binomial", dict(total_count=-1.0, probs=0.5), ValueError, "total_count"),
    ("Binomial", dict(total_count=2.5, probs=0.5), ValueError, "total_count"),
    ("Binomial", dict(total_count=3, probs=1.5), ValueError, "probs"),
    ("Binomial", dict(total_count=3, logits=float("nan")), ValueError, "logits"),
    ("Binomial", dict(total_count=3), ValueError, "Either `probs` or `logits`"),
    ("Binomial", dict(total_count=3, probs=0.5, logits=0.0), ValueError, "Either `probs` or `logits`"),
    ("NegativeBinomial", dict(total_count=-0.5, probs=0.5), ValueError, "total_count"),
    ("NegativeBinomial", dict(total_count=2.0, probs=1.0), ValueError, "probs"),
    ("NegativeBinomial", dict(total_count=2.0), ValueError, "Either `probs` or `logits`"),
    ("Multinomial", dict(total_count=3.0, probs=[0.5, 0.5]), NotImplementedError, "inhomogeneous total_count"),
    ("Multinomial", dict(total_count=3, probs=[-0.5, 1.5]), ValueError, "probs"),
    ("Multinomial", dict(total_count=3, logits=[0.0, float("nan")]), ValueError, "logits"),
    ("Multinomial", dict(total_count=-2, probs=[0.5, 0.5]), ValueError, "total_count"),
]


@pytest.mark.parametrize("family, kwargs, exc, match", BAD_ARGS,
                         ids=[f"{f}-{'-'.join(map(str, k.values()))}" for f, k, _, _ in BAD_ARGS])
def test_invalid_parameters_raise_torchs_errors(family, kwargs, exc, match):
    for lib in (torch, ember):
        args = {k: lib.tensor(v, dtype=lib.float64) if isinstance(v, (float, list)) and k != "total_count" else v
                for k, v in kwargs.items()}
        if isinstance(args.get("total_count"), float) and family != "Multinomial":
            args["total_count"] = lib.tensor(args["total_count"], dtype=lib.float64)
        with pytest.raises(exc, match=match):
            getattr(lib.distributions, family)(**args)
    if exc is ValueError and "Either" not in match:     # validate_args=False: torch's outcome (Multinomial's
        outcomes = []                                      # inner Categorical and Binomial still validate)
        for lib in (torch, ember):
            args = {k: lib.tensor(v, dtype=lib.float64) if isinstance(v, (float, list)) and k != "total_count" else v
                    for k, v in kwargs.items()}
            if isinstance(args.get("total_count"), float):
                args["total_count"] = lib.tensor(args["total_count"], dtype=lib.float64)
            try:
                getattr(lib.distributions, family)(**args, validate_args=False)
                outcomes.append(None)
            except ValueError as e:
                outcomes.append(str(e).split(" (")[0])
        assert outcomes[0] == outcomes[1] and (outcomes[0] is None) == (family != "Multinomial"), outcomes


@pytest.mark.parametrize("family, args, value", [
    ("Binomial", (3, [0.5, 0.5]), [4.0, 1.0]), ("Binomial", (3, [0.5, 0.5]), [1.5, 1.0]),
    ("Binomial", (3, [0.5, 0.5]), [-1.0, 1.0]), ("NegativeBinomial", (2.0, [0.5, 0.5]), [0.5, 1.0]),
    ("NegativeBinomial", (2.0, [0.5, 0.5]), [-1.0, 1.0]), ("Multinomial", (3, [0.5, 0.5]), [3.0, 1.0]),
    ("Multinomial", (3, [0.5, 0.5]), [-1.0, 2.0])])
def test_values_outside_the_support_raise_torchs_error(family, args, value):
    for lib in (torch, ember):
        d = getattr(lib.distributions, family)(args[0], lib.tensor(args[1], dtype=lib.float64))
        with pytest.raises(ValueError, match="within the support"):
            d.log_prob(lib.tensor(value, dtype=lib.float64))


# ------------------------------------------------------------------------------------------ draws
def chi_square_ok(draws: np.ndarray, log_pmf, support: np.ndarray) -> tuple[float, float]:
    """The chi-square statistic of `draws` binned on `support` (cells expecting under 5 pooled into one) and
    its 0.9999 quantile: a fixed-seed test that fails only for a wrong distribution."""
    n = draws.size
    expected = n * np.exp(log_pmf(support))
    observed = np.array([(draws == k).sum() for k in support], dtype=np.float64)
    keep = expected >= 5
    rest_obs, rest_exp = n - observed[keep].sum(), n - expected[keep].sum()
    obs = np.append(observed[keep], rest_obs)
    exp = np.append(expected[keep], rest_exp)
    if rest_exp < 5:                         # too little mass off the kept cells: fold it into the largest cell
        j = int(np.argmax(exp[:-1]))
        obs[j] += obs[-1]
        exp[j] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    stat = float(((obs - exp) ** 2 / exp).sum())
    return stat, float(stats.chi2.ppf(0.9999, max(len(obs) - 1, 1)))


# (count, prob): the waiting-time regime (count * min(p, 1 - p) < 10), BTRS above it, the flipped side (p > 1/2),
# p near 0 and 1
BINOMIAL_GRID = [(5.0, 0.3), (20.0, 0.05), (30.0, 0.8), (200.0, 1e-3), (100.0, 0.9999), (1.0, 0.5),
                 (100.0, 0.3), (1000.0, 0.5), (50.0, 0.8), (10000.0, 0.01), (60.0, 0.93), (25.0, 0.6)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_binomial_op_draws_follow_the_pmf_chi_square(dtype):
    counts = np.array([c for c, _ in BINOMIAL_GRID])
    probs = np.array([p for _, p in BINOMIAL_GRID])
    n = 20000
    ember.manual_seed(11)
    dt = getattr(ember, dtype)
    draws = ember.binomial(ember.tensor(np.broadcast_to(counts, (n, len(counts))).copy(), dtype=dt),
                           ember.tensor(probs, dtype=dt))
    assert draws.dtype == dt and tuple(draws.shape) == (n, len(counts))
    a = draws.numpy().astype(np.float64)
    assert (a == np.floor(a)).all() and (a >= 0).all() and (a <= counts).all()
    for j, (count, prob) in enumerate(BINOMIAL_GRID):
        t = TD.Binomial(count, torch.tensor(prob, dtype=torch.float64))
        support = np.arange(count + 1)
        stat, limit = chi_square_ok(a[:, j], lambda k: t.log_prob(torch.tensor(k)).numpy(), support)
        assert stat < limit, (count, prob, stat, limit)
        assert abs(a[:, j].mean() - count * prob) < 5 * np.sqrt(count * prob * (1 - prob) / n) + 1e-12


def test_binomial_op_edges_and_broadcasting_match_torch():
    counts = [0.0, -3.0, 7.0, 7.0, 7.0, 4.0, 0.0, 12.0]
    probs = [0.4, 0.5, 0.0, 1.0, 1.7, -0.2, float("nan"), float("nan")]
    e = ember.binomial(ember.tensor(counts), ember.tensor(probs))
    t = torch.binomial(torch.tensor(counts), torch.tensor(probs))
    np.testing.assert_array_equal(e.numpy(), t.numpy())        # exact: these draws take no random numbers
    assert np.isnan(ember.binomial(ember.tensor([float("inf")]), ember.tensor([0.5])).numpy()).all()
    e = ember.binomial(ember.full((2, 3), 5.0), ember.tensor([0.0, 1.0, 0.5]))
    assert tuple(e.shape) == (2, 3) and (e[:, 0] == 0).all() and (e[:, 1] == 5).all()
    assert tuple(ember.binomial(ember.ones(0, 3), ember.full((3,), 0.5)).shape) == (0, 3)
    assert tuple(ember.binomial(ember.tensor(4.0), ember.tensor(0.5)).shape) == ()
    assert tuple(ember.binomial(ember.ones(2, 3, device="meta"), ember.full((3,), 0.5, device="meta")).shape) == (2, 3)
    big = ember.tensor([40.0, 3.0], requires_grad=True)
    assert not ember.binomial(big, ember.tensor([0.5, 0.5])).requires_grad


def test_binomial_op_is_reproducible_under_a_seed_and_a_generator():
    counts, probs = ember.tensor([3.0, 50.0, 500.0]), ember.tensor([0.2, 0.5, 0.7])
    g1, g2 = ember.Generator(), ember.Generator()
    g1.manual_seed(4)
    g2.manual_seed(4)
    a = ember.binomial(counts.expand(200, 3), probs, generator=g1)
    np.testing.assert_array_equal(a.numpy(), ember.binomial(counts.expand(200, 3), probs, g2).numpy())
    assert not np.array_equal(a.numpy(), ember.binomial(counts.expand(200, 3), probs, generator=g1).numpy())


@pytest.mark.parametrize("count, prob, exc, match", [
    (np.array([5, 3]), np.array([0.5, 0.5]), ValueError, "floating-point dtypes for count"),
    (np.array([5.0, 3.0]), np.array([1, 0]), ValueError, "floating-point dtypes for prob"),
    (np.array([5.0, 3.0], np.float32), np.array([0.5, 0.5]), RuntimeError, "Found dtype Double but expected Float"),
    (np.array([5.0], np.float16), np.array([0.5], np.float16), NotImplementedError, "binomial_cpu"),
    (np.array([5.0, 3.0]), np.array([0.5, 0.5, 0.5]), RuntimeError, "must match the size"),
    (5.0, np.array([0.5]), TypeError, "count"),
])
def test_binomial_op_errors_as_torchs(count, prob, exc, match):
    for lib in (torch, ember):
        args = [lib.tensor(v) if isinstance(v, np.ndarray) else v for v in (count, prob)]
        with pytest.raises(exc, match=match):
            lib.binomial(*args)


def _sample_chi_square(t, e, shape_n: int, support) -> None:
    """Per batch element of `e`'s draws, the chi-square test against `t`'s probabilities over `support`."""
    t = type(t)(**{k: getattr(t, k) for k in ("total_count", "probs")}, validate_args=False)
    ember.manual_seed(3)
    draws = e.sample((shape_n,)).numpy()
    for idx in np.ndindex(*tuple(t.batch_shape)):
        col = draws[(slice(None),) + idx]
        stat, limit = chi_square_ok(col, lambda k: t.log_prob(torch.tensor(k).reshape((-1,) + (1,) * len(idx))
                                                                .expand((-1,) + tuple(t.batch_shape)))
                                    .numpy()[(slice(None),) + idx], support)
        assert stat < limit, (idx, stat, limit)


def test_binomial_distribution_draws_chi_square():
    counts, probs = np.array([[0.0, 8.0], [40.0, 40.0]]), np.array([[0.5, 0.35], [0.02, 0.75]])
    t, e = TD.Binomial(torch.tensor(counts), torch.tensor(probs)), ED.Binomial(ember.tensor(counts), ember.tensor(probs))
    ember.manual_seed(2)
    draws = e.sample((4,))
    assert (draws[:, 0, 0] == 0).all()                           # count 0: always 0
    _sample_chi_square(t, e, 20000, np.arange(41.0))


def test_negative_binomial_draws_chi_square():
    count, probs = np.array([0.6, 3.5, 20.0]), np.array([0.7, 0.4, 0.2])
    t = TD.NegativeBinomial(torch.tensor(count), torch.tensor(probs))
    e = ED.NegativeBinomial(ember.tensor(count), ember.tensor(probs))
    _sample_chi_square(t, e, 20000, np.arange(200.0))
    zero = ED.NegativeBinomial(ember.tensor([0.0]), ember.tensor([0.5])).sample((50,))
    assert (zero == 0).all()


def test_multinomial_draws_chi_square_over_outcomes():
    probs = np.array([0.5, 0.3, 0.2])
    t, e = TD.Multinomial(4, torch.tensor(probs)), ED.Multinomial(4, ember.tensor(probs))
    ember.manual_seed(6)
    n = 20000
    draws = e.sample((n,)).numpy()
    assert draws.shape == (n, 3) and (draws.sum(-1) == 4).all() and draws.dtype == np.float64
    outcomes = np.array([(a, b, 4 - a - b) for a in range(5) for b in range(5 - a)], dtype=np.float64)
    expected = n * np.exp(t.log_prob(torch.tensor(outcomes)).numpy())
    observed = np.array([(draws == o).all(-1).sum() for o in outcomes])
    stat = ((observed - expected) ** 2 / expected).sum()
    assert stat < stats.chi2.ppf(0.9999, len(outcomes) - 1), stat
    batched = ED.Multinomial(5, ember.tensor(_SIMPLEX)).sample((7,))
    assert tuple(batched.shape) == (7, 2, 3, 4) and (batched.sum(-1) == 5).all()
