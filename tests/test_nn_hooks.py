"""nn.Module full backward hooks (pre and post) and the global module hooks, against torch.

Each scenario runs once with `m = ember` and once with `m = torch` on the same weights; the
calls the hooks see (module, which gradients, their values) and the resulting .grad values
must agree.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
X = RNG.standard_normal((2, 4)).astype(np.float32)


def _arr(t):
    return None if t is None else t.detach().numpy().copy()


def _linear(m):
    lin = m.nn.Linear(4, 3)
    lin.load_state_dict({"weight": m.tensor(W), "bias": m.tensor(B)})
    return lin


def _assert_same(a, b):
    assert type(a) is type(b) or (a is not None and b is not None), (a, b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    else:
        assert a == b


def _post_and_pre(m, replace: bool):
    lin = _linear(m)
    seen = []

    def pre(module, grad_output):
        seen.append(("pre", type(module).__name__, [_arr(g) for g in grad_output]))
        return (grad_output[0] * 3,) if replace else None

    def post(module, grad_input, grad_output):
        seen.append(("post", [_arr(g) for g in grad_input], [_arr(g) for g in grad_output]))
        return (grad_input[0] + 1,) if replace else None

    h1 = lin.register_full_backward_pre_hook(pre)
    h2 = lin.register_full_backward_hook(post)
    x = m.tensor(X, requires_grad=True)
    (lin(x) ** 2).sum().backward()
    grads = [_arr(x.grad), _arr(lin.weight.grad), _arr(lin.bias.grad)]
    h1.remove()
    h2.remove()
    x.grad = None
    lin(x).sum().backward()                          # removed: no more calls
    return seen, grads


@pytest.mark.parametrize("replace", [False, True], ids=["observe", "replace-grads"])
def test_full_backward_hooks_like_torch(replace):
    got_e, got_t = _post_and_pre(ember, replace), _post_and_pre(torch, replace)
    _assert_same(got_e, got_t)
    assert [s[0] for s in got_t[0]] == ["pre", "post"]


class _TwoInTwoOut:
    """forward(x, scale, y) -> (x * scale + y, y * 2): a non-tensor argument and a tuple output."""

    @staticmethod
    def make(m):
        class Mod(m.nn.Module):
            def forward(self, x, scale, y):
                return x * scale + y, y * 2

        return Mod()


def _multi(m, y_requires_grad: bool):
    mod = _TwoInTwoOut.make(m)
    seen = []
    mod.register_full_backward_pre_hook(lambda mod_, go: seen.append(("pre", [_arr(g) for g in go])))
    mod.register_full_backward_hook(
        lambda mod_, gi, go: seen.append(("post", [_arr(g) for g in gi], [_arr(g) for g in go])))
    x = m.tensor(X, requires_grad=True)
    y = m.tensor(X[::-1].copy(), requires_grad=y_requires_grad)
    a, b = mod(x, 0.5, y)
    (a.sum() + (b * 3).sum()).backward()
    return seen, _arr(x.grad), _arr(y.grad)


@pytest.mark.parametrize("y_requires_grad", [True, False])
def test_non_tensor_arguments_and_tuple_outputs_like_torch(y_requires_grad):
    got_e, got_t = _multi(ember, y_requires_grad), _multi(torch, y_requires_grad)
    _assert_same(got_e, got_t)
    post = got_t[0][-1]
    assert post[1][1] is None and len(post[1]) == 3        # the float argument's slot


def _no_input_grad(m, bad: bool):
    lin = _linear(m)
    seen = []

    def post(module, grad_input, grad_output):
        seen.append((grad_input, [_arr(g) for g in grad_output]))
        return (m.ones(2, 4),) if bad else None

    lin.register_full_backward_hook(post)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lin(m.tensor(X)).sum().backward()
            error = None
        except RuntimeError as exc:
            error = str(exc)
    return seen, [_arr(lin.weight.grad)], error, any("no inputs require gradients" in str(c.message) for c in caught)


@pytest.mark.parametrize("bad", [False, True], ids=["fires-with-None", "non-None-is-an-error"])
def test_inputs_without_grad_like_torch(bad):
    got_e, got_t = _no_input_grad(ember, bad), _no_input_grad(torch, bad)
    _assert_same(got_e[:2], got_t[:2])
    assert (got_e[2] is None) == (got_t[2] is None) == (not bad)
    if bad:
        assert "should always return None or None for all gradients" in got_e[2]
    assert got_e[3] and got_t[3]


def _wrong_count(m, pre: bool):
    lin = _linear(m)
    if pre:
        lin.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    else:
        lin.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError) as info:
        lin(m.tensor(X, requires_grad=True)).sum().backward()
    return str(info.value)


@pytest.mark.parametrize("pre", [False, True])
def test_wrong_number_of_gradients_like_torch(pre):
    assert _wrong_count(ember, pre) == _wrong_count(torch, pre)


def _global_hooks(m):
    net = m.nn.Sequential(_linear(m), m.nn.ReLU())
    order = []
    mm = m.nn.modules.module
    handles = [
        mm.register_module_forward_pre_hook(lambda mod, args: order.append(("fpre", type(mod).__name__))),
        mm.register_module_forward_hook(lambda mod, args, out: order.append(("fwd", type(mod).__name__))),
        mm.register_module_full_backward_pre_hook(lambda mod, go: order.append(("bpre", type(mod).__name__))),
        mm.register_module_full_backward_hook(lambda mod, gi, go: order.append(("bwd", type(mod).__name__))),
    ]
    net[0].register_full_backward_hook(lambda mod, gi, go: order.append(("own-bwd", type(mod).__name__)))
    try:
        net(m.tensor(X, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    order.append("removed")
    net(m.tensor(X, requires_grad=True)).sum().backward()
    return order


def test_global_module_hooks_like_torch():
    assert _global_hooks(ember) == _global_hooks(torch)
