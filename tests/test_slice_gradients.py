"""Gradients of slices, which the engine keeps as pieces until the sliced tensor's gradient is needed whole
(ember/frontend/autograd/slice_pieces.py): every way the pieces meet gives torch's gradient."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from op_names import OpNames

DATA = np.random.default_rng(0).standard_normal((4, 6, 9)).astype(np.float32)


def _grads(program, device: str = "cpu"):
    """The gradient of `program(x)`'s sum for ember (on `device`) and for torch."""
    out = []
    for m, dev in ((ember, device), (torch, "cpu")):
        x = m.tensor(DATA, device=dev, requires_grad=True) if m is ember else torch.tensor(DATA, requires_grad=True)
        weights = m.arange(1.0, 1.0 + DATA.size).reshape(DATA.shape) if m is torch else \
            ember.arange(1.0, 1.0 + DATA.size, device=dev).reshape(DATA.shape)
        y = program(m, x)
        (y * weights[tuple(slice(0, n) for n in y.shape)] if y.dim() == 3 else y * 1.5).sum().backward()
        out.append(np.asarray(x.grad.cpu().tolist() if m is ember else x.grad.tolist()))
    return out


PROGRAMS = {
    "split into three, all used": lambda m, x: sum(t * (k + 1) for k, t in enumerate(x.split(3, dim=2))),
    "chunk along dim 1, one part unused": lambda m, x: x.chunk(3, dim=1)[0] * 2 + x.chunk(3, dim=1)[2],
    "overlapping windows": lambda m, x: x[:, 0:4] * 2 + x[:, 2:6],
    "a window and the whole tensor": lambda m, x: x[:, :, 1:4].sum() + (x * 3).sum(),
    "strided and negative bounds": lambda m, x: x[:, ::2] * 2 + x[:, -3:] - x[1:-1, :, ::3].sum(),
    "windows along two dims": lambda m, x: x[1:3, :, :5] * 2 + x[:2, 2:4, 4:].sum(),
    "narrow and select": lambda m, x: x.narrow(2, 2, 5).sum(2) + x[:, :, 0] * 4,
    "an empty window": lambda m, x: x[:, 3:3].sum() * 2 + x[:, :2],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradients_of_slices_are_torchs(name):
    ours, theirs = _grads(PROGRAMS[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_gradients_of_slices_are_torchs_on_meta_in_shape():
    x = ember.ones(4, 6, 9, device="meta", requires_grad=True)
    q, k, v = x.split(3, dim=2)
    (q * k + v).sum().backward()
    assert tuple(x.grad.shape) == (4, 6, 9) and x.grad.device.type == "meta"


def test_hooks_and_autograd_grad_see_tensors():
    x = ember.tensor(DATA, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(type(g)))
    q, k, v = x.split(3, dim=2)
    (g,) = ember.autograd.grad((q * 2 + k + v).sum(), [x], retain_graph=True)
    (q * 2 + k + v).sum().backward()
    assert seen == [ember.Tensor, ember.Tensor] and isinstance(g, ember.Tensor)
    np.testing.assert_array_equal(np.asarray(g.tolist()), np.asarray(x.grad.tolist()))
    np.testing.assert_array_equal(np.asarray(g.tolist())[..., :3], 2.0)


def test_a_double_backward_through_slices_is_torchs():
    results = []
    for m in (ember, torch):
        x = m.tensor(DATA, requires_grad=True)
        q, k, v = x.split(3, dim=2)
        (g,) = m.autograd.grad((q * k * v).sum(), [x], create_graph=True)
        (g * g).sum().backward()
        results.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)


def test_split_heads_gradient_is_one_concatenation():
    """The qkv split's backward makes the projection's gradient as torch does: one cat, no zero fill."""
    x = ember.tensor(DATA, requires_grad=True)
    q, k, v = x.split(3, dim=2)
    loss = (q * k + v).sum()
    with OpNames() as seen:
        loss.backward()
    assert seen.names.count("cat") == 1 and "zeros" not in seen.names and "slice_scatter" not in seen.names, \
        seen.names
