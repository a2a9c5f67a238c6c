"""Dynamic shapes in ember.export: `Dim`, symbolic sizes through the shape rules, size nodes, guards.

A program exported with dynamic dimensions must give eager's result exactly at every size in the
ranges, refuse sizes outside them (naming the dimension and the range), keep the assumptions its
trace made as guards, and refuse to export when the program fixes a dimension asked to be dynamic.
"""
from __future__ import annotations

import io
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.export import Dim, GuardError, export, load, save
from ember.export.size_nodes import sym_size
from ember.testing.models import GPT2Config, build_gpt2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402

nn = ember.nn


def exact(a, b) -> None:
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def logits(out):
    return out[0] if isinstance(out, tuple) else out


def call_targets(ep) -> list:
    return [n.target for n in ep.graph.nodes if n.op == "call_function"]


@pytest.fixture(scope="module", params=["nanogpt_masked_fill", "gpt2_sdpa"])
def gpt(request):
    ember.manual_seed(4)
    if request.param == "nanogpt_masked_fill":
        cfg = char_gpt.GPTConfig(vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
        model = char_gpt.gpt_model(ember)(cfg).eval()
    else:
        model = build_gpt2(GPT2Config(vocab_size=20, n_ctx=16, n_embd=16, n_layer=2, n_head=2), lib=ember).eval()
    batch, seq = Dim("batch", max=32), Dim("seq", min=2, max=16)
    ep = export(model, (ember.randint(0, 20, (3, 10)),), dynamic_shapes={"idx": {0: batch, 1: seq}})
    return model, ep


@pytest.mark.parametrize("shape", [(3, 10), (1, 5), (7, 16), (2, 2), (32, 3)])
def test_a_gpt_with_dynamic_batch_and_sequence_runs_at_other_sizes_exactly_as_eager(gpt, shape):
    model, ep = gpt
    idx = ember.randint(0, 20, shape)
    exact(logits(ep.module()(idx)), logits(model(idx)))


def test_outside_the_range_the_error_names_the_dimension_and_the_range(gpt):
    _, ep = gpt
    with pytest.raises(GuardError, match=r"size\(\)\[1\] = 17 is outside the range of dynamic dimension 'seq', "
                                         r"\[2, 16\]"):
        ep.module()(ember.randint(0, 20, (2, 17)))
    with pytest.raises(GuardError, match=r"dimension 'batch', \[0, 32\]"):
        ep.module()(ember.randint(0, 20, (33, 4)))
    with pytest.raises(GuardError, match=r"size\(\)\[1\] = 1 is outside .*'seq', \[2, 16\]"):
        ep.module()(ember.randint(0, 20, (2, 1)))


def test_the_graph_reads_sizes_from_the_input_and_prints_them_symbolically(gpt):
    _, ep = gpt
    text = str(ep)
    assert 'idx: "i64[batch, seq]"' in text and ': "Sym(seq)" = ember.export.size_nodes.sym_size(idx, 1)' in text
    assert "Range constraints: {batch: [0, 32], seq: [2, 16]}" in text
    sizes = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is sym_size]
    assert sorted(n.args[1] for n in sizes) == [0, 1] and all(n.args[0].name == "idx" for n in sizes)
    assert ep.shape_guards == []            # nothing in a GPT's forward depends on the sizes' values


def test_a_dynamic_program_saves_loads_and_keeps_its_ranges(gpt):
    model, ep = gpt
    buf = io.BytesIO()
    save(ep, buf)
    loaded = load(io.BytesIO(buf.getvalue()))
    assert loaded.range_constraints == {"batch": (0, 32), "seq": (2, 16)}
    idx = ember.randint(0, 20, (5, 13))
    exact(logits(loaded.module()(idx)), logits(model(idx)))
    with pytest.raises(GuardError, match="'seq', \\[2, 16\\]"):
        loaded.module()(ember.randint(0, 20, (2, 17)))
    assert str(loaded) == str(ep)


def test_run_decompositions_keeps_the_program_dynamic(gpt):
    from ember.dispatcher import primitive_ops

    model, ep = gpt
    prims = ep.run_decompositions()
    assert prims.range_constraints == ep.range_constraints
    primitives = set(primitive_ops())
    assert all(t.name in primitives for t in call_targets(prims) if hasattr(t, "name"))
    for shape in [(2, 7), (4, 16)]:
        idx = ember.randint(0, 20, shape)
        static = export(model, (idx,)).run_decompositions()
        exact(logits(prims.module()(idx)), logits(static.module()(idx)))


