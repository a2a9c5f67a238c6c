"""ember.compile's layout folds (ember/compiler/layout.py): a contiguous copy that only feeds a batched
product, or another copy, is read in place instead, with eager's values.

Attention splits its heads out of one projection, so `q @ k.transpose(-2, -1)` has two batch dimensions
that do not merge into one stride: eager code copies each operand before bmm, and the backward copies
each head's gradient back before writing it into the projection's gradient. The tests count the copies
compiled code still runs and compare its values with eager code's.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.compiler import layout
from ember.dispatcher import fused_kernel_compiler
from test_compiler_step import _opencl_reason


class Heads(nn.Module):
    """Two heads of attention over one qkv projection (no mask, no output projection)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return (att @ v).transpose(1, 2).contiguous().view(B, T, C)


def ran(run) -> list[str]:
    """The names of what a native runner runs, one per node (a fused group's members each)."""
    return [getattr(m.target, "name", getattr(m.target, "__name__", "")) for u in run.units for m in u.members]


def product(qkv):
    q, k, _ = (t.view(3, 5, 2, 8).transpose(1, 2) for t in qkv.split(16, dim=2))
    return (q @ k.transpose(-2, -1)) * 0.5


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_a_product_of_split_heads_reads_its_operands_in_place(device):
    if device == "opencl" and _opencl_reason():
        pytest.skip(_opencl_reason())
    ember.manual_seed(0)
    qkv = ember.randn(3, 5, 48).to(device)
    compiled = ember.compile(product)
    with ember.no_grad():
        got, want = compiled(qkv), product(qkv)
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-6, atol=1e-6)
    (entry,) = compiled._code.entries.values()
    names = ran(entry.run)
    assert names.count("strided_bmm") == 1 and "bmm" not in names and "copy_" not in names, names


def train_side_by_side(device: str) -> list[str]:
    """Four SGD steps of Heads, eager and reduce-overhead, checked equal; what the recorded step runs."""
    models, xs = [], []
    for _ in range(2):
        ember.manual_seed(0)
        models.append(Heads().to(device))
        xs.append(ember.randn(3, 5, 16).to(device))
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in models]

    def step_of(model, opt, x):
        def step():
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        return step
    eager = step_of(models[0], opts[0], xs[0])
    compiled = ember.compile(step_of(models[1], opts[1], xs[1]), mode="reduce-overhead")
    for _ in range(4):
        np.testing.assert_allclose(float(compiled()), float(eager()), rtol=1e-6)
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-5, atol=1e-7)
    (slot,) = compiled._code.steps.slots.values()
    (program,) = slot.programs.values()
    return ran(program._run)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_a_training_step_over_split_heads_trains_as_eager_code_with_folds_or_without(device, monkeypatch):
    if device == "opencl" and _opencl_reason():
        pytest.skip(_opencl_reason())
    folded = train_side_by_side(device)
    monkeypatch.setattr(fused_kernel_compiler(device), "strided_bmm", None)   # no folds
    unfolded = train_side_by_side(device)
    # eager code copies q, k^T and v before their products, the heads' output back together, and in the
    # backward each head's gradient back before the projection's gradient is made of the three. Where a
    # product's 3-d operands are read again by the backward (matmul's autograd saves them on cpu) their copies
    # stay; a fold only ever removes a copy. The projection's gradient is the heads' concatenated (no zeros to
    # write each into: the one fill is the loss's gradient)
    assert folded.count("copy_") <= unfolded.count("copy_") and len(folded) <= len(unfolded), (folded, unfolded)
    assert folded.count("fill_.Scalar") == 1, folded
    assert "strided_bmm" not in folded


@pytest.mark.parametrize("size, shape, runs", [
    ((6, 5, 8), (3, 2, 5, 8), [[0, 1], [2], [3]]),
    ((3, 5, 16), (3, 5, 2, 8), [[0], [1], [2, 3]]),
    ((15, 16), (3, 5, 2, 8), [[0, 1], [2, 3]]),
    ((1, 4), (1, 1, 4), [[0], [1, 2]]),
    ((5, 6), (3, 2, 5), None),          # a split, not a merge
    ((6,), (2, 3, 1), None),            # a trailing dimension left over
])
def test_the_dimensions_a_view_merges(size, shape, runs):
    assert layout._runs(size, shape) == runs


def test_strided_bmm_on_tensors_is_bmm_of_the_operands_made_3d():
    ember.manual_seed(0)
    a, b = ember.randn(2, 3, 4, 5), ember.randn(6, 5, 2)
    np.testing.assert_allclose(layout.strided_bmm(a, b).numpy(), (a.reshape(6, 4, 5) @ b).numpy(), rtol=1e-6)
