"""The core-ATen nn additions: fold/unfold and 3-d pooling wrappers against torch.nn.functional,
and second derivatives through the backward ops the forward formulas now call."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember._generated import functions as F


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(x), torch.tensor(x)


def _leaf(shape, seed):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _close(e, t):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b)
        return
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["fold", "unfold", "adaptive_avg_pool3d", "max_pool3d_with_indices"])
def test_functional_signatures_match_torch(name):
    e, t = inspect.signature(getattr(EF, name)), inspect.signature(getattr(TF, name))
    assert list(e.parameters) == list(t.parameters)
    assert [p.default for p in e.parameters.values()] == [p.default for p in t.parameters.values()]


def test_fold_unfold_match_torch_and_are_adjoint():
    e, t = _pair((2, 3, 5, 6))
    _close(EF.unfold(e, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
           TF.unfold(t, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)))
    ce, ct = _pair((2, 12, 15), 1)
    _close(EF.fold(ce, (4, 5), 2, padding=1, stride=(1, 2)), TF.fold(ct, (4, 5), 2, padding=1, stride=(1, 2)))
    # <unfold(x), c> == <x, fold(c)>: col2im is im2col's adjoint
    x, c = _leaf((1, 2, 4, 4), 2), _leaf((1, 8, 9), 3)
    lhs = (EF.unfold(x, 2) * c).sum().item()
    rhs = (x * EF.fold(c, (4, 4), 2)).sum().item()
    assert abs(lhs - rhs) < 1e-10


def test_pool3d_wrappers_match_torch():
    e, t = _pair((1, 2, 4, 5, 4))
    _close(EF.max_pool3d(e, 2, 1, 1, return_indices=True), TF.max_pool3d(t, 2, 1, 1, return_indices=True))
    _close(EF.avg_pool3d(e, (2, 3, 2), ceil_mode=True, count_include_pad=False),
           TF.avg_pool3d(t, (2, 3, 2), ceil_mode=True, count_include_pad=False))
    _close(EF.adaptive_avg_pool3d(e, (3, None, 2)), TF.adaptive_avg_pool3d(t, (3, None, 2)))


def test_forward_formulas_call_the_backward_ops():
    x, w = _leaf((1, 2, 4, 4), 0), _leaf((3, 2, 2, 2), 1)
    out = F.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    g = ember.ones_like(out)
    gx, gw = ember.autograd.grad(out, (x, w), g)
    ref = F.convolution_backward(g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
    _close((gx, gw), ref[:2])
    assert ref[2] is None


@pytest.mark.parametrize("fn", [lambda x: EF.max_pool3d(x, 2, 1), lambda x: EF.avg_pool3d(x, 2, 1, 1),
                                lambda x: EF.adaptive_avg_pool3d(x, (2, 1, 2)),
                                lambda x: EF.fold(EF.unfold(x[0], 2), (2, 3), 2),
                                lambda x: F.reflection_pad3d(x, [1, 1, 0, 1, 1, 0])])
def test_3d_and_fold_second_order(fn):
    assert ember.autograd.gradgradcheck(fn, (_leaf((1, 1, 2, 2, 3), 6),))


@pytest.mark.parametrize("call", [
    lambda g, x, w: F.native_layer_norm_backward(g, x, [3], *F.native_layer_norm(x.detach(), [3], None, None, 1e-5)[1:],
                                                 w, None, [True, True, False])[:2],
    lambda g, x, w: F.native_group_norm_backward(g, x, *F.native_group_norm(x.detach(), None, None, 2, 3, 3, 3,
                                                                           1e-5)[1:], w, 2, 3, 3, 3,
                                                 [True, True, False])[:2]])
def test_norm_backward_ops_are_differentiable(call):
    """The normalization backward ops' own derivatives (statistics tracked as functions of input)."""
    g, x, w = _leaf((2, 3, 3), 0), _leaf((2, 3, 3), 1), _leaf((3,), 2)
    assert ember.autograd.gradcheck(call, (g, x, w))


def test_nll_loss_is_one_node_with_torchs_gradients_and_weight_check():
    """F.nll_loss records one node whose backward is one `_nll_loss_backward` (as torch's NllLossBackward0),
    equal to torch's gradient, differentiable again in its incoming gradient; a weight that requires grad
    is refused with torch's error class."""
    rng = np.random.default_rng(0)
    logp = np.log(rng.dirichlet(np.ones(5), size=6)).astype(np.float64)
    target = np.array([0, 4, 1, 1, 3, -100])
    weight = rng.uniform(0.5, 2, 5)
    grads = []
    for lib, F_ in ((ember, EF), (torch, TF)):
        x = lib.tensor(logp, requires_grad=True)
        loss = F_.nll_loss(x, lib.tensor(target), weight=lib.tensor(weight))
        v = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(loss, x, grad_outputs=v, create_graph=True)
        (gv,) = lib.autograd.grad((g * lib.tensor(logp)).sum(), v)        # the adjoint: nll_loss itself
        grads.append((float(loss.detach()), g.detach().numpy(), gv.numpy()))
        if lib is ember:
            assert type(loss.grad_fn).__name__ == "NllLossNdBackward0" and loss.grad_fn.next_functions[0][0] is not None
            with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
                EF.nll_loss(x, lib.tensor(target), weight=lib.tensor(weight, requires_grad=True))
    (el, eg, egg), (tl, tg, tgg) = grads
    assert el == pytest.approx(tl, rel=1e-12)
    np.testing.assert_allclose(eg, tg, rtol=1e-12, atol=0)
    np.testing.assert_allclose(egg, tgg, rtol=1e-12, atol=0)
    with ember.no_grad():                             # without grad mode a weight's requires_grad is irrelevant
        EF.nll_loss(ember.tensor(logp), ember.tensor(target), weight=ember.tensor(weight, requires_grad=True))
