"""ember.optim against torch.optim: 50 steps of every optimizer on a small MLP written with plain
tensors, from identical initial values, for several option combinations; state_dict round
trips mid-training; signatures; param group handling."""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch

import ember

OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
              "Rprop"]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    ("SGD", dict(lr=0.05, momentum=0.9, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.02, betas=(0.5, 0.9), maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.01)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01)),
    ("Adadelta", dict(lr=1.0, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("Adamax", dict(lr=0.01, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.05, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, maximize=True, t0=5)),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.5, t0=10, weight_decay=0.01)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-4, 0.5))),
    ("Rprop", dict(lr=0.01, maximize=True)),
]


# optimizers with floating scalar state besides `step` (NAdam's mu_product, ASGD's eta and mu), which
# load_state_dict casts to the parameters' dtype, as torch's does: a loaded optimizer then continues in
# float64 where the original kept float32, so the two agree to rounding, not bit for bit (torch's too)
ROUNDED_ON_LOAD = ("NAdam", "ASGD")


def _init_values(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return {"w1": rng.normal(size=(4, 8)).astype(dtype) * 0.5, "b1": rng.normal(size=(8,)).astype(dtype) * 0.1,
            "w2": rng.normal(size=(8, 1)).astype(dtype) * 0.5, "b2": np.zeros((1,), dtype=dtype),
            "x": rng.normal(size=(16, 4)).astype(dtype), "y": rng.normal(size=(16, 1)).astype(dtype)}


def _mlp_loss(lib, p, x, y):
    if x.dtype == lib.float32:
        # float32: a separable quartic, whose gradient is elementwise and so bit-identical in
        # both frameworks; the MLP's float32 matmul rounding differs in the last bits and 50
        # normalized steps (Adam, RMSprop) amplify that past 1e-5. The float64 runs use the MLP.
        return sum(((q - 0.3) ** 2 * (1.0 + q * q)).sum() for q in p)
    h = lib.tanh(x @ p[0] + p[1])
    return ((h @ p[2] + p[3] - y) ** 2).mean()


def _setup(lib, values):
    params = [lib.tensor(values[k], requires_grad=True) for k in ("w1", "b1", "w2", "b2")]
    return params, lib.tensor(values["x"]), lib.tensor(values["y"])


def _run(lib, name, kwargs, values, steps, groups=False):
    params, x, y = _setup(lib, values)
    opt_cls = getattr(lib.optim, name)
    if groups:   # two groups, the second with its own lr
        opt = opt_cls([{"params": params[:2]}, {"params": params[2:], "lr": kwargs.get("lr", 1.0) * 0.5}], **kwargs)
    else:
        opt = opt_cls(params, **kwargs)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = _mlp_loss(lib, params, x, y)
        if kwargs.get("maximize"):     # maximizing -loss is minimizing loss: the run stays bounded
            loss = -loss
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return [p.detach().numpy().copy() for p in params], losses, opt


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_matches_torch_50_steps(name, kwargs, dtype):
    values = _init_values(dtype)
    tp, tl, _ = _run(torch, name, kwargs, values, 50)
    ep, el, _ = _run(ember, name, kwargs, values, 50)
    rtol = 1e-10 if dtype == np.float64 else 1e-5
    atol = 1e-12 if dtype == np.float64 else 1e-6
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    np.testing.assert_allclose(el, tl, rtol=rtol, atol=atol)
    assert el[-1] != el[0]      # the problem moved


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_param_groups_match_torch(name):
    kwargs = dict(CONFIGS[[n for n, _ in CONFIGS].index(name) + 1][1])
    values = _init_values()
    tp, _, topt = _run(torch, name, kwargs, values, 20, groups=True)
    ep, _, eopt = _run(ember, name, kwargs, values, 20, groups=True)
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    # the state_dict has torch's structure: same group keys and values, same state keys
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert [sorted(g) for g in esd["param_groups"]] == [sorted(g) for g in tsd["param_groups"]]
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])
    for i in tsd["state"]:
        assert sorted(esd["state"][i]) == sorted(tsd["state"][i])
        for k, v in tsd["state"][i].items():
            e = esd["state"][i][k]
            if isinstance(v, torch.Tensor):
                assert str(e.dtype).split(".")[1] == str(v.dtype).split(".")[1], k
                np.testing.assert_allclose(e.numpy(), v.numpy(), rtol=1e-10, atol=1e-12)
            else:
                assert e == v


