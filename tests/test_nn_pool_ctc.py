"""nn.AdaptiveMaxPool1d/2d/3d, nn.FractionalMaxPool2d/3d, nn.CTCLoss and their functionals against torch:
values, indices, gradients (float64), double backward, module reprs and arguments, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(1234)


def E(a, **kw):
    return ember.tensor(np.array(a, copy=True), **kw)


def Tt(a, **kw):
    return torch.tensor(np.array(a, copy=True), **kw)


def close(e, t, tol=1e-12):
    e = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    t = t.detach().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype, (e.shape, t.shape, e.dtype, t.dtype)
    np.testing.assert_allclose(e, t, rtol=tol, atol=tol, equal_nan=True)


def run_both(fe, ft, x, grad_seed=0):
    """Outputs and input gradients (for a random grad_output) of an ember and a torch function of x."""
    xe, xt = E(x, requires_grad=True), Tt(x, requires_grad=True)
    oe, ot = fe(xe), ft(xt)
    ve, vt = (oe[0], ot[0]) if isinstance(ot, tuple) else (oe, ot)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(vt.shape))
    (ge,) = ember.autograd.grad(ve, xe, E(g))
    (gt,) = torch.autograd.grad(vt, xt, Tt(g))
    return oe, ot, ge, gt


# --------------------------------------------------------------------------------- adaptive max pooling
@pytest.mark.parametrize("shape,out", [((2, 3, 7, 5), (3, 2)), ((3, 6, 6), (4, 4)), ((1, 2, 5, 9), (5, 9)),
                                       ((1, 2, 4, 3), (7, 2)), ((2, 1, 6, 6), 2), ((1, 2, 5, 7), (None, 3))])
def test_adaptive_max_pool2d_matches_torch(shape, out):
    x = RNG.standard_normal(shape)
    oe, ot, ge, gt = run_both(lambda t: ember.nn.functional.adaptive_max_pool2d(t, out, return_indices=True),
                              lambda t: torch.nn.functional.adaptive_max_pool2d(t, out, return_indices=True), x)
    close(oe[0], ot[0])
    close(oe[1], ot[1], 0)
    close(ge, gt)


@pytest.mark.parametrize("shape,out", [((2, 3, 5, 6, 7), (2, 4, 3)), ((2, 4, 4, 4), 2), ((1, 1, 3, 3, 5), (4, None, 2))])
def test_adaptive_max_pool3d_matches_torch(shape, out):
    x = RNG.integers(0, 4, shape).astype(np.float64)          # ties: the first maximum's index
    oe, ot, ge, gt = run_both(lambda t: ember.nn.functional.adaptive_max_pool3d(t, out, True),
                              lambda t: torch.nn.functional.adaptive_max_pool3d(t, out, True), x)
    close(oe[0], ot[0])
    close(oe[1], ot[1], 0)
    close(ge, gt)


def test_adaptive_max_pool1d_and_nan():
    x = RNG.standard_normal((2, 3, 11))
    x[0, 0, [1, 3]] = np.nan
    x[1, 2, :] = -np.inf
    oe, ot, ge, gt = run_both(lambda t: ember.nn.functional.adaptive_max_pool1d(t, 4, return_indices=True),
                              lambda t: torch.nn.functional.adaptive_max_pool1d(t, 4, return_indices=True), x)
    close(oe[0], ot[0])
    close(oe[1], ot[1], 0)
    close(ge, gt)
    close(ember.adaptive_max_pool1d(E(x[0]), [3])[1], torch.adaptive_max_pool1d(Tt(x[0]), [3])[1], 0)


def test_adaptive_max_pool2d_double_backward():
    x = RNG.standard_normal((2, 2, 5, 6))
    res = []
    for m, mk in ((ember, E), (torch, Tt)):
        xx = mk(x, requires_grad=True)
        y = m.nn.functional.adaptive_max_pool2d(xx, (3, 4))
        go = mk(np.linspace(-1, 1, 12).reshape(1, 1, 3, 4) * np.ones((2, 2, 1, 1)), requires_grad=True)
        (g,) = m.autograd.grad(y, xx, go, create_graph=True)
        (gg,) = m.autograd.grad((g * mk(x)).sum(), go)
        res.append((g, gg))
    close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_adaptive_max_pool_float32_and_lowp():
    x = RNG.standard_normal((2, 3, 9, 7)).astype(np.float32)
    for dt, tdt in ((ember.float32, torch.float32), (ember.bfloat16, torch.bfloat16), (ember.float16, torch.float16)):
        e = ember.nn.functional.adaptive_max_pool2d(E(x).to(dt), (4, 3), return_indices=True)
        t = torch.nn.functional.adaptive_max_pool2d(Tt(x).to(tdt), (4, 3), return_indices=True)
        assert e[0].dtype == dt
        close(e[0].float(), t[0].float(), 0)
        close(e[1], t[1], 0)


def test_adaptive_max_pool_modules():
    x = RNG.standard_normal((2, 3, 8, 6))
    for cls_e, cls_t, args, inp in ((ember.nn.AdaptiveMaxPool2d, torch.nn.AdaptiveMaxPool2d, ((None, 3),), x),
                                    (ember.nn.AdaptiveMaxPool1d, torch.nn.AdaptiveMaxPool1d, (4, True), x[0]),
                                    (ember.nn.AdaptiveMaxPool3d, torch.nn.AdaptiveMaxPool3d, (2,), x)):
        me, mt = cls_e(*args), cls_t(*args)
        assert repr(me) == repr(mt)
        oe, ot = me(E(inp)), mt(Tt(inp))
        if isinstance(ot, tuple):
            close(oe[0], ot[0])
            close(oe[1], ot[1], 0)
        else:
            close(oe, ot)


@pytest.mark.parametrize("call", [
    lambda m, x: m.nn.functional.adaptive_max_pool2d(x[0, 0, 0], 2),          # 1-d input
    lambda m, x: m.nn.functional.adaptive_max_pool2d(x.long(), 2),             # integer input
    lambda m, x: m.nn.functional.adaptive_max_pool2d(x[:, :, :0], 2),          # empty spatial dim
    lambda m, x: m.nn.functional.adaptive_max_pool3d(x, (2, 2, 2)),            # 4-d input is unbatched: ok
    lambda m, x: m.nn.functional.adaptive_max_pool3d(x[0], 2),                 # 3-d input
    lambda m, x: m.nn.functional.adaptive_max_pool1d(x, 2),                    # 4-d input
    lambda m, x: m.nn.functional.adaptive_max_pool2d(x[0, 0], (None, 2)),      # None needs a 3-d input
])
def test_adaptive_max_pool_errors(call):
    x = RNG.standard_normal((1, 2, 4, 4))
    try:
        expected = call(torch, Tt(x))
    except Exception as exc:        # noqa: BLE001
        builtin = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")
        with pytest.raises(builtin):
            call(ember, E(x))
    else:
        got = call(ember, E(x))
        close(got, expected)


# ------------------------------------------------------------------------------- fractional max pooling
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,k,out", [((2, 3, 9, 8), (2, 3), (4, 5)), ((3, 7, 7), 3, (3, 3)),
                                         ((1, 1, 5, 5), (2, 2), (1, 4)), ((2, 2, 6, 6), 1, 6)])
def test_fractional_max_pool2d_matches_torch(dtype, shape, k, out):
    x = RNG.standard_normal(shape).astype(dtype)
    n = 1 if len(shape) == 3 else shape[0]
    u = RNG.random((n, shape[-3], 2)).astype(dtype)
    oe, ot, ge, gt = run_both(
        lambda t: ember.nn.functional.fractional_max_pool2d(t, k, out, return_indices=True, _random_samples=E(u)),
        lambda t: torch.nn.functional.fractional_max_pool2d(t, k, out, return_indices=True, _random_samples=Tt(u)), x)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    close(oe[1], ot[1], 0)
    close(oe[0], ot[0], tol)
    close(ge, gt, tol)


@pytest.mark.parametrize("shape,k,out", [((2, 3, 9, 8, 7), (2, 3, 2), (4, 5, 3)), ((3, 7, 7, 6), (3, 3, 1), (3, 3, 5))])
def test_fractional_max_pool3d_matches_torch(shape, k, out):
    x = RNG.integers(0, 3, shape).astype(np.float64)           # ties as well
    n = 1 if len(shape) == 4 else shape[0]
    u = RNG.random((n, shape[-4], 3))
    oe, ot, ge, gt = run_both(
        lambda t: ember.nn.functional.fractional_max_pool3d(t, k, out, return_indices=True, _random_samples=E(u)),
        lambda t: torch.nn.functional.fractional_max_pool3d(t, k, out, return_indices=True, _random_samples=Tt(u)), x)
    close(oe[1], ot[1], 0)
    close(oe[0], ot[0])
    close(ge, gt)


def test_fractional_max_pool_double_backward_and_ratio():
    x = RNG.standard_normal((2, 3, 10, 9))
    u = RNG.random((2, 3, 2))
    res = []
    for m, mk in ((ember, E), (torch, Tt)):
        xx = mk(x, requires_grad=True)
        y = m.nn.functional.fractional_max_pool2d(xx, 2, output_ratio=(0.5, 0.7), _random_samples=mk(u))
        go = mk(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), requires_grad=True)
        (g,) = m.autograd.grad(y, xx, go, create_graph=True)
        (gg,) = m.autograd.grad((g * mk(x)).sum(), go)
        res.append((y, g, gg))
    assert tuple(res[0][0].shape) == (2, 3, 5, 6)
    for e, t in zip(res[0], res[1]):
        close(e, t)


def test_fractional_max_pool_lowp_windows_equal_torch():
    x = RNG.standard_normal((2, 3, 17, 13)).astype(np.float32)
    u = RNG.random((2, 3, 2)).astype(np.float32)
    for dt, tdt in ((ember.float16, torch.float16), (ember.bfloat16, torch.bfloat16)):
        t = torch.ops.aten.fractional_max_pool2d(Tt(x).to(tdt), [3, 2], [6, 7], Tt(u).to(tdt))
        xe, ue = E(Tt(x).to(tdt).float().numpy()).to(dt), E(Tt(u).to(tdt).float().numpy()).to(dt)
        e = ember.nn.functional.fractional_max_pool2d(xe, [3, 2], [6, 7], return_indices=True, _random_samples=ue)
        close(e[1], t[1], 0)


def test_fractional_max_pool_draws_samples_with_embers_generator():
    x = E(RNG.standard_normal((2, 3, 12, 12)))
    ember.manual_seed(5)
    a = ember.nn.functional.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)
    ember.manual_seed(5)
    b = ember.nn.functional.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)
    ember.manual_seed(5)
    u = ember.rand(2, 3, 2, dtype=x.dtype)
    c = ember.nn.functional.fractional_max_pool2d(x, 2, output_size=5, return_indices=True, _random_samples=u)
    assert np.array_equal(a[1].numpy(), b[1].numpy()) and np.array_equal(a[1].numpy(), c[1].numpy())


def test_fractional_max_pool_modules():
    x = RNG.standard_normal((2, 3, 9, 8, 8))
    u2, u3 = RNG.random((2, 3, 2)), RNG.random((2, 3, 3))
    for cls_e, cls_t, kw, inp, u in (
            (ember.nn.FractionalMaxPool2d, torch.nn.FractionalMaxPool2d, dict(output_size=(4, 3)), x[:, :, 0], u2),
            (ember.nn.FractionalMaxPool2d, torch.nn.FractionalMaxPool2d, dict(output_ratio=0.5, return_indices=True),
             x[:, :, 0], u2),
            (ember.nn.FractionalMaxPool3d, torch.nn.FractionalMaxPool3d, dict(output_size=3), x, u3)):
        me, mt = cls_e(2, _random_samples=E(u), **kw), cls_t(2, _random_samples=Tt(u), **kw)
        assert repr(me) == repr(mt)
        assert me.kernel_size == mt.kernel_size and me.output_size == mt.output_size
        assert me.output_ratio == mt.output_ratio
        assert list(me.state_dict()) == list(mt.state_dict())
        oe, ot = me(E(inp)), mt(Tt(inp))
        if isinstance(ot, tuple):
            close(oe[0], ot[0])
            close(oe[1], ot[1], 0)
        else:
            close(oe, ot)


@pytest.mark.parametrize("kw", [dict(), dict(output_size=2, output_ratio=0.5), dict(output_ratio=1.5),
                                dict(output_ratio=(0.5, 0.0))])
def test_fractional_max_pool_module_arguments(kw):
    with pytest.raises(ValueError) as t:
        torch.nn.FractionalMaxPool2d(2, **kw)
    with pytest.raises(ValueError) as e:
        ember.nn.FractionalMaxPool2d(2, **kw)
    assert str(e.value) == str(t.value)


@pytest.mark.parametrize("call,exc", [
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2), ValueError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)), ValueError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2, 5, _random_samples=u), RuntimeError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2, 3, _random_samples=u[:, :1]), RuntimeError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x, 2, 3, _random_samples=u.double()), RuntimeError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool2d(x.long(), 2, 3, _random_samples=u.long()),
     NotImplementedError),
    (lambda m, x, u: m.nn.functional.fractional_max_pool3d(x, 2, 3, _random_samples=u), RuntimeError),
])
def test_fractional_max_pool_errors(call, exc):
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    u = RNG.random((1, 2, 2)).astype(np.float32)
    with pytest.raises(exc):
        call(torch, Tt(x), Tt(u))
    with pytest.raises(exc):
        call(ember, E(x), E(u))


# ------------------------------------------------------------------------------------------- CTC loss
def _ctc_inputs(T=12, N=3, C=6, S=4, dtype=np.float64):
    lp = RNG.standard_normal((T, N, C))
    lp = (lp - np.log(np.exp(lp).sum(-1, keepdims=True))).astype(dtype)
    targets = RNG.integers(1, C, (N, S))
    return lp, targets


def _ctc_both(lp, targets, il, tl, raw_leaf=True, **kw):
    """Loss and gradient (w.r.t. raw logits through log_softmax, or w.r.t. log_probs as a leaf)."""
    out = []
    for m, mk in ((ember, E), (torch, Tt)):
        x = mk(lp, requires_grad=True)
        inp = x if raw_leaf else m.log_softmax(x, -1)
        lens = (mk(il), mk(tl)) if isinstance(il, np.ndarray) else (il, tl)
        loss = m.nn.functional.ctc_loss(inp, mk(targets), *lens, **kw)
        go = np.random.default_rng(3).standard_normal(tuple(loss.shape))
        (g,) = m.autograd.grad(loss, x, mk(go))
        out.append((loss, g))
    return out


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("raw_leaf", [True, False])
def test_ctc_loss_padded_matches_torch(reduction, raw_leaf):
    lp, targets = _ctc_inputs()
    (le, ge), (lt, gt) = _ctc_both(lp, targets, [12, 9, 5], [4, 2, 0], raw_leaf, reduction=reduction)
    close(le, lt)
    close(ge, gt)


def test_ctc_loss_concatenated_tensor_lengths_and_blank():
    lp, targets = _ctc_inputs(T=10, N=3, C=5, S=3)
    targets = np.where(targets == 3, 1, targets)                 # labels never the blank
    flat = np.concatenate([targets[0, :3], targets[1, :1], targets[2, :2]])
    for il in (np.array([10, 7, 4]), np.array([10, 7, 4], dtype=np.int32)):
        (le, ge), (lt, gt) = _ctc_both(lp, flat, il, np.array([3, 1, 2]), blank=3, reduction="none")
        close(le, lt)
        close(ge, gt)


def test_ctc_loss_zero_infinity_and_unbatched():
    lp, _ = _ctc_inputs(T=6, N=2, C=4)
    targets = np.array([[1, 1, 1, 1], [1, 2, 3, 1]])            # 4 repeats need 7 frames: impossible in 3
    for zero_infinity in (False, True):
        (le, ge), (lt, gt) = _ctc_both(lp, targets, [3, 6], [4, 4], zero_infinity=zero_infinity, reduction="none")
        close(le, lt)
        if zero_infinity:
            close(ge, gt)
        else:
            close(ge[:, 1], gt[:, 1])               # torch's gradient of an infinite loss is NaN; the finite one agrees
    (le, ge), (lt, gt) = _ctc_both(lp[:, 1], targets[1], [6], [4], reduction="none")
    assert le.shape == ()
    close(le, lt)
    close(ge, gt)


def test_ctc_loss_float32_and_module():
    lp, targets = _ctc_inputs(dtype=np.float32)
    me, mt = ember.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True), torch.nn.CTCLoss(0, "sum", True)
    assert repr(me) == repr(mt)
    le = me(E(lp), E(targets), (12, 10, 8), (4, 3, 2))
    lt = mt(Tt(lp), Tt(targets), (12, 10, 8), (4, 3, 2))
    assert le.dtype == ember.float32
    close(le, lt, 1e-5)


@pytest.mark.parametrize("args,kw,exc", [
    (([13, 9, 5], [4, 2, 0]), {}, RuntimeError),         # input longer than log_probs
    (([12, 9], [4, 2, 0]), {}, RuntimeError),            # lengths of another batch
    (([12, 9, 5], [5, 2, 0]), {}, RuntimeError),         # target longer than the padded targets
    (([12, 9, 5], [4, -1, 0]), {}, RuntimeError),        # negative target length
    (([12, 9, 5], [4, 2, 0]), {"blank": 6}, RuntimeError),
    (([12, 9, 5], [4, 2, 0]), {"reduction": "avg"}, ValueError),
])
def test_ctc_loss_errors(args, kw, exc):
    lp, targets = _ctc_inputs()
    for m, mk in ((torch, Tt), (ember, E)):
        with pytest.raises(exc):
            m.nn.functional.ctc_loss(mk(lp), mk(targets), *args, **kw)
        if kw.get("reduction") is None:
            with pytest.raises(exc):
                m.nn.functional.ctc_loss(mk(lp), mk(targets), mk(np.array(args[0])), mk(np.array(args[1])), **kw)
    with pytest.raises(NotImplementedError):
        ember.nn.functional.ctc_loss(E(lp).half(), E(targets), [12, 9, 5], [4, 2, 0])
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        ember.nn.functional.ctc_loss(E(lp), E(targets), E(np.array([12.0, 9.0, 5.0])), E(np.array([4, 2, 0])))
