"""ember.amp against torch.amp: GradScaler's scale sequence, skipped steps, errors, state_dict,
and autocast + GradScaler training on cpu.

Each scenario is one function run twice, once with `m = ember` and once with `m = torch`, on
the same initial values and the same injected inf/NaN gradients; the records (scale and
growth tracker after every update, step return values, parameters) must agree.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember

W0 = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
B0 = np.random.default_rng(1).standard_normal(3).astype(np.float32)
X = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
Y = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)


def _linear(m, device="cpu"):
    w = m.tensor(W0, requires_grad=True, device=device)
    b = m.tensor(B0, requires_grad=True, device=device)
    return w, b


def _loss(m, w, b):
    return ((m.tensor(X, device=w.device) @ w.t() + b - m.tensor(Y, device=w.device)) ** 2).mean()


def _poison(param, value: float) -> None:
    """Write an inf or NaN into one gradient element (what an fp16 overflow would give)."""
    with torch.no_grad() if isinstance(param, torch.Tensor) else ember.no_grad():
        param.grad[0] = value


def _run_scaler(m, inject: dict, steps: int = 9, unscale_first: bool = False, clip: float | None = None,
                device: str = "cpu"):
    w, b = _linear(m, device)
    opt = m.optim.SGD([w, b], lr=0.05, momentum=0.9)
    scaler = m.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
    record = []
    for i in range(steps):
        opt.zero_grad()
        scaler.scale(_loss(m, w, b)).backward()
        if i in inject:
            _poison(w if i % 2 else b, inject[i])
        if unscale_first:
            scaler.unscale_(opt)
            if clip is not None:
                m.nn.utils.clip_grad_norm_([w, b], clip)
        ret = scaler.step(opt, lambda: m.tensor(float(i)))   # the closure's value comes back when stepped
        scaler.update()
        record.append((None if ret is None else float(ret), scaler.get_scale(), scaler._get_growth_tracker()))
    return record, [w.detach().cpu().numpy(), b.detach().cpu().numpy()], scaler


INJECT = {1: float("inf"), 4: float("nan"), 5: float("-inf")}


@pytest.mark.parametrize("unscale_first, clip", [(False, None), (True, None), (True, 0.5)],
                         ids=["step-unscales", "unscale_-then-step", "unscale_-clip_grad_norm_"])
def test_scale_sequence_and_skipped_steps_like_torch(unscale_first, clip):
    rec_e, params_e, _ = _run_scaler(ember, INJECT, unscale_first=unscale_first, clip=clip)
    rec_t, params_t, _ = _run_scaler(torch, INJECT, unscale_first=unscale_first, clip=clip)
    assert rec_e == rec_t
    # the sequence itself: growth every 2 clean steps, backoff (and tracker reset) on each injection
    assert [r[1] for r in rec_t] == [1024.0, 512.0, 512.0, 1024.0, 512.0, 256.0, 256.0, 512.0, 512.0]
    assert [r[0] is None for r in rec_t] == [i in INJECT for i in range(9)]
    for pe, pt in zip(params_e, params_t):
        np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not ember.opencl.is_available(), reason="the opencl plugin (PoCL) is not installed")
def test_scale_sequence_on_opencl_like_cpu():
    rec_o, params_o, scaler = _run_scaler(ember, INJECT, unscale_first=True, clip=0.5, device="opencl")
    rec_c, params_c, _ = _run_scaler(ember, INJECT, unscale_first=True, clip=0.5)
    assert scaler._scale.device.type == "opencl" and rec_o == rec_c
    for po, pc in zip(params_o, params_c):
        np.testing.assert_allclose(po, pc, rtol=1e-5, atol=1e-6)


def test_only_step_reads_a_value_on_the_host(monkeypatch):
    """unscale_, update and scale never synchronise; step reads one flag (as torch's step)."""
    reads = []
    for name in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__"):
        original = getattr(ember.Tensor, name)

        def counted(self, *a, _original=original, _name=name, **k):
            reads.append(_name)
            return _original(self, *a, **k)

        monkeypatch.setattr(ember.Tensor, name, counted)
    w, b = _linear(ember)
    opt = ember.optim.SGD([w, b], lr=0.05)
    scaler = ember.amp.GradScaler("cpu", growth_interval=1)
    for _ in range(2):
        opt.zero_grad()
        scaled = scaler.scale(_loss(ember, w, b))
        scaled.backward()
        scaler.unscale_(opt)
        assert reads == []
        scaler.step(opt)
        assert reads == ["item"]
        scaler.update()
        assert reads == ["item"]
        reads.clear()


def _run_two_optimizers(m):
    """Two optimizers, inf only in the first one's gradients at step 1: only it skips; the scale backs off."""
    w, b = _linear(m)
    opt_w, opt_b = m.optim.SGD([w], lr=0.1), m.optim.Adam([b], lr=0.1)
    scaler = m.amp.GradScaler("cpu", init_scale=8.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=1)
    record = []
    for i in range(3):
        opt_w.zero_grad()
        opt_b.zero_grad()
        scaler.scale(_loss(m, w, b)).backward()
        if i == 1:
            _poison(w, float("inf"))
        found = {str(k): float(v) for k, v in scaler._check_inf_per_device(opt_w).items()} if i == 2 else None
        scaler.unscale_(opt_b)
        record.append((scaler.step(opt_w), scaler.step(opt_b), found))
        scaler.update()
        record.append(scaler.get_scale())
    return record, [w.detach().numpy(), b.detach().numpy()]


def test_per_optimizer_state_like_torch():
    rec_e, params_e = _run_two_optimizers(ember)
    rec_t, params_t = _run_two_optimizers(torch)
    assert rec_e == rec_t
    assert rec_t[1::2] == [32.0, 8.0, 32.0]
    for pe, pt in zip(params_e, params_t):
        np.testing.assert_allclose(pe, pt, rtol=1e-5, atol=1e-6)


def test_scale_of_nested_outputs_like_torch():
    for m in (ember, torch):
        scaler = m.amp.GradScaler("cpu", init_scale=4.0)
        a, b, c = m.tensor([1.0, 2.0]), m.tensor(3.0), m.tensor([[0.5]])
        out = scaler.scale([a, (b, [c])])
        assert type(out) is list and type(out[1]) is tuple and type(out[1][1]) is list
        np.testing.assert_array_equal(out[0].numpy(), [4.0, 8.0])
        assert float(out[1][0]) == 12.0 and float(out[1][1][0]) == 2.0
        lazy = scaler.scale(iter([a]))
        assert not isinstance(lazy, (list, tuple))
        np.testing.assert_array_equal(next(iter(lazy)).numpy(), [4.0, 8.0])
        assert scaler.scale(a).dtype == a.dtype and scaler._scale.dtype == m.float32 and scaler._scale.dim() == 0
        assert scaler._growth_tracker.dtype == m.int32


def _error(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are what is compared
        return type(exc).__name__, str(exc)
    return None


def _error_cases(m):
    w, b = _linear(m)
    opt = m.optim.SGD([w, b], lr=0.1)

    def fresh():
        scaler = m.amp.GradScaler("cpu")
        opt.zero_grad()
        scaler.scale(_loss(m, w, b)).backward()
        return scaler

    def unscale_twice():
        s = fresh()
        s.unscale_(opt)
        s.unscale_(opt)

    def unscale_after_step():
        s = fresh()
        s.step(opt)
        s.unscale_(opt)

    def step_twice():
        s = fresh()
        s.step(opt)
        s.step(opt)

    def closure_kwarg():
        fresh().step(opt, closure=lambda: None)

    def update_before_step():
        fresh().update()

    def fp16_grads():
        p = m.zeros(2, dtype=m.float16, requires_grad=True)
        s = m.amp.GradScaler("cpu")
        s.scale(p.float().sum()).backward()
        s.unscale_(m.optim.SGD([p], lr=0.1))

    return {
        "unscale_ twice": unscale_twice,
        "unscale_ after step": unscale_after_step,
        "step twice": step_twice,
        "step before scale": lambda: m.amp.GradScaler("cpu").step(opt),
        "unscale_ before scale": lambda: m.amp.GradScaler("cpu").unscale_(opt),
        "update before scale": lambda: m.amp.GradScaler("cpu").update(),
        "update before step": update_before_step,
        "closure keyword": closure_kwarg,
        "fp16 gradients": fp16_grads,
        "scale of a non-tensor": lambda: m.amp.GradScaler("cpu").scale([1.0]),
        "load an empty state_dict": lambda: m.amp.GradScaler("cpu").load_state_dict({}),
        "growth_factor <= 1": lambda: m.amp.GradScaler("cpu", growth_factor=1.0),
        "backoff_factor >= 1": lambda: m.amp.GradScaler("cpu", backoff_factor=1.0),
    }


def test_errors_like_torch():
    cases_e, cases_t = _error_cases(ember), _error_cases(torch)
    for name in cases_t:
        got_e, got_t = _error(cases_e[name]), _error(cases_t[name])
        assert got_t is not None, name
        assert got_e is not None and got_e[0] == got_t[0], (name, got_e, got_t)
        # the messages are torch's, with the argument named where torch's says nothing of it
        assert got_t[1].split(".")[0].replace("torch", "ember") in got_e[1], (name, got_e, got_t)


def _state_dict_round_trip(m):
    _, _, scaler = _run_scaler(m, {2: float("inf")}, steps=5)
    sd = scaler.state_dict()
    fresh = m.amp.GradScaler("cpu", init_scale=1.0, growth_interval=100)
    fresh.load_state_dict(sd)
    before_init = (fresh.get_scale(), fresh._get_growth_tracker(), fresh.get_growth_interval())
    w, b = _linear(m)
    opt = m.optim.SGD([w, b], lr=0.05)
    after = []
    for _ in range(3):
        opt.zero_grad()
        fresh.scale(_loss(m, w, b)).backward()
        fresh.step(opt)
        fresh.update()
        after.append((fresh.get_scale(), fresh._get_growth_tracker()))
    again = m.amp.GradScaler("cpu")
    again.scale(m.ones(1))          # a scaler with live tensors takes the values into them
    again.load_state_dict(fresh.state_dict())
    return sd, before_init, after, again.state_dict()


def test_state_dict_round_trip_like_torch():
    got_e, got_t = _state_dict_round_trip(ember), _state_dict_round_trip(torch)
    assert got_e == got_t
    assert set(got_t[0]) == {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}


def test_defaults_setters_and_disabled_like_torch():
    for m in (ember, torch):
        s = m.amp.GradScaler("cpu")
        assert (s.get_scale(), s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) \
            == (65536.0, 2.0, 0.5, 2000)
        s.set_growth_factor(3.0)
        s.set_backoff_factor(0.25)
        s.set_growth_interval(7)
        assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (3.0, 0.25, 7)
        assert s.is_enabled()
        s.scale(m.ones(1))
        s.update(8.0)                              # an explicit new scale
        assert s.get_scale() == 8.0
        s.update(m.tensor(0.5))
        assert s.get_scale() == 0.5

        off = m.amp.GradScaler("cpu", enabled=False)
        x = m.ones(2)
        w = m.ones(2, requires_grad=True)
        opt = m.optim.SGD([w], lr=1.0)
        assert off.scale(x) is x and off.get_scale() == 1.0 and off.state_dict() == {}
        (w * 3).sum().backward()
        off.unscale_(opt)
        assert off.step(opt) is None and off.update() is None
        np.testing.assert_array_equal(w.detach().numpy(), [-2.0, -2.0])
        if not m.cuda.is_available():
            with warnings.catch_warnings(record=True) as caught:   # cuda without a GPU: warns, then disabled
                warnings.simplefilter("always")
                cuda = m.amp.GradScaler()
            assert not cuda.is_enabled() and any("Disabling" in str(c.message) for c in caught)


def test_deprecated_aliases_like_torch():
    for m in (ember, torch):
        with pytest.warns(FutureWarning):
            s = m.cpu.amp.GradScaler(init_scale=4.0)
        assert isinstance(s, m.amp.GradScaler) and s.is_enabled() and s.get_scale() == 4.0
        with pytest.warns(FutureWarning), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert m.cuda.amp.GradScaler().is_enabled() is m.cuda.is_available()
        assert m.amp.autocast is m.autocast


def _train_mixed(m, low: str, steps: int = 4):
    gen = np.random.default_rng(5)
    x = m.tensor(gen.standard_normal((8, 6)).astype(np.float32))
    y = m.tensor(gen.integers(0, 3, 8))
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model = m.nn.Sequential(m.nn.Linear(6, 16), m.nn.ReLU(), m.nn.Linear(16, 3))
    model.load_state_dict({k: m.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    opt = m.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = m.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    losses, scales = [], []
    for _ in range(steps):
        opt.zero_grad()
        with m.amp.autocast("cpu", dtype=getattr(m, low)):
            out = model(x)
            loss = m.nn.functional.cross_entropy(out.float(), y)
        assert out.dtype == getattr(m, low)
        scaler.scale(loss).backward()
        assert all(p.grad.dtype == m.float32 for p in model.parameters())
        scaler.unscale_(opt)
        m.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.detach()))
        scales.append(scaler.get_scale())
    return losses, scales, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("low, rtol", [("float16", 2e-3), ("bfloat16", 2e-2)])
def test_autocast_gradscaler_training_like_torch(low, rtol):
    loss_e, scale_e, params_e = _train_mixed(ember, low)
    loss_t, scale_t, params_t = _train_mixed(torch, low)
    assert scale_e == scale_t == [256.0, 512.0, 512.0, 1024.0]
    np.testing.assert_allclose(loss_e, loss_t, rtol=rtol)
    for pe, pt in zip(params_e, params_t):
        np.testing.assert_allclose(pe, pt, rtol=rtol, atol=rtol)


def test_gradscaler_on_meta_steps_without_reading_values():
    w = ember.ones(3, device="meta", requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    scaler = ember.amp.GradScaler("meta")
    assert scaler.is_enabled()
    scaled = scaler.scale((w * w).sum())
    assert scaled.device.type == "meta" and scaler._scale.device.type == "meta"
    scaled.backward()
    assert scaler.step(opt) is None and "momentum_buffer" in opt.state[w]   # the step ran
    scaler.update()
    assert scaler._scale.shape == () and scaler._scale.dtype is ember.float32


def _custom_function_dtypes(m):
    class MyMM(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=m.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad.mm(b.t()), a.t().mm(grad)

    a = m.ones(2, 3, requires_grad=True)
    b = m.ones(3, 2, requires_grad=True)
    with m.amp.autocast("cpu"):
        inside = MyMM.apply(a.bfloat16(), b)
        plain = a.mm(b)
    inside.sum().backward()
    return str(inside.dtype).split(".")[-1], str(plain.dtype).split(".")[-1], str(a.grad.dtype).split(".")[-1]


def test_custom_fwd_bwd_like_torch():
    assert _custom_function_dtypes(ember) == _custom_function_dtypes(torch) == ("float32", "bfloat16", "float32")


def test_autocast_constructor_like_torch():
    for m in (ember, torch):
        with pytest.warns(UserWarning, match="dtype is not supported"):
            ac = m.amp.autocast("cpu", dtype=m.float32)
        with ac:
            assert not m.is_autocast_enabled("cpu")
        with pytest.raises(ValueError, match="device_type"):
            m.amp.autocast(m.device("cpu"))
        with pytest.raises(RuntimeError, match="nosuchdevice"):
            m.amp.autocast("nosuchdevice")
        if not m.cuda.is_available():
            with pytest.warns(UserWarning, match="Disabling autocast"):
                m.amp.autocast("cuda")
        assert m.amp.is_autocast_available("cpu")
        ac = m.amp.autocast("cpu", cache_enabled=None)
        assert ac._cache_enabled is True and ac._enabled is True and ac.device == "cpu"
