"""torch.nn.functional-area ops on the device under test (values: skipped on meta): second
derivatives of activations and losses, and the random ops bernoulli, multinomial, randperm,
dropout, native_dropout and attention dropout.

  test_nn_second_order            grad of grad (create_graph=True) vs torch
  test_nn_gradgradcheck           finite differences of the first derivatives (float64)
  test_functional_wrappers        torch.nn.functional functions that are Python compositions
                                  (softmin, logsigmoid, normalize, selu, ...): values and gradients
  test_autocast_dtypes            result dtypes under cpu autocast (linear and attention in
                                  bfloat16, losses in float32) are torch's
  test_bernoulli_statistics       values in {0, 1}, the mean of each probability
  test_multinomial_statistics     frequencies follow the weights; zero weights are never drawn;
                                  without replacement, a row's samples are distinct
  test_randperm_is_a_permutation  every value once; positions spread evenly
  test_dropout_edge_cases         p=0 and train=False are the identity, p=1 zeros, torch's values
  test_dropout_statistics         the kept share is 1 - p, kept values are scaled by 1 / (1 - p),
                                  native_dropout's mask matches its output and its gradient
  test_nn_random_determinism      manual_seed and explicit generators reproduce every draw
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF

from . import op_db
from .compare import assert_same, host
from .plugin import NUMPY_WARNINGS, require_data
from .tolerances import GRADCHECK_ATOL, GRADCHECK_EPS, GRADCHECK_RTOL, RANDOM_N, SECOND_ORDER_TOL

pytestmark = NUMPY_WARNINGS

def _nnf(m):
    return ember.nn.functional if m is ember else torch.nn.functional


# f(module, x, y): x (2, 3) and y (3,) require grad; every op's first derivative is itself differentiable
_SECOND_ORDER = {
    "erf": lambda m, x, y: m.erf(x) * y,
    "gelu": lambda m, x, y: _nnf(m).gelu(x * y),
    "gelu tanh": lambda m, x, y: _nnf(m).gelu(x * y, approximate="tanh"),
    "softplus": lambda m, x, y: _nnf(m).softplus(x * y, beta=2.0, threshold=3.0),
    "elu": lambda m, x, y: _nnf(m).elu(x - y, alpha=0.7),
    "mish": lambda m, x, y: _nnf(m).mish(x - y),
    "leaky_relu": lambda m, x, y: _nnf(m).leaky_relu(x - y, 0.1) * y,
    "cross_entropy": lambda m, x, y: _nnf(m).cross_entropy(x * y, m.tensor([0, 2], device=x.device),
                                                           label_smoothing=0.1),
    "cross_entropy (probabilities)": lambda m, x, y: _nnf(m).cross_entropy(x, _nnf(m).softmax(y, 0).expand(2, 3)),
    "mse_loss": lambda m, x, y: _nnf(m).mse_loss(x, y.expand(2, 3)),
    "binary_cross_entropy_with_logits": lambda m, x, y: _nnf(m).binary_cross_entropy_with_logits(
        x - y, m.sigmoid(y).expand(2, 3)),
    "kl_div": lambda m, x, y: _nnf(m).kl_div(_nnf(m).log_softmax(x, 1), _nnf(m).softmax(y, 0).expand(2, 3),
                                            reduction="batchmean"),
    "cosine_similarity": lambda m, x, y: _nnf(m).cosine_similarity(x, y, dim=-1),
    "scaled_dot_product_attention": lambda m, x, y: _nnf(m).scaled_dot_product_attention(
        x.unsqueeze(0), (x * y).unsqueeze(0), x.unsqueeze(0), is_causal=True),
}
# torch 2.13 cannot differentiate silu_backward: finite differences check silu's second derivative
_GRADGRAD_ONLY = {"silu": lambda m, x, y: _nnf(m).silu(x * y)}


@pytest.mark.parametrize("name", list(_SECOND_ORDER))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nn_second_order(name, dtype, ember_device):
    require_data(ember_device, "second-order gradient values")
    f = _SECOND_ORDER[name]
    rng = np.random.default_rng(abs(hash((name, dtype))) % 2 ** 32)
    xs, ys = op_db.make(rng, (2, 3), dtype), op_db.make(rng, (3,), dtype, domain="positive")
    results = {}
    for m, dev in ((ember, ember_device.name), (torch, "cpu")):
        x = op_db.to_tensor(m, xs, dev, requires_grad=True)
        y = op_db.to_tensor(m, ys, dev, requires_grad=True)
        out = f(m, x, y)
        go = op_db.to_tensor(m, op_db.make(np.random.default_rng(1), tuple(out.shape), dtype), dev)
        gx, gy = m.autograd.grad(out, (x, y), go, create_graph=True)
        s = (gx * gx).sum() + (gy * gy).sum()
        results[m.__name__] = (gx, gy) + tuple(m.autograd.grad(s, (x, y)))
    for k, (e, t) in enumerate(zip(results["ember"], results["torch"])):
        assert_same(e, t, SECOND_ORDER_TOL, f"{name}[{dtype}] {['dx', 'dy', 'd2x', 'd2y'][k]}", ember_device.type)


@pytest.mark.parametrize("name", list(_SECOND_ORDER) + list(_GRADGRAD_ONLY))
def test_nn_gradgradcheck(name, ember_device):
    require_data(ember_device, "finite differences")
    f = {**_SECOND_ORDER, **_GRADGRAD_ONLY}[name]
    dev = ember_device.name
    rng = np.random.default_rng(11)
    x = ember.tensor(op_db.make(rng, (2, 3), "float64"), requires_grad=True)
    y = ember.tensor(op_db.make(rng, (3,), "float64", domain="positive"), requires_grad=True)
    out_shape = tuple(f(ember, x.detach(), y.detach()).shape)
    go = ember.tensor(op_db.make(rng, out_shape, "float64"), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: f(ember, a.to(dev), b.to(dev)).cpu(), (x, y), (go,),
                                        eps=GRADCHECK_EPS, atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL)


_WRAPPERS = {
    "softmin": lambda F, x: F.softmin(x, dim=1),
    "logsigmoid": lambda F, x: F.logsigmoid(x * 20),
    "softsign": lambda F, x: F.softsign(x),
    "tanhshrink": lambda F, x: F.tanhshrink(x),
    "normalize": lambda F, x: F.normalize(x),
    "normalize p=1 dim=0": lambda F, x: F.normalize(x, p=1, dim=0),
    "normalize p=3": lambda F, x: F.normalize(x, p=3.0),
    "normalize p=inf": lambda F, x: F.normalize(x, p=float("inf"), dim=-1),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, alpha=0.5),
    "relu6": lambda F, x: F.relu6(x * 5),
    "relu": lambda F, x: F.relu(x),
    "sigmoid": lambda F, x: F.sigmoid(x),
    "tanh": lambda F, x: F.tanh(x),
    "softmax": lambda F, x: F.softmax(x, dim=0),
    "log_softmax": lambda F, x: F.log_softmax(x, dim=-1),
    "silu": lambda F, x: F.silu(x),
    "hardtanh": lambda F, x: F.hardtanh(x, -0.5, 0.5),
    "glu": lambda F, x: F.glu(x),
    "glu dim=0": lambda F, x: F.glu(x[:2], 0),
    "prelu": lambda F, x: F.prelu(x, x[0, :3].abs().sum(0, keepdim=True)),
    "prelu per channel": lambda F, x: F.prelu(x.reshape(2, 3, 2), x[0, :3] * 0.5),
    "threshold": lambda F, x: F.threshold(x, 0.3, -2.0),
    "softshrink": lambda F, x: F.softshrink(x, 0.4),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.4),
    "pairwise_distance": lambda F, x: F.pairwise_distance(x, x * 0.5 - 1),
    "pairwise_distance p=1 keepdim": lambda F, x: F.pairwise_distance(x, x[0], p=1.0, keepdim=True),
    "soft_margin_loss": lambda F, x: F.soft_margin_loss(x, x.detach().sign()),
    "margin_ranking_loss": lambda F, x: F.margin_ranking_loss(x[0], x[1], x[2].sign(), margin=0.2),
    "hinge_embedding_loss": lambda F, x: F.hinge_embedding_loss(x, x.detach().sign(), margin=0.5, reduction="sum"),
    "cosine_embedding_loss": lambda F, x: F.cosine_embedding_loss(x[:2], x[1:], x[0, :2].sign(), margin=0.1),
    "poisson_nll_loss": lambda F, x: F.poisson_nll_loss(x, x.abs() * 3),
    "poisson_nll_loss full, not log": lambda F, x: F.poisson_nll_loss(x.abs() + 0.5, x.abs() * 3, log_input=False,
                                                                      full=True),
    "dropout2d eval": lambda F, x: F.dropout2d(x.reshape(1, 3, 2, 2), training=False),
    "dropout1d p=0": lambda F, x: F.dropout1d(x.reshape(1, 3, 4), p=0.0),
}


@pytest.mark.parametrize("name", list(_WRAPPERS))
def test_functional_wrappers(name, ember_device):
    require_data(ember_device, "values")
    rng = np.random.default_rng(17)
    xs = op_db.make(rng, (3, 4), "float64")
    results = []
    for m, dev in ((ember, ember_device.name), (torch, "cpu")):
        x = op_db.to_tensor(m, xs, dev, requires_grad=True)
        out = _WRAPPERS[name](_nnf(m), x)
        out.backward(op_db.to_tensor(m, op_db.make(np.random.default_rng(3), tuple(out.shape), "float64"), dev))
        results.append((out, x.grad))
    for k, (e, t) in enumerate(zip(*results)):
        assert_same(e, t, None, f"F.{name} {'output' if k == 0 else 'gradient'}", ember_device.type)


_AUTOCAST = {
    "linear": lambda m, F, x, w, t: F.linear(x, w),
    "scaled_dot_product_attention": lambda m, F, x, w, t: F.scaled_dot_product_attention(x[None], w[None], w[None]),
    "cross_entropy": lambda m, F, x, w, t: F.cross_entropy(F.linear(x, w), t),
    "nll_loss": lambda m, F, x, w, t: F.nll_loss(F.log_softmax(F.linear(x, w), 1), t),
    "mse_loss": lambda m, F, x, w, t: F.mse_loss(F.linear(x, w), F.linear(x, w)),
    "binary_cross_entropy_with_logits": lambda m, F, x, w, t: F.binary_cross_entropy_with_logits(
        F.linear(x, w), m.sigmoid(F.linear(x, w))),
    "kl_div": lambda m, F, x, w, t: F.kl_div(F.linear(x, w), F.linear(x, w), reduction="sum", log_target=True),
    "gelu": lambda m, F, x, w, t: F.gelu(F.linear(x, w)),
    "softplus": lambda m, F, x, w, t: F.softplus(F.linear(x, w)),
}


@pytest.mark.parametrize("name", list(_AUTOCAST))
def test_autocast_dtypes(name, ember_device):
    if ember_device.type != "cpu":
        pytest.skip("torch's cpu autocast lists are the reference; other devices follow their own")
    rng = np.random.default_rng(2)
    xs, ws = op_db.make(rng, (3, 4), "float32"), op_db.make(rng, (3, 4), "float32")
    dtypes = []
    for m in (ember, torch):
        x, w = op_db.to_tensor(m, xs), op_db.to_tensor(m, ws)
        with m.autocast("cpu", dtype=m.bfloat16):
            out = _AUTOCAST[name](m, _nnf(m), x, w, m.tensor([0, 1, 2]))
        dtypes.append(str(out.dtype).split(".")[-1])
    assert dtypes[0] == dtypes[1], f"{name} under cpu autocast: ember {dtypes[0]}, torch {dtypes[1]}"


# a share of RANDOM_N draws is within this of its probability (5 standard errors at p = 0.5)
SHARE_TOL = 5 * 0.5 / np.sqrt(RANDOM_N)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_bernoulli_statistics(dtype, ember_device):
    require_data(ember_device, "random values")
    ember.manual_seed(21)
    dt = getattr(ember, dtype)
    probs = ember.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=dt, device=ember_device.name)
    draws = ember.bernoulli(probs.expand(RANDOM_N, 5).contiguous())
    assert draws.dtype is dt and tuple(draws.shape) == (RANDOM_N, 5)
    a = np.asarray(host(draws), dtype=np.float64)
    assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_allclose(a.mean(0), [0.0, 0.1, 0.5, 0.9, 1.0], atol=SHARE_TOL)
    flat = np.asarray(host(ember.bernoulli(ember.zeros(RANDOM_N, dtype=dt, device=ember_device.name), 0.3)),
                      np.float64)
    assert abs(flat.mean() - 0.3) < SHARE_TOL
    x = ember.empty(RANDOM_N, dtype=dt, device=ember_device.name)
    assert x.bernoulli_(0.7) is x
    assert abs(np.asarray(host(x), np.float64).mean() - 0.7) < SHARE_TOL


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_statistics(replacement, ember_device):
    require_data(ember_device, "random values")
    ember.manual_seed(5)
    weights = np.array([1.0, 0.0, 3.0, 4.0, 2.0])
    rows = RANDOM_N // 10
    w = ember.tensor(np.tile(weights, (rows, 1)), device=ember_device.name)
    k = 10 if replacement else 3
    draws = np.asarray(host(ember.multinomial(w, k, replacement)))
    assert draws.shape == (rows, k) and draws.dtype == np.int64
    assert not (draws == 1).any(), "a zero-weight category was drawn"
    if not replacement:
        assert all(len(set(r)) == k for r in draws), "samples without replacement repeat within a row"
    first = draws[:, 0] if not replacement else draws.reshape(-1)
    freq = np.bincount(first, minlength=5) / first.size
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=5 * 0.5 / np.sqrt(first.size))
    one_d = host(ember.multinomial(ember.tensor([0.0, 0.0, 5.0], device=ember_device.name), 4, True))
    np.testing.assert_array_equal(one_d, [2, 2, 2, 2])


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_randperm_is_a_permutation(dtype, ember_device):
    require_data(ember_device, "random values")
    ember.manual_seed(9)
    n = 300
    p = ember.randperm(n, dtype=getattr(ember, dtype), device=ember_device.name)
    assert p.dtype is getattr(ember, dtype) and tuple(p.shape) == (n,)
    np.testing.assert_array_equal(np.sort(host(p)).astype(np.int64), np.arange(n))
    positions = np.array([np.asarray(host(ember.randperm(6, device=ember_device.name))).argsort()[0]
                          for _ in range(600)])
    counts = np.bincount(positions, minlength=6)
    assert counts.min() > 600 / 6 * 0.6, counts          # where 0 lands is roughly uniform


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_edge_cases(dtype, ember_device):
    require_data(ember_device, "random values")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(dtype)
    e = ember.tensor(x, device=ember_device.name)
    t = torch.from_numpy(x)
    for p, train in ((0.0, True), (0.5, False), (1.0, True), (1.0, False)):
        np.testing.assert_array_equal(host(ember.dropout(e, p, train)), torch.dropout(t, p, train).numpy())
        out, mask = ember.native_dropout(e, p, train)
        t_out, t_mask = torch.native_dropout(t, p, train)
        np.testing.assert_array_equal(host(out), t_out.numpy())
        np.testing.assert_array_equal(host(mask), t_mask.numpy())
    np.testing.assert_array_equal(host(EF.dropout(e, 0.5, training=False)), x)
    y = ember.tensor(x, device=ember_device.name)
    assert EF.dropout(y, 1.0, inplace=True) is y and not host(y).any()


def test_feature_dropout(ember_device):
    """dropout1d/2d/3d zero whole channels and scale the rest by 1 / (1 - p)."""
    require_data(ember_device, "random values")
    ember.manual_seed(4)
    for fn_name, shape in (("dropout1d", (40, 50, 3)), ("dropout2d", (40, 50, 2, 2)), ("dropout3d", (50, 40, 1, 2, 2)),
                           ("dropout2d", (50, 2, 2))):
        x = ember.ones(*shape, device=ember_device.name)
        a = host(getattr(EF, fn_name)(x, 0.25)).reshape(shape[:2] + (-1,) if len(shape) > 3 or fn_name == "dropout1d"
                                                           else shape[:1] + (-1,))
        per_channel = a.reshape(a.shape[0] * (a.shape[1] if a.ndim == 3 else 1), -1)
        assert all(len(set(row)) == 1 for row in per_channel), f"{fn_name}: a channel is partly dropped"
        values = set(np.unique(per_channel))
        assert values <= {0.0, np.float32(1 / 0.75)}, values
        assert abs((per_channel[:, 0] != 0).mean() - 0.75) < 0.1


def test_dropout_statistics(ember_device):
    require_data(ember_device, "random values")
    ember.manual_seed(3)
    p = 0.3
    x = ember.ones(RANDOM_N, dtype=ember.float64, device=ember_device.name, requires_grad=True)
    out = ember.dropout(x, p, True)
    a = host(out)
    kept = a != 0
    assert abs(kept.mean() - (1 - p)) < SHARE_TOL
    np.testing.assert_allclose(a[kept], 1 / (1 - p))
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), np.where(kept, 1 / (1 - p), 0.0))
    y, mask = ember.native_dropout(ember.full((RANDOM_N,), 2.0, device=ember_device.name), p, True)
    m = host(mask)
    assert m.dtype == np.bool_ and abs(m.mean() - (1 - p)) < SHARE_TOL
    np.testing.assert_allclose(host(y), np.where(m, 2.0 / (1 - p), 0.0), rtol=1e-6)
    q = ember.randn(2, 3, 4, device=ember_device.name)
    attn = EF.scaled_dot_product_attention(q, q, ember.ones(2, 3, 4, device=ember_device.name), dropout_p=0.5)
    assert tuple(attn.shape) == (2, 3, 4) and np.isfinite(host(attn)).all()


_DRAWS = {
    "bernoulli": lambda dev, gen: ember.bernoulli(ember.full((64,), 0.5, device=dev), generator=gen),
    "bernoulli.p": lambda dev, gen: ember.bernoulli(ember.zeros(64, device=dev), 0.5, generator=gen),
    "multinomial": lambda dev, gen: ember.multinomial(ember.ones(4, 16, device=dev), 8, generator=gen),
    "multinomial_replacement": lambda dev, gen: ember.multinomial(ember.ones(16, device=dev), 64, True,
                                                                  generator=gen),
    "randperm": lambda dev, gen: ember.randperm(64, generator=gen, device=dev),
    "dropout": lambda dev, gen: ember.dropout(ember.ones(64, device=dev), 0.5, True),
}


@pytest.mark.parametrize("name", list(_DRAWS))
def test_nn_random_determinism(name, ember_device):
    require_data(ember_device, "random values")
    dev = ember_device.name
    draw = _DRAWS[name]
    ember.manual_seed(7)
    a = host(draw(dev, None)).copy()
    b = host(draw(dev, None)).copy()
    ember.manual_seed(7)
    np.testing.assert_array_equal(a, host(draw(dev, None)))
    assert not np.array_equal(a, b), "consecutive draws must differ"
    if name != "dropout":          # dropout takes no generator (as in PyTorch)
        g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
        np.testing.assert_array_equal(host(draw(dev, g1)), host(draw(dev, g2)))


@pytest.mark.parametrize("name", list(_DRAWS))
def test_nn_random_matches_cpu(name, ember_device):
    """One seed gives the cpu's numbers on every device (primdev: the decompositions give what
    the cpu's native kernels give)."""
    require_data(ember_device, "random values")
    if ember_device.type == "cpu":
        pytest.skip("cpu is the reference this test compares other devices with")
    ember.manual_seed(13)
    on_device = host(_DRAWS[name](ember_device.name, None))
    ember.manual_seed(13)
    np.testing.assert_array_equal(on_device, host(_DRAWS[name]("cpu", None)),
                                  err_msg=f"{name}: {ember_device.name} draws differ from cpu's")
