"""ember.compile: the wrappers torch.compile returns, capture and guards, recompiles, graph breaks.

Every compiled program must give eager's results exactly (outputs, gradients, buffers, losses
over training steps); what compiling adds is checked as torch behaves: OptimizedModule's
`_orig_mod` and state_dict keys, recompiles on a failed guard and automatic dynamic sizes, the
recompile limit, graph breaks and `fullgraph=True`, `explain`, custom backends.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.compiler import GraphBreakError, explain, logs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402

nn = ember.nn


def exact(a, b) -> None:
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def close(a, b) -> None:
    """Equal up to the last bits: a fused reduction sums each row in float64 where eager sums float32 pairwise
    (a softmax's backward in a GPT), so gradients through one differ from eager's by rounding only."""
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-7)


def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def test_a_compiled_module_is_an_optimized_module_like_torchs():
    model = mlp()
    compiled = ember.compile(model)
    tm = torch.compile(torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)))
    assert type(compiled).__name__ == type(tm).__name__ == "OptimizedModule"
    assert compiled._orig_mod is model
    assert list(compiled.state_dict()) == list(tm.state_dict())
    assert ember.compile(nn.Linear(6, 2)).in_features == 6       # attributes of the wrapped module
    assert ember.compile(model, disable=True) is model
    f = ember.compile(mlp)
    assert f.__wrapped__ is mlp and f.__name__ == "mlp"


def train_side_by_side(optimizer, lr: float, batches: list):
    """Two equal MLPs trained on `batches` ((x, y) pairs), one eagerly and one through ember.compile, each
    step's loss, and then every parameter, checked equal; returns the compiled module."""
    eager, model = mlp(), mlp()
    compiled = ember.compile(model)
    opt_e, opt_c = optimizer(eager.parameters(), lr=lr), optimizer(model.parameters(), lr=lr)
    for x, y in batches:
        losses = []
        for m, opt in ((eager, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss)
        exact(losses[1], losses[0])
        assert losses[1].grad_fn is not None
    for a, b in zip(eager.parameters(), model.parameters()):
        exact(b, a)
    return compiled


def test_outputs_gradients_and_training_steps_equal_eager():
    ember.manual_seed(1)
    compiled = train_side_by_side(ember.optim.SGD, 0.1, [(ember.randn(4, 6), ember.randint(0, 3, (4,)))
                                                         for _ in range(5)])
    assert compiled._code.compiles == 1


def test_batch_norm_in_training_updates_its_buffers_as_eager_does():
    ember.manual_seed(2)
    eager = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).train()
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).train()
    model.load_state_dict(eager.state_dict())
    compiled = ember.compile(model)
    for _ in range(3):
        x = ember.randn(5, 3)
        exact(compiled(x), eager(x))
    for name, buf in eager.named_buffers():
        exact(dict(model.named_buffers())[name], buf)
    compiled.eval()                                           # a training flag is a guard: recompiles
    x = ember.randn(5, 3)
    exact(compiled(x), eager.eval()(x))
    assert compiled._code.compiles == 2


def test_a_gpt_compiles_and_matches_eager():
    ember.manual_seed(3)
    cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    model = char_gpt.gpt_model(ember)(cfg)
    idx, targets = ember.randint(0, 20, (2, 8)), ember.randint(0, 20, (2, 8))
    le, loss_e = model(idx, targets)
    loss_e.backward()
    want = {n: p.grad.clone() for n, p in model.named_parameters()}
    for backend in ("inductor", "eager"):             # the straight-line default and the interpreter
        model.zero_grad()
        lc, loss_c = ember.compile(model, backend=backend)(idx, targets)
        exact(lc, le)
        exact(loss_c, loss_e)
        loss_c.backward()
        for n, p in model.named_parameters():
            close(p.grad, want[n])


def test_a_size_change_recompiles_once_then_the_size_is_dynamic(capsys):
    model = mlp()
    compiled = ember.compile(model)
    with logs.logging("recompiles"):
        for n in (3, 5, 7, 2, 64):
            x = ember.randn(n, 6)
            exact(compiled(x), model(x))
    assert compiled._code.compiles == 2
    assert "recompiling Sequential: input 0: size (3, 6) -> (5, 6)" in capsys.readouterr().err


