"""The fused optimizer updates (_fused_adam_, _fused_adadelta_, _fused_sgd_): the path ember.optim takes by default
on cpu gives exactly (bit for bit) the single-tensor algorithm's numbers, whose agreement with
torch tests/test_optim.py checks; torch's foreach/fused argument checks; version counters."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.decompositions.optimizers import adadelta_update, adam_update, sgd_update

from test_optim import CONFIGS, _init_values, _primdev, _run, _steps_on

FUSED_CONFIGS = [c for c in CONFIGS if c[0] in ("SGD", "Adam", "AdamW", "Adadelta")]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,kwargs", FUSED_CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FUSED_CONFIGS)])
def test_fused_path_equals_single_tensor_path(name, kwargs, dtype):
    values = _init_values(dtype)
    single, single_losses, single_opt = _run(ember, name, dict(kwargs, foreach=False), values, 8)
    for impl in (dict(), dict(foreach=True)) + ((dict(fused=True),) if name != "Adadelta" else ()):  # torch's has none
        params, losses, opt = _run(ember, name, dict(kwargs, **impl), values, 8)
        assert losses == single_losses
        for a, b in zip(params, single):
            np.testing.assert_array_equal(a, b)
        for s, t in zip(opt.state.values(), single_opt.state.values()):
            assert sorted(s) == sorted(t)
            for k in s:
                np.testing.assert_array_equal(s[k].numpy(), t[k].numpy())


def _tensors(dtype, n=3, seed=1):
    """Three tensors; from seed 3 on (exp_avg_sq, max_exp_avg_sq) non-negative, as those states are."""
    rng = np.random.default_rng(seed)
    values = [rng.normal(size=(5, 4)).astype(np.float32) for _ in range(n)]
    return [ember.tensor(np.abs(v) if seed >= 3 else v, dtype=dtype) for v in values]


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_fused_kernels_round_low_precision_as_the_ops_do(dtype):
    """float16/bfloat16: the kernel computes each step in float32 and rounds as each op would."""
    kw = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-3, amsgrad=True, maximize=True)
    fused, single = [_tensors(dtype, seed=s) for s in range(5)], [_tensors(dtype, seed=s) for s in range(5)]
    fused_steps, single_steps = [ember.tensor(2.0) for _ in range(3)], [ember.tensor(2.0) for _ in range(3)]
    with ember.no_grad():
        ember._fused_adam_(*fused, fused_steps, decoupled_weight_decay=False, **kw)
        for i in range(3):
            adam_update(*(lst[i] for lst in single), single_steps[i], kw["lr"], kw["beta1"], kw["beta2"],
                        kw["weight_decay"], kw["eps"], True, True, False)
    for f, s in zip(fused, single):
        for a, b in zip(f, s):
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
    assert [float(s) for s in fused_steps] == [3.0] * 3

    fused, single = [_tensors(dtype, seed=s) for s in range(3)], [_tensors(dtype, seed=s) for s in range(3)]
    kw = dict(weight_decay=0.05, momentum=0.9, lr=0.1, dampening=0.2, nesterov=False, maximize=False)
    with ember.no_grad():
        ember._fused_sgd_(*fused, is_first_step=False, **kw)
        for i in range(3):
            sgd_update(*(lst[i] for lst in single), *kw.values(), False)
    for f, s in zip(fused, single):
        for a, b in zip(f, s):
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())


@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_over_a_parameter_of_several_blocks_equals_single_tensor(amsgrad):
    """The cpu kernel updates a parameter bigger than `scratch_block` block by block (its temporaries
    stay one block's size): the same bits as the whole-tensor ops, an odd-sized last block and a
    non-contiguous parameter (updated whole) included."""
    rng = np.random.default_rng(0)
    shapes = [(3, 65536 + 77), (300, 500)]
    values = [[rng.normal(size=s).astype(np.float32) for s in shapes] for _ in range(5)]
    values[3] = [np.abs(v) for v in values[3]]
    values[4] = [np.abs(v) for v in values[4]]

    def tensors():
        out = [[ember.tensor(v) for v in lst] for lst in values]
        for lst in out:                                 # the second parameter as a transposed view
            lst[1] = lst[1].t()
        return out
    kw = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-3, amsgrad=amsgrad, maximize=False)
    fused, single = tensors(), tensors()
    fused_steps, single_steps = [ember.tensor(2.0) for _ in shapes], [ember.tensor(2.0) for _ in shapes]
    with ember.no_grad():
        ember._fused_adam_(*fused, fused_steps, decoupled_weight_decay=True, **kw)
        for i in range(len(shapes)):
            adam_update(*(lst[i] for lst in single), single_steps[i], kw["lr"], kw["beta1"], kw["beta2"],
                        kw["weight_decay"], kw["eps"], amsgrad, False, True)
    for f, s in zip(fused, single):
        for a, b in zip(f, s):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert [float(s) for s in fused_steps] == [3.0] * len(shapes)


def test_foreach_and_fused_argument_checks_match_torch():
    for lib in (torch, ember):
        w = lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            lib.optim.Adam([w], foreach=True, fused=True)
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            lib.optim.SGD([w], lr=0.1, fused=True, differentiable=True)
        assert lib.optim.AdamW([w]).param_groups[0]["foreach"] is None
        assert lib.optim.AdamW([w]).param_groups[0]["fused"] is None
    with pytest.raises(RuntimeError, match=r"`fused=True` requires all the params to be floating point Tensors "
                                           r"of supported devices: \['cpu', 'cuda', 'opencl', 'meta'\]"):
        ember.optim.Adam([ember.zeros(2, device=_primdev(), requires_grad=True)], fused=True)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_fused_step_bumps_versions_so_autograd_refuses_stale_saved_tensors(name):
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = getattr(ember.optim, name)([w], lr=0.1, momentum=0.9) if name == "SGD" else ember.optim.Adam([w])
    for _ in range(2):                   # the second SGD step is the fused one (the buffer exists)
        opt.zero_grad()
        (w * w).sum().backward()
        out = (w * w).sum()              # saves w for backward
        before = w._version
        opt.step()
        assert w._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_fused_op_errors_name_the_op_and_argument():
    p = [ember.zeros(3), ember.zeros(2)]
    with pytest.raises(ValueError, match=r"_fused_sgd_\(\): argument 'grads' must have one tensor per parameter "
                                         r"\(2\), got 1"):
        ember._fused_sgd_(p, [ember.zeros(3)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(RuntimeError, match=r"_fused_adam_\(\): exp_avgs\[1\] must have the shape and dtype of "
                                           r"self\[1\] \(\[2\], Float\), got \[3\], Float"):
        ember._fused_adam_(p, p, [ember.zeros(3), ember.zeros(3)], p, [], [ember.tensor(0.0)] * 2, lr=0.1,
                           beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


@pytest.mark.parametrize("name,kwargs", FUSED_CONFIGS[1::2], ids=[f"{n}-{i}" for i, (n, _) in
                                                                   enumerate(FUSED_CONFIGS) if i % 2])
def test_opencl_fused_kernels_match_cpu(name, kwargs):
    """The opencl plugin's in-place kernels (backends/opencl/.../optimizers.py) against the cpu's."""
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    values = _init_values(np.float32)
    results = []
    for device in ("cpu", "opencl"):
        params, opt = _steps_on(device, name, kwargs, values, 5)
        assert all(s["step"].device.type == device for s in opt.state.values() if "step" in s)
        results.append([p.detach().to("cpu").numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_opencl_adam_over_many_parameters_matches_cpu(dtype):
    """More parameters than one launch takes (ember_opencl's PER_LAUNCH), of several shapes, an empty one
    among them: the launches' element ranges and step writes, against the cpu's kernel."""
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    from ember_opencl.kernels.optimizers import PER_LAUNCH

    rng = np.random.default_rng(3)
    shapes = [(7, 5), (5,), (0,), (3, 4, 2), (1,), (9,), (4, 4), (2, 3)][:PER_LAUNCH + 4]
    values = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(3)]
    results = []
    for device in ("cpu", "opencl"):
        params = [ember.tensor(v, dtype=dtype).to(device).requires_grad_() for v in values]
        opt = ember.optim.AdamW(params, lr=0.1, weight_decay=0.01)
        for gs in grads:
            for p, g in zip(params, gs):
                p.grad = ember.tensor(g, dtype=dtype).to(device)
            opt.step()
        assert all(float(opt.state[p]["step"].cpu()) == 3 for p in params)
        results.append([p.detach().cpu().numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32])
def test_fused_adadelta_rounds_as_the_ops_do(dtype):
    """Each step computed as the single-tensor ops compute it (float16/bfloat16 in float32, rounded per op)."""
    kw = dict(lr=0.5, rho=0.8, eps=1e-3, weight_decay=0.1, maximize=True)
    fused, single = [_tensors(dtype, seed=s) for s in (0, 1, 3, 4)], [_tensors(dtype, seed=s) for s in (0, 1, 3, 4)]
    fused_steps, single_steps = [ember.tensor(2.0) for _ in range(3)], [ember.tensor(2.0) for _ in range(3)]
    with ember.no_grad():
        ember._fused_adadelta_(*fused, fused_steps, **kw)
        for i in range(3):
            adadelta_update(*(lst[i] for lst in single), single_steps[i], *kw.values())
    for f, s in zip(fused, single):
        for a, b in zip(f, s):
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
    assert [float(s) for s in fused_steps] == [3.0] * 3
