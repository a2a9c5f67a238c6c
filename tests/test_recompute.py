"""Saved outputs recomputed in the backward (the registry's `recompute`: gelu, native_layer_norm).

A node that saves another node's output 0 keeps a weak reference and the producer instead of the
tensor (autograd/graph.py `pack`): the output is freed as soon as the forward drops it, and the
backward runs the producer's op again on what the producer saved. Gradients are the same bits, the
in-place check and the errors are torch's, double backward flows through the recomputation.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import ember
from ember.frontend.autograd import graph
from ember.testing.models import GPT2Config, build_gpt2

ACTIVATIONS = {
    "gelu": (lambda lib, t: lib.nn.functional.gelu(t)),
    "tanh gelu": (lambda lib, t: lib.nn.functional.gelu(t, approximate="tanh")),
    "layer_norm": (lambda lib, t: lib.nn.functional.layer_norm(t, (8,))),
}


def _gpt_grads():
    ember.manual_seed(0)
    model = build_gpt2(GPT2Config(vocab_size=64, n_ctx=16, n_embd=32, n_layer=2, n_head=2))
    x = ember.randint(0, 64, (2, 16))
    ember.nn.functional.cross_entropy(model(x).reshape(-1, 64), x.reshape(-1)).backward()
    return [p.grad.numpy().copy() for p in model.parameters()]


def test_gradients_are_the_same_bits_as_with_the_outputs_kept(monkeypatch):
    recomputed = _gpt_grads()
    monkeypatch.setattr(graph, "RECOMPUTE_SAVED_OUTPUTS", False)
    kept = _gpt_grads()
    assert len(recomputed) == len(kept) == 28
    for a, b in zip(recomputed, kept):
        np.testing.assert_array_equal(a, b)


def _pair(seed: int = 0):
    """(ember x, linear), (torch x, linear) with the same values."""
    rng = np.random.default_rng(seed)
    x, w, b = rng.standard_normal((4, 8)), rng.standard_normal((3, 8)), rng.standard_normal(3)
    out = []
    for lib in (ember, torch):
        linear = lib.nn.Linear(8, 3).double()
        with lib.no_grad():
            linear.weight.copy_(lib.tensor(w))
            linear.bias.copy_(lib.tensor(b))
        out.append((lib.tensor(x, requires_grad=True), linear))
    return out


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_saved_output_is_freed_with_the_forward_and_recomputed(name):
    f = ACTIVATIONS[name]
    (x, linear), (tx, tlinear) = _pair()
    y = f(ember, x)
    alive = weakref.ref(y)
    out = linear(y)
    del y
    gc.collect()
    assert alive() is None                     # the linear node keeps the recipe, not the tensor
    out.sum().backward()
    tlinear(f(torch, tx)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(linear.weight.grad.numpy(), tlinear.weight.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_double_backward_flows_through_the_recomputed_output(name):
    f = ACTIVATIONS[name]
    grads = []
    for lib, (x, linear) in zip((ember, torch), _pair(1)):
        out = (linear(f(lib, x)) ** 2).sum()
        (g,) = lib.autograd.grad(out, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-10)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-8, atol=1e-10)


def test_an_output_still_held_is_used_and_checked_as_torch_checks_it():
    for lib, (x, linear) in zip((ember, torch), _pair()):
        y = lib.nn.functional.gelu(x)
        out = linear(y)
        with lib.no_grad():
            y.mul_(2)                          # the saved input of linear, modified in place
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_retain_graph_recomputes_again_and_a_freed_graph_raises_torchs_error():
    (x, linear), (tx, tlinear) = _pair()
    out = linear(ember.nn.functional.gelu(x)).sum()
    out.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    out.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)
    tout = tlinear(torch.nn.functional.gelu(tx)).sum()
    tout.backward()
    for second_backward in (tout.backward, out.backward):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            second_backward()


def test_saved_tensors_hooks_see_the_output_itself():
    x = ember.randn(4, 8, requires_grad=True)
    linear = ember.nn.Linear(8, 3)
    packed = []

    def pack(t):
        packed.append(t)
        return t.clone()

    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = ember.nn.functional.gelu(x)
        out = linear(y)
    assert any(t.shape == y.shape and np.array_equal(t.detach().numpy(), y.detach().numpy()) for t in packed)
    out.sum().backward()
    assert x.grad is not None


def test_a_gpt_steps_saved_activations_lose_the_gelu_and_layer_norm_outputs(monkeypatch):
    """A GPT training step (2 layers, 64 wide, batch 2 x 32) predicted on meta with and without the
    recomputation: the activations saved for backward differ by exactly the GELU outputs (2 x 32 x 256
    float32 per layer) and the layer norms' (two per layer and the final one, 2 x 32 x 64)."""
    import memory_steps

    build, step = memory_steps.CASES["gpt2"]
    recomputed = memory_steps.predicted(build, step).breakdown["activations"]["max"]
    monkeypatch.setattr(graph, "RECOMPUTE_SAVED_OUTPUTS", False)
    kept = memory_steps.predicted(build, step).breakdown["activations"]["max"]
    tokens = 2 * 32
    assert kept - recomputed == 2 * tokens * 256 * 4 + 5 * tokens * 64 * 4


def test_a_saved_view_of_the_output_is_recomputed_as_that_view():
    """matmul of a 3-d input saves it reshaped (a view of the GELU's output): the view is kept as a recipe
    too, and rebuilt over the recomputed output."""
    rng = np.random.default_rng(2)
    x_np, w_np = rng.standard_normal((2, 4, 8)), rng.standard_normal((3, 8))
    grads = []
    for lib in (ember, torch):
        x, w = lib.tensor(x_np, requires_grad=True), lib.tensor(w_np, requires_grad=True)
        y = lib.nn.functional.gelu(x)
        alive = weakref.ref(y)
        out = lib.matmul(y, w.t())
        del y
        gc.collect()
        if lib is ember:
            assert alive() is None
        (out ** 2).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)