def test_dynamic_true_compiles_once_and_dynamic_false_for_every_size():
    model = mlp()
    dynamic, static = ember.compile(model, dynamic=True), ember.compile(model, dynamic=False)
    for n in range(2, 65, 7):
        x = ember.randn(n, 6)
        exact(dynamic(x), model(x))
    assert dynamic._code.compiles == 1
    for n in (2, 3, 4):
        static(ember.randn(n, 6))
    assert static._code.compiles == 3


def test_past_the_recompile_limit_calls_run_eagerly_with_one_warning():
    model = mlp()
    compiled = ember.compile(model, dynamic=False, recompile_limit=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 4, 5, 6):
            x = ember.randn(n, 6)
            exact(compiled(x), model(x))
    assert [str(w.message) for w in caught] == ["ember.compile: Sequential hit the recompile limit (2); calls "
                                                "failing every guard now run eagerly"]


def branchy(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def test_a_data_dependent_branch_is_a_graph_break_that_matches_eager():
    """`if y.sum() > 0:` is decided when captured and checked on every call: the call runs compiled (one
    graph break in torch's count); a call going the other way captures that variant once, then both run
    compiled. fullgraph=True refuses the break."""
    compiled = ember.compile(branchy)
    for x in (ember.ones(3), -ember.ones(3), ember.ones(3), -ember.ones(3)):
        exact(compiled(x), branchy(x))
    (entry,) = compiled._code.entries.values()
    assert entry.run is not None and len(entry.variants) == 1 and compiled._code.compiles == 2
    assert sum(getattr(n.target, "__name__", "") == "check_branch" for n in entry.program.graph.nodes) == 1
    with ember.no_grad():                           # natively replayed too, the check on the native array
        nograd = ember.compile(branchy)
        for x in (ember.ones(3), -ember.ones(3), -ember.ones(3)):
            exact(nograd(x), branchy(x))
        (entry,) = nograd._code.entries.values()
        assert entry.run.__qualname__.startswith("native_runner")
    out = explain(branchy, ember.ones(3))
    assert out.graph_break_count == 1
    assert out.break_reasons[0].where.endswith(f"test_compiler.py:{branchy.__code__.co_firstlineno + 2}")
    assert out.break_reasons[0].code == "if y.sum() > 0:"
    with pytest.raises(GraphBreakError, match=r"branchy cannot be captured whole: the program reads a tensor's "
                                              r"values .*test_compiler.py:\d+: if y.sum\(\) > 0:"):
        ember.compile(branchy, fullgraph=True)(ember.ones(3))


def test_a_branch_after_writing_an_input_stays_a_break_so_the_input_is_written_once():
    def bump_then_branch(x):
        x.add_(1)
        return x * 2 if x.sum() > 0 else x
    compiled = ember.compile(bump_then_branch)
    x = ember.zeros(3)
    exact(compiled(x), ember.full((3,), 2.0))
    exact(x, ember.ones(3))                         # written once: the branch was not probed
    assert "reads a tensor's values" in str(compiled._code.graph_breaks[0])


SCALE = ember.ones(3)


def test_a_tensor_read_from_outside_the_inputs_is_a_graph_break():
    global SCALE

    def scaled(x):
        return x * SCALE

    compiled = ember.compile(scaled)
    exact(compiled(ember.ones(3)), ember.ones(3))
    SCALE = ember.full((3,), 2.0)                # reassigned: a captured constant would be stale
    exact(compiled(ember.ones(3)), ember.full((3,), 2.0))
    assert "outside its inputs" in compiled._code.graph_breaks[0].reason


def test_explain_lists_the_graph_and_its_ops():
    out = explain(lambda x: (x * 2).sin(), ember.ones(3))
    assert (out.graph_count, out.graph_break_count, out.ops_per_graph) == (1, 0, [["mul.Tensor", "sin"]])
    assert "Graph Count: 1" in str(out) and explain(branchy)(ember.ones(2)).graph_break_count == 1


def test_backends_eager_custom_and_unknown():
    seen = []

    def backend(gm, example_inputs):
        seen.append((len(gm.graph.nodes), [tuple(t.shape) for t in example_inputs]))
        return gm

    model = mlp()
    x = ember.randn(4, 6)
    for b in ("eager", backend):
        exact(ember.compile(model, backend=b)(x), model(x))
    assert seen and seen[0][1][-1] == (4, 6)
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
            m.compile(model, backend="nope")
    assert {"eager", "aot_eager", "inductor", "ember"} <= set(ember.compiler.list_backends())


def _gpt():
    ember.manual_seed(6)
    return char_gpt.gpt_model(ember)(char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16,
                                                        dropout=0.0))