@pytest.mark.parametrize("name,kwargs", [c for i, c in enumerate(CONFIGS) if i % 2 == 1],
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS) if i % 2 == 1])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    """Train 10 steps, save the state (through ember.save/load too), build a new optimizer
    over copies of the parameters, load it, and both continue with identical parameters."""
    values = _init_values()
    params, x, y = _setup(ember, values)
    opt = getattr(ember.optim, name)(params, **kwargs)

    def step(opt, params):
        opt.zero_grad()
        _mlp_loss(ember, params, x, y).backward()
        opt.step()

    for _ in range(10):
        step(opt, params)
    sd = copy.deepcopy(opt.state_dict())
    params2 = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    opt2 = getattr(ember.optim, name)(params2, lr=123.0)      # a different lr: the state's wins
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert opt2.param_groups[0]["params"] is not opt.param_groups[0]["params"]
    for _ in range(15):
        step(opt, params)
        step(opt2, params2)
    for a, b in zip(params, params2):
        if name in ROUNDED_ON_LOAD:     # (a float32 scalar's rounding, ~6e-8 relative, carried through the steps)
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7, atol=1e-9)
        else:
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # torch can load ember's state_dict (converted tensor by tensor) and agrees
    tsd = {"state": {i: {k: torch.tensor(v.numpy()) if isinstance(v, ember.Tensor) else v for k, v in s.items()}
                     for i, s in opt.state_dict()["state"].items()},
           "param_groups": copy.deepcopy(opt.state_dict()["param_groups"])}
    tparams = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    topt = getattr(torch.optim, name)(tparams, lr=1.0)
    topt.load_state_dict(tsd)
    tx, ty = torch.tensor(values["x"]), torch.tensor(values["y"])
    for _ in range(5):
        step(opt, params)
        topt.zero_grad()
        _mlp_loss(torch, tparams, tx, ty).backward()
        topt.step()
    for a, b in zip(params, tparams):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_signature_matches_torch(name):
    def shape(sig):
        return [(p.name, p.kind, p.default) for p in sig.parameters.values()]

    assert shape(inspect.signature(getattr(ember.optim, name))) == shape(inspect.signature(getattr(torch.optim, name)))
    ep = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)])
    tp = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
    assert ep.defaults == tp.defaults


def test_closure_and_zero_grad():
    w = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6])
    assert w.grad is not None
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None
    opt.step()             # no gradient: nothing moves
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6])


def test_param_group_errors_match_torch():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        ember.optim.SGD(a)
    with pytest.raises(ValueError, match="empty parameter list"):
        ember.optim.SGD([])
    with pytest.raises(ValueError, match="non-leaf"):
        ember.optim.SGD([a * 2])
    with pytest.raises(TypeError, match="ordered collections"):
        ember.optim.SGD({a})
    opt = ember.optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    opt.add_param_group({"params": b, "momentum": 0.5})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["momentum"] == 0.5
    assert opt.param_groups[1]["params"] == [b]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        ember.optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        ember.optim.SGD([a], lr=0.1).load_state_dict(opt.state_dict())


def test_state_follows_parameter_dtype_on_load():
    p = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.Adam([p])
    p.grad = ember.ones(3, dtype=ember.float64)
    opt.step()
    sd = opt.state_dict()
    q = ember.zeros(3, dtype=ember.float32, requires_grad=True)
    opt2 = ember.optim.Adam([q])
    opt2.load_state_dict(sd)
    st = opt2.state[q]
    assert st["exp_avg"].dtype == ember.float32 and st["step"].dtype == ember.float32
    assert float(st["step"]) == 1.0


def _primdev():
    """The primitives-only test device (tests/plugins/ember_primdev.py), registered once."""
    import sys
    from pathlib import Path

    from ember.dispatcher.plugins import REGISTRY

    if "primdev" not in REGISTRY.records:
        sys.path.insert(0, str(Path(__file__).parent / "plugins"))
        import ember_primdev

        ember.backends.register("primdev", ember_primdev)
    return "primdev"


