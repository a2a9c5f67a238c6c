"""ember.jit: torch.jit's entry points on ember.export (trace, save/load) and eager scripting."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import jit

nn = ember.nn


def same(a, b) -> None:
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_trace_a_module_then_save_and_load_it(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x = ember.randn(3, 4)
    traced = jit.trace(model, x)
    same(traced(x), model(x))
    assert [n.target.name for n in traced.graph.nodes if n.op == "call_function"] == ["linear", "tanh", "linear"]
    assert "ember.ops.tanh(linear)" in traced.code
    traced.save(tmp_path / "m.pt")
    loaded = jit.load(tmp_path / "m.pt")
    same(loaded(x), model(x))
    jit.save(traced, tmp_path / "again.pt")
    same(jit.load(tmp_path / "again.pt")(x), model(x))
    assert list(loaded.state_dict()) == list(model.state_dict())     # the original names, as torch keeps them
    loaded.load_state_dict(model.state_dict())


def test_trace_a_function_of_several_inputs():
    def fused(x, y):
        return (x * y + 1).relu()

    x, y = ember.randn(5), ember.randn(5)
    traced = jit.trace(fused, (x, y))
    same(traced(x, y), fused(x, y))
    with pytest.raises(AssertionError, match=r"args\[0\]\.size\(\)\[0\] == 5"):
        traced(ember.randn(6), ember.randn(6))


def test_is_tracing_is_true_only_while_trace_runs_the_program():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append((jit.is_tracing(), jit.is_scripting()))
            return x + 1

    probe = Probe()
    jit.trace(probe, ember.ones(2))
    probe(ember.ones(2))
    assert seen == [(True, False), (False, False)]


def test_script_runs_eagerly_and_saving_it_points_to_trace(tmp_path):
    @jit.script
    def clamp_sum(x):
        total = x.sum()
        if bool(total > 0):                  # data-dependent Python: fine when run eagerly
            return total
        return -total

    assert clamp_sum(ember.tensor([1.0, 2.0])).item() == 3.0
    assert clamp_sum(ember.tensor([-1.0, -2.0])).item() == 3.0
    model = jit.script(nn.Linear(2, 2))
    assert isinstance(model, nn.Linear)
    with pytest.raises(RuntimeError, match=r"cannot save a scripted module.*use ember.jit.trace\(module, "
                                           r"example_inputs\)"):
        jit.save(model, tmp_path / "s.pt")


def test_the_decorators_return_their_function():
    def helper(x):
        return x

    for decorator in (jit.ignore, jit.unused, jit.export):
        assert decorator(helper) is helper
    assert jit.ignore(drop=True)(helper) is helper
    assert helper._ember_jit_ignore and helper._ember_jit_unused and helper._ember_jit_export
    assert jit.annotate(list, [1, 2]) == [1, 2]


def test_trace_needs_example_inputs():
    with pytest.raises(ValueError, match="give example_inputs"):
        jit.trace(nn.Linear(2, 2))


def test_trace_a_function_with_keyword_inputs():
    def scaled(x, *, scale):
        return x * scale

    x, s = ember.randn(4), ember.randn(4)
    traced = jit.trace(scaled, example_kwarg_inputs={"x": x, "scale": s})
    same(traced(x=x, scale=s), x * s)