def _cnn():
    ember.manual_seed(2)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 3))


@pytest.mark.parametrize("make, inputs", [
    (mlp, lambda: (ember.randn(5, 6),)),
    (_cnn, lambda: (ember.randn(2, 1, 8, 8),)),
    (_gpt, lambda: (ember.randint(0, 20, (2, 8)), ember.randint(0, 20, (2, 8)))),
], ids=["mlp", "cnn", "gpt"])
def test_every_backend_trains_a_model_as_eager_does(make, inputs):
    """"eager" (the graph interpreted), "aot_eager" (the joint graph, op by op) and the default (the joint
    graph replayed natively, chains fused) give eager's outputs and gradients (bit for bit, but for the
    GPT's gradients through its fused softmax backward: rounding), so a failure bisects to capture,
    autograd or code generation."""
    ember.manual_seed(3)
    args = inputs()
    reference = make()
    out = reference(*args)
    loss = (out[1] if isinstance(out, tuple) else out.square().mean())
    loss.backward()
    for backend in ("eager", "aot_eager", "inductor"):
        model = make()
        compiled = ember.compile(model, backend=backend)
        got = compiled(*args)
        (got[1] if isinstance(got, tuple) else got.square().mean()).backward()
        exact(got[0] if isinstance(got, tuple) else got, out[0] if isinstance(out, tuple) else out)
        for (name, p), q in zip(reference.named_parameters(), model.parameters()):
            (exact if make is not _gpt else close)(q.grad, p.grad)
        (entry,) = compiled._code.entries.values()
        if backend != "eager":
            assert entry.run.__qualname__.startswith("_joint_call"), backend


def test_keyword_and_non_tensor_inputs_are_guards():
    @ember.compile
    def f(x, *, scale=1.0, offset=None):
        return x * scale if offset is None else x * scale + offset

    x = ember.ones(2)
    exact(f(x), x)
    exact(f(x, scale=3.0), ember.full((2,), 3.0))
    exact(f(x, scale=3.0, offset=ember.ones(2)), ember.full((2,), 4.0))
    assert f._code.compiles == 3


def test_importing_ember_does_not_load_the_compiler():
    import subprocess

    code = "import sys, ember; print([m for m in ('ember.compiler', 'ember.export') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_printing_a_tensor_is_a_graph_break_so_every_call_prints(capsys):
    @ember.compile
    def f(x):
        print(x)
        return x + 1

    for v in (1.0, 2.0):
        exact(f(ember.full((2,), v)), ember.full((2,), v + 1))
    assert capsys.readouterr().out == "tensor([1., 1.])\ntensor([2., 2.])\n"
    assert "reads a tensor's values" in f._code.graph_breaks[0].reason


def test_without_autograd_the_default_backend_replays_kernels_natively_and_exactly():
    ember.manual_seed(5)
    cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    gpt = char_gpt.gpt_model(ember)(cfg).eval()
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()).eval()
    for model, x in ((gpt, ember.randint(0, 20, (2, 8))), (cnn, ember.randn(2, 1, 8, 8)), (mlp(), ember.randn(3, 6))):
        compiled = ember.compile(model)
        with ember.no_grad():
            for _ in range(2):
                got, want = compiled(x), model(x)
                exact(got[0] if isinstance(got, tuple) else got, want[0] if isinstance(want, tuple) else want)
        (entry,) = compiled._code.entries.values()
        assert entry.run.__qualname__.startswith("native_runner")
    out = ember.compile(mlp())(ember.randn(3, 6))          # grad enabled, parameters require grad: dispatched
    assert out.grad_fn is not None