def _steps_on(device, name, kwargs, values, steps):
    """`steps` steps of optimizer `name` on a per-element loss of the four tensors of `values`, made
    on `device` (a loss of ember ops only, so any device runs it): (params, optimizer)."""
    params = [ember.tensor(values[k], device=device, requires_grad=True) for k in ("w1", "b1", "w2", "b2")]
    opt = getattr(ember.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((q - 0.3) ** 2 * (1.0 + q * q)).sum() for q in params)
        (-loss if kwargs.get("maximize") else loss).backward()
        opt.step()
    return params, opt


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::2], ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS) if i % 2])
def test_runs_on_a_primitives_only_device_and_on_meta(name, kwargs):
    """The updates use ember ops only: on a device with just the primitive kernels they give
    the cpu's values; on meta they run and keep shapes."""
    dev = _primdev()
    values = _init_values(np.float64)
    results = []
    for device in ("cpu", dev, "meta"):
        params, opt = _steps_on(device, name, kwargs, values, 10)
        assert all(p.device.type == device for p in params)
        assert all(v.device.type in (device, "cpu") for s in opt.state.values() for v in s.values()
                   if isinstance(v, ember.Tensor))
        if device != "meta":
            results.append([p.detach().to("cpu").numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_step_hooks():
    calls = []
    w = ember.tensor([1.0], requires_grad=True)
    w.grad = ember.tensor([1.0])
    opt = ember.optim.SGD([w], lr=0.5)
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", float(w.detach()))))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", float(w.detach()))))
    opt.step()
    assert calls == [("pre", 1.0), ("post", 0.5)]
    h1.remove()
    h2.remove()
    opt.step()
    assert len(calls) == 2
    # a pre-hook may replace the arguments: here it supplies a closure
    opt.register_step_pre_hook(lambda o, a, k: ((lambda: 42,), {}))
    assert opt.step() == 42


def test_a_removed_step_hooks_handle_removes_nothing_else():
    """Hook keys are not reused (torch's handle ids): removing a handle twice leaves a later hook alone."""
    ran = {}
    for lib in (ember, torch):
        w = lib.tensor([1.0], requires_grad=True)
        w.grad = lib.tensor([1.0])
        opt = lib.optim.SGD([w], lr=0.5)
        ran[lib] = []
        stale = opt.register_step_pre_hook(lambda o, a, k: ran[lib].append("a"))
        stale.remove()
        opt.register_step_pre_hook(lambda o, a, k, lib=lib: ran[lib].append("b"))
        stale.remove()
        opt.step()
    assert ran[ember] == ran[torch] == ["b"]


def test_global_step_hooks_run_around_every_optimizers_own_as_torchs_do():
    """register_optimizer_step_pre_hook / post_hook (torch.optim.optimizer's): the global pre-hooks before an
    optimizer's own, the global post-hooks after, for every optimizer; removed by their handles."""
    import torch.optim.optimizer as torch_optimizer

    import ember.optim.optimizer as ember_optimizer

    ran = {}
    for lib, module in ((ember, ember_optimizer), (torch, torch_optimizer)):
        order = ran[lib] = []
        w = lib.tensor([1.0], requires_grad=True)
        w.grad = lib.tensor([1.0])
        opts = [lib.optim.SGD([w], lr=0.5), lib.optim.Adam([w], lr=0.5)]
        for i, opt in enumerate(opts):
            opt.register_step_pre_hook(lambda o, a, k, i=i: order.append(f"pre {i}"))
            opt.register_step_post_hook(lambda o, a, k, i=i: order.append(f"post {i}"))
        handles = [module.register_optimizer_step_pre_hook(lambda o, a, k: order.append("global pre")),
                   module.register_optimizer_step_post_hook(lambda o, a, k: order.append("global post"))]
        for opt in opts:
            opt.step()
        for h in handles:
            h.remove()
        opts[0].step()
    assert ran[ember] == ran[torch] == ["global pre", "pre 0", "post 0", "global post",
                                        "global pre", "pre 1", "post 1", "global post", "pre 0", "post 0"]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
def test_a_tensor_learning_rate_updates_as_torchs_does(name):
    """torch accepts `lr` as a 0-d Tensor (a scheduler may update it in place); the update uses its value."""
    results = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0]))
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.01))
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