class Flatten(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x):
        b, t, c = x.shape
        return self.proj(x).reshape(b * t, 3) * (t // 2)


def test_size_arithmetic_becomes_nodes_computed_when_the_program_runs():
    model = Flatten()
    ep = export(model, (ember.randn(3, 5, 4),), dynamic_shapes=({0: Dim("b"), 1: Dim("t")},))
    ops = call_targets(ep)
    assert operator.mul in ops and operator.floordiv in ops
    for shape in [(2, 9, 4), (6, 2, 4)]:
        x = ember.randn(*shape)
        exact(ep.module()(x), model(x))


def test_branching_on_a_size_is_a_guard_checked_at_every_call():
    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 4 else x - 1

    ep = export(Branchy(), (ember.ones(6, 3),), dynamic_shapes={"x": {0: Dim("n", max=100)}})
    assert [str(g) for g in ep.shape_guards] == ["n > 4"]
    exact(ep.module()(ember.ones(9, 3)), ember.full((9, 3), 2.0))
    with pytest.raises(GuardError, match=r"Guard failed: n > 4 \(the program was traced assuming it; here n = 3\)"):
        ep.module()(ember.ones(3, 3))


def test_a_program_that_fixes_a_dynamic_dimension_does_not_export():
    class Fixes(nn.Module):
        def forward(self, x):
            return x + ember.zeros(int(x.shape[0]), 1)

    with pytest.raises(ValueError, match=r"Eq\(n, 5\) fixes 'n' to a single size \(.*test_export_dynamic.py:\d+\)"):
        export(Fixes(), (ember.ones(5, 2),), dynamic_shapes={"x": {0: Dim("n")}})


def test_one_dim_shared_by_two_inputs_needs_equal_sizes():
    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    n = Dim("n")
    ep = export(Add(), (ember.ones(4, 2), ember.ones(4, 2)), dynamic_shapes={"a": {0: n}, "b": {0: n}})
    exact(ep.module()(ember.ones(7, 2), ember.ones(7, 2)), ember.full((7, 2), 2.0))
    with pytest.raises(GuardError, match=r"args\[1\]\.size\(\)\[0\] == args\[0\]\.size\(\)\[0\] \(both are "
                                         r"dimension 'n'; got 6 and 7\)"):
        ep.module()(ember.ones(7, 2), ember.ones(6, 2))
    with pytest.raises(ValueError, match="ties 'm' and 'n' together"):
        export(Add(), (ember.ones(4, 2), ember.ones(4, 2)), dynamic_shapes={"a": {0: Dim("n")}, "b": {0: Dim("m")}})


def test_dynamic_shapes_forms_and_their_errors():
    model = Flatten()
    x = ember.randn(3, 5, 4)
    for spec in ({"x": (Dim("b"), Dim("t"), None)}, [{0: Dim("b"), -2: Dim("t")}], ((Dim("b"), Dim("t"), None),)):
        assert export(model, (x,), dynamic_shapes=spec).range_constraints == {"b": (0, None), "t": (0, None)}
    with pytest.raises(ValueError, match=r"names \['y'\], which are not inputs of forward"):
        export(model, (x,), dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(ValueError, match="has 2 entries for a 3-dimensional tensor"):
        export(model, (x,), dynamic_shapes={"x": (Dim("b"), None)})
    with pytest.raises(ValueError, match=r"size\(0\) is 1 in the example inputs, which cannot stand for dynamic "
                                         r"dimension 'b' \(sizes 0 and 1 are specialised"):
        export(model, (ember.randn(1, 5, 4),), dynamic_shapes={"x": {0: Dim("b")}})
    with pytest.raises(ValueError, match=r"size\(1\) is 5 .* \(outside \[8, 16\]\)"):
        export(model, (x,), dynamic_shapes={"x": {1: Dim("t", min=8, max=16)}})
    with pytest.raises(ValueError, match="must be a Python identifier"):
        Dim("a b")
    with pytest.raises(ValueError, match="expected integers 0 <= min <= max"):
        Dim("t", min=5, max=4)
    with pytest.raises(TypeError, match="dynamic_shapes must be a dict, tuple or list"):
        export(model, (x,), dynamic_shapes=Dim("b"))


def test_symbolic_sizes_compute_like_ints_and_keep_only_needed_guards():
    from ember.export.symbolic import ShapeEnv

    env = ShapeEnv()
    b = env.create(Dim("b"), 3, ("x", 0))
    t = env.create(Dim("t", max=16), 5, ("x", 1))
    assert (b * t) // t is b or str((b * t) // t) == "b"
    assert b * t * 4 // 4 == b * t and str(b * t * 4 // 4) == "b*t"
    assert str((b + 1) // 2) == "((b + 1)//2)" and str(b // 2 * 3) == "3*(b//2)"
    assert (b - b) == 0 and isinstance(b - b, int)
    assert not (b == 1) and b > 0 and t <= 16 and not (t > 16)       # decided by the ranges
    assert env.guards == []
    assert (b == t) is False and [str(g) for g in env.guards] == ["Ne(b, t)"]   # decided on the example
    assert t > 4 and [str(g) for g in env.guards][-1] == "t > 4"
    assert int(b) == 3 and str(env.guards[-1]) == "Eq(b, 3)"