def test_native_replay_leaves_programs_that_write_their_inputs_or_return_them():
    @ember.compile
    def ident(x):
        return x

    @ember.compile
    def bump(x):
        x.add_(1)
        return x * 2

    x = ember.ones(3)
    with ember.no_grad():
        assert ident(x) is x
        exact(bump(x), ember.full((3,), 4.0))
        exact(x, ember.full((3,), 2.0))
    assert not any(e.run.__qualname__.startswith("native_runner") for e in bump._code.entries.values())
    assert any(e.run.__qualname__.startswith("straight_line") for e in bump._code.entries.values())


def test_training_captures_the_backward_and_runs_both_halves_natively():
    x, y = ember.randn(5, 6), ember.randint(0, 3, (5,))
    compiled = train_side_by_side(ember.optim.AdamW, 1e-2, [(x, y)] * 3)
    (entry,) = compiled._code.entries.values()
    assert entry.run.__qualname__.startswith("_joint_call")
    out = compiled(x)
    assert type(out.grad_fn).__name__ == "JointFunctionBackward"


def test_training_a_gpt_runs_its_joint_graph_with_eagers_gradients():
    """A GPT's composite ops (layer norm, attention, split, contiguous) decompose into ops with native
    kernels and formulas of their own: the joint graph runs, and losses and gradients are eager's (the
    tied embedding's gradient sums two uses, the split's backward fills zeros; the softmax's backward,
    a fused row reduction, rounds differently)."""
    def make():
        ember.manual_seed(6)
        return char_gpt.gpt_model(ember)(char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2,
                                                            n_embd=16, dropout=0.0))
    eager, model = make(), make()
    compiled = ember.compile(model)
    idx, targets = ember.randint(0, 20, (2, 8)), ember.randint(0, 20, (2, 8))
    for m in (eager, compiled):
        m(idx, targets)[1].backward()
    (entry,) = compiled._code.entries.values()
    assert entry.run.__qualname__.startswith("_joint_call")
    for (name, p), q in zip(eager.named_parameters(), model.parameters()):
        close(q.grad, p.grad)


def test_random_ops_in_training_are_dispatched_and_draw_as_eager_does():
    model = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.5), nn.Linear(16, 3))
    compiled = ember.compile(model)
    x = ember.randn(4, 6)
    ember.manual_seed(7)
    want = model(x)
    ember.manual_seed(7)
    exact(compiled(x), want)
    (entry,) = compiled._code.entries.values()
    assert entry.run.__qualname__.startswith("straight_line")


def test_outputs_without_a_gradient_leave_the_backward_correct():
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 4)

        def forward(self, x):
            h = self.body(x)
            return h.argmax(-1), h.sum(), h * 2

    ember.manual_seed(8)
    eager = TwoHeads()
    model = TwoHeads()
    model.load_state_dict(eager.state_dict())
    compiled = ember.compile(model)
    x = ember.randn(3, 4)
    (ie, se, de), (ic, sc, dc) = eager(x), compiled(x)
    exact(ic, ie)
    exact(sc, se)
    se.backward()
    sc.backward()                                  # the third output gets no gradient: zeros for it
    exact(model.body.weight.grad, eager.body.weight.grad)


def test_compile_counts_match_torchs_for_sizes_1_to_64_and_a_changing_batch():
    from torch._dynamo.utils import counters

    def torch_graphs(dynamic, sizes) -> int:
        torch._dynamo.reset()
        counters.clear()
        compiled = torch.compile(torch.nn.Linear(6, 3), backend="eager", dynamic=dynamic)
        for n in sizes:
            compiled(torch.randn(n, 6))
        return counters["stats"]["unique_graphs"]

    model = nn.Linear(6, 3)
    for dynamic, sizes in ((True, range(1, 65)), (None, (3, 5, 7, 2, 64))):
        compiled = ember.compile(model, dynamic=dynamic)
        for n in sizes:
            x = ember.randn(n, 6)
            exact(compiled(x), model(x))
        assert compiled._code.compiles == torch_graphs(dynamic, sizes) == 2        # size 1 is specialised
        assert not compiled._code.graph_breaks                  # (the fixed in-features specialised, not broken)


def test_a_whole_training_step_with_backward_inside_is_a_graph_break_then_recorded_and_replayed():
    """The capture cannot take `loss.backward()`: a graph break, after which the step is recorded as it runs
    and replayed (tests/test_compiler_step.py), as with mode="reduce-overhead"; fullgraph refuses it."""
    eager, model = mlp(), mlp()
    opt_e, opt_c = ember.optim.SGD(eager.parameters(), lr=0.1), ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = ember.randn(4, 6), ember.randint(0, 3, (4,))

    def step(m, opt):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(lambda: step(model, opt_c))
    for _ in range(4):
        close(compiled(), step(eager, opt_e))
    assert "cannot be captured (AutogradError" in compiled._code.graph_breaks[0].reason
    (slot,) = compiled._code._broken.slots.values()
    assert slot.program is not None
    for p, q in zip(eager.parameters(), model.parameters()):
        close(p, q)
    with pytest.raises(GraphBreakError, match="cannot be captured"):
        ember.compile(lambda: step(model, opt_c), fullgraph=True)()


def test_a_compiled_module_is_safe_to_call_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor

    model = mlp()
    compiled = ember.compile(model)
    xs = [ember.randn(n, 6) for n in (2, 3, 4, 2, 3, 4, 5, 2)]
    with ember.no_grad(), ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(compiled, xs))
        for x, out in zip(xs, outs):
            exact(out, model(x))


def test_a_strided_gradient_coming_back_is_made_contiguous_for_the_backward():
    eager, model = mlp(), mlp()
    compiled = ember.compile(model)
    x = ember.randn(5, 6)
    seed = ember.randn(3, 5).t()                       # a transposed (strided) gradient
    eager(x).backward(seed)
    compiled(x).backward(seed)
    for a, b in zip(eager.parameters(), model.parameters()):
        exact(b.grad, a.grad)


def test_reset_forgets_every_compiled_entry():
    model = mlp()
    compiled = ember.compile(model)
    compiled(ember.randn(2, 6))
    assert compiled._code.compiles == 1
    ember.compiler.reset()
    assert not compiled._code.entries
    compiled(ember.randn(2, 6))
    assert compiled._code.compiles == 1


def test_ember_logs_from_the_environment_print_recompiles_and_breaks():
    import os
    import subprocess

    code = ("import ember\n"
            "f = ember.compile(lambda x: x * 2 if x.sum() > 0 else x)\n"
            "f(ember.ones(2)); f(ember.ones(3))\n")
    env = dict(os.environ, EMBER_LOGS="recompiles,graph_breaks")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "[ember.compile graph_breaks] <lambda>: a branch on a tensor's value, decided when captured" in out.stderr
    assert "[ember.compile recompiles] recompiling <lambda>: input 0: size (2,) -> (3,)" in out.stderr
    bad = subprocess.run([sys.executable, "-c", "import ember; ember.compile(len)(1)"], capture_output=True,
                         text=True, env=dict(os.environ, EMBER_LOGS="recompile"), timeout=120)
    assert "EMBER_LOGS: unknown kinds ['recompile']" in bad.stderr


def test_inputs_with_other_strides_or_a_storage_offset_get_their_own_program_and_eagers_values():
    """A program decomposed for contiguous inputs (a reshape there is a view) or for inputs at their
    storage's start (native replay's views start there) must not run on others: strides and storage
    offset are guards, and each input layout gets eager's values."""
    def product(q, k):
        return (q @ k.transpose(-2, -1)) * 0.5
    ember.manual_seed(0)
    qkv = ember.randn(3, 5, 48)
    q, k, _ = (t.view(3, 5, 2, 8).transpose(1, 2) for t in qkv.split(16, dim=2))
    compiled = ember.compile(product)
    with ember.no_grad():
        for a, b in [(q.contiguous(), k.contiguous()), (q, k), (k, q), (q.contiguous(), k)]:
            np.testing.assert_allclose(compiled(a, b).numpy(), product(a, b).numpy(), rtol=1e-6, atol=1e-6)
    assert compiled._code.compiles == 4
