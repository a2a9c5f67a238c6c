"""ember.export: capture at the dispatcher, run the captured program, and its guards.

The models are the ones users train with ember (the examples' CNN and nanoGPT, the GPT-2 of
ember.testing.models, an MLP) and one with buffers written in place; each exported program must
give eager's result exactly (the same registry ops with the same arguments, in the same order).
"""
from __future__ import annotations

import copy
import operator
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.export import GuardError, InputKind, export
from ember.testing.models import GPT2Config, build_gpt2

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import char_gpt  # noqa: E402
import digits_cnn  # noqa: E402

nn, F = ember.nn, ember.nn.functional


def exact(a, b) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def call_ops(ep) -> list[str]:
    return [n.target.name for n in ep.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]


@pytest.fixture(scope="module")
def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def test_mlp_exports_and_runs_exactly_as_eager(mlp):
    x = ember.randn(4, 6)
    ep = export(mlp, (x,))
    exact(ep.module()(x), mlp(x))
    exact(ep(x)[0] if isinstance(ep(x), tuple) else ep(x), mlp(x))
    assert call_ops(ep) == ["linear", "relu", "linear"]
    sig = ep.graph_signature
    assert sig.parameters == ["0.weight", "0.bias", "2.weight", "2.bias"] and sig.buffers == []
    assert sig.user_inputs == ["input"] and len(sig.user_outputs) == 1
    assert set(ep.state_dict) == set(mlp.state_dict())
    assert all(ep.state_dict[k] is v for k, v in mlp.named_parameters())
    text = str(ep)
    assert "ember.ops.linear(input, p_0_weight, p_0_bias)" in text and 'input: "f32[4, 6]"' in text
    assert "p_0_weight: PARAMETER target='0.weight'" in text


def test_the_export_computes_nothing_on_the_inputs(mlp):
    calls = []

    class Spy(nn.Module):
        def forward(self, x):
            calls.append(type(x._data).__name__)
            return mlp(x)
    export(Spy(), (ember.randn(4, 6),))
    assert calls == ["MetaArray"]


def test_digits_cnn_in_eval_with_batch_norm():
    ember.manual_seed(1)
    net = digits_cnn.cnn_model(ember)()
    model = nn.Sequential(nn.BatchNorm2d(1), net).eval()
    model[0].running_mean.fill_(0.25)
    model[0].running_var.fill_(2.0)
    x = ember.randn(5, 1, 8, 8)
    ep = export(model, (x,))
    exact(ep.module()(x), model(x))
    assert call_ops(ep) == ["batch_norm", "conv2d", "relu", "conv2d", "relu", "max_pool2d", "dropout", "reshape",
                            "linear", "relu", "dropout", "linear", "log_softmax.int"]
    assert ep.graph_signature.buffers == ["0.running_mean", "0.running_var", "0.num_batches_tracked"]


def test_nanogpt_with_masked_fill_softmax_and_a_non_persistent_mask():
    ember.manual_seed(2)
    cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    model = char_gpt.gpt_model(ember)(cfg).eval()
    idx = ember.randint(0, 20, (2, 8))
    ep = export(model, (idx,))
    (want, no_loss), (got, none) = model(idx), ep.module()(idx)
    exact(got, want)
    assert no_loss is None and none is None
    ops = call_ops(ep)
    assert "masked_fill.Scalar" in ops and "softmax.int" in ops
    masks = [s for s in ep.graph_signature.input_specs if s.kind is InputKind.BUFFER]
    assert masks and all(s.persistent is False for s in masks)
    assert all(s.target not in ep.state_dict and s.target in ep.constants for s in masks)


def test_gpt2_with_sdpa_and_tied_weights():
    ember.manual_seed(3)
    cfg = GPT2Config(vocab_size=40, n_ctx=12, n_embd=16, n_layer=2, n_head=2)
    model = build_gpt2(cfg, lib=ember).eval()
    idx = ember.randint(0, 40, (3, 10))
    ep = export(model, (idx,))
    exact(ep.module()(idx), model(idx))
    assert call_ops(ep).count("scaled_dot_product_attention") == 2 and call_ops(ep)[:2] == ["arange",
                                                                                             "embedding"]
    params = ep.graph_signature.parameters
    assert "wte.weight" in params and "lm_head.weight" not in params          # tied: one placeholder
    assert len(params) == len(list(model.parameters()))


def test_buffers_written_in_place_are_written_when_the_program_runs():
    ember.manual_seed(4)
    model = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU()).train()
    twin = copy.deepcopy(model)
    x = ember.randn(6, 5)
    ep = export(model, (x,))
    # the export ran on fakes: the real statistics are untouched
    exact(model[1].running_mean, twin[1].running_mean)
    assert int(model[1].num_batches_tracked) == 0
    # as in torch.export's IR: the counter's add_ declares its write; batch_norm writes the running
    # statistics inside, as eager's batch_norm does
    assert set(ep.graph_signature.buffers_to_mutate.values()) == {"1.num_batches_tracked"}
    assert "add_.Tensor" in call_ops(ep) and "batch_norm" in call_ops(ep)
    run = ep.module()
    for _ in range(2):
        exact(run(x), twin(x))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        exact(dict(run.named_buffers())[f"1.{name}"], getattr(twin[1], name))


def test_guards_name_the_input_and_what_it_was_exported_with(mlp):
    ep = export(mlp, (ember.randn(4, 6),))
    run = ep.module()
    with pytest.raises(GuardError, match=r"Guard failed: args\[0\]\.size\(\)\[0\] == 4 \(got 7"):
        run(ember.randn(7, 6))
    with pytest.raises(AssertionError, match=r"args\[0\]\.dtype == ember.float32 \(got ember.float64\)"):
        run(ember.randn(4, 6, dtype=ember.float64))
    with pytest.raises(GuardError, match=r"args\[0\]\.dim\(\) == 2"):
        run(ember.randn(4, 6, 1))


def test_non_tensor_inputs_are_specialised_and_guarded():
    class Scale(nn.Module):
        def forward(self, x, *, factor=2.0, flip=False):
            y = x * factor
            return -y if flip else y

    x = ember.randn(3)
    ep = export(Scale(), (x,), {"factor": 3.0, "flip": True})
    exact(ep.module()(x, factor=3.0, flip=True), -(x * 3.0))
    assert call_ops(ep) == ["mul.Tensor", "neg"]
    with pytest.raises(GuardError, match=r"kwargs\['flip'\] == True"):
        ep.module()(x, factor=3.0, flip=False)


def test_tensors_made_inside_forward_become_lifted_constants():
    class Shift(nn.Module):
        def forward(self, x):
            return x + ember.tensor([1.0, 2.0, 3.0]) * ember.arange(3, device=x.device)

    x = ember.randn(2, 3)
    ep = export(Shift(), (x,))
    exact(ep.module()(x), Shift()(x))
    consts = ep.graph_signature.lifted_tensor_constants
    assert len(consts) == 1
    exact(ep.constants[consts[0]], ember.tensor([1.0, 2.0, 3.0]))
    kinds = [s.kind for s in ep.graph_signature.input_specs]
    assert kinds == [InputKind.CONSTANT_TENSOR, InputKind.USER_INPUT]


def test_nested_inputs_and_outputs_keep_their_structure():
    class Pair(nn.Module):
        def forward(self, xs, extra):
            a, b = xs
            return {"sum": a + b, "rest": [a * extra["k"], None]}

    a, b, k = ember.randn(2), ember.randn(2), ember.randn(2)
    ep = export(Pair(), ((a, b), {"k": k}))
    out = ep.module()((a, b), {"k": k})
    assert set(out) == {"sum", "rest"} and out["rest"][1] is None
    exact(out["sum"], a + b)
    exact(out["rest"][0], a * k)
    assert ep.graph_signature.user_inputs == ["xs_0", "xs_1", "extra_k"]


def test_a_model_on_meta_exports_without_data():
    cfg = GPT2Config(vocab_size=1000, n_ctx=64, n_embd=64, n_layer=2, n_head=4)
    model = build_gpt2(cfg, lib=ember, device="meta")
    ep = export(model, (ember.empty(2, 64, dtype=ember.int64, device="meta"),))
    out = ep.graph.output_node.args[0][0].meta["val"]
    assert tuple(out.shape) == (2, 64, 1000) and out.device == ember.device("meta")


def test_the_program_module_has_the_original_state_names(mlp):
    ep = export(mlp, (ember.randn(4, 6),))
    run = ep.module()
    assert list(run.state_dict()) == list(mlp.state_dict())
    assert all(dict(run.named_parameters())[k] is v for k, v in mlp.named_parameters())


def test_bad_arguments_are_type_errors(mlp):
    with pytest.raises(TypeError, match="expected an ember.nn.Module"):
        export(lambda x: x, (ember.ones(1),))
    with pytest.raises(TypeError, match="expected a tuple of positional inputs"):
        export(mlp, ember.ones(4, 6))


# ------------------------------------------------------------------ run_decompositions
sys.path.insert(0, str(Path(__file__).resolve().parent / "plugins"))
import ember_primdev  # noqa: E402

ember.backends.register("primdev", ember_primdev)


def _models():
    ember.manual_seed(5)
    cnn = nn.Sequential(nn.BatchNorm2d(1), digits_cnn.cnn_model(ember)()).eval()
    gpt_cfg = char_gpt.GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.0)
    return {
        "mlp": (nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), ember.randn(4, 6)),
        "cnn": (cnn, ember.randn(3, 1, 8, 8)),
        "nanogpt": (char_gpt.gpt_model(ember)(gpt_cfg).eval(), ember.randint(0, 20, (2, 8))),
        "gpt2": (build_gpt2(GPT2Config(vocab_size=40, n_ctx=12, n_embd=16, n_layer=1, n_head=2), lib=ember).eval(),
                 ember.randint(0, 40, (3, 10))),
        "batch_norm_training": (nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8)).train(), ember.randn(6, 5)),
    }


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", ["mlp", "cnn", "nanogpt", "gpt2", "batch_norm_training"])
def test_run_decompositions_leaves_primitives_that_compute_what_a_primitives_only_backend_does(name):
    from ember.dispatcher import primitive_ops

    model, x = _models()[name]
    on_primdev, on_cpu = copy.deepcopy(model).to("primdev"), copy.deepcopy(model)
    decomposed = export(model, (x,)).run_decompositions()
    ops = set(call_ops(decomposed))
    assert ops and ops <= set(primitive_ops()), sorted(ops - set(primitive_ops()))
    got = _first(decomposed.module()(x))
    # the same kernels in the same order as eager on a backend that has only the primitives
    exact(got, _first(on_primdev(x.to("primdev"))).cpu())
    # and cpu's eager result, up to the rounding of its fused kernels (layer_norm, softmax, ...)
    np.testing.assert_allclose(got.detach().numpy(), _first(on_cpu(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    if name == "batch_norm_training":
        for buffer in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
            exact(dict(model.named_buffers())[buffer], dict(on_primdev.named_buffers())[buffer].cpu())


def test_a_decomposition_table_keeps_or_replaces_ops():
    model, x = _models()["mlp"]
    ep = export(model, (x,))
    kept = call_ops(ep.run_decompositions({"linear": None}))
    assert kept.count("linear") == 2 and "relu" not in kept          # relu is not a primitive

    def linear_as_matmul(input, weight, bias=None):
        return ember.matmul(input, weight.t()) + bias

    replaced = ep.run_decompositions({"linear": linear_as_matmul})
    assert "linear" not in call_ops(replaced) and "bmm" in call_ops(replaced)
    np.testing.assert_allclose(replaced.module()(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert replaced.graph_signature.user_inputs == ep.graph_signature.user_inputs == ["input"]


def test_a_llama_7b_shaped_model_exports_on_meta_quickly_and_without_its_weights():
    import subprocess

    script = (
        "import resource, time, ember\n"
        "from ember.testing.models import build_llama\n"
        "from ember.export import export\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "start = time.perf_counter()\n"
        "model = build_llama(lib=ember, device='meta')\n"
        "ep = export(model, (ember.empty(1, 2048, dtype=ember.int64, device='meta'),))\n"
        "took = time.perf_counter() - start\n"
        "grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024\n"
        "n = sum(p.numel() for p in model.parameters())\n"
        "print(n, len(ep.graph.nodes), took, grew)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    params, nodes, seconds, megabytes = proc.stdout.split()
    assert int(params) == 6_738_415_616 and int(nodes) > 1000
    assert float(seconds) < 10 and float(megabytes) < 300, (seconds, megabytes)


# ------------------------------------------------------------------ programs that touch state or grad mode
def test_detach_inside_forward_is_an_alias_cut_from_autograd():
    class Det(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.tensor([2.0, 3.0]))

        def forward(self, x):
            return x.detach() * 2 + self.w.detach() * x

    model = Det()
    ep = export(model, (ember.ones(2),))
    x = ember.full((2,), 5.0)
    exact(ep.module()(x), model(x))
    assert ep.constants == {}
    assert call_ops(ep).count("alias") == 2
    run, xr = ep.module(), ember.full((2,), 5.0, requires_grad=True)
    run(xr).sum().backward()
    np.testing.assert_array_equal(xr.grad.numpy(), [2.0, 3.0])         # eager: only w.detach() * x has a grad
    assert run.w.grad is None


def test_no_grad_regions_run_without_grad_and_give_eager_gradients():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2))

        def forward(self, x):
            with ember.no_grad():
                t = x * self.w
            return t + self.w

    eager, program = M(), export(M(), (ember.ones(2),)).module()
    eager(ember.ones(2)).sum().backward()
    program(ember.ones(2)).sum().backward()
    exact(program.w.grad, eager.w.grad)


def test_a_buffer_reassigned_in_forward_leaves_the_module_alone_and_is_updated_by_the_program():
    class R(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", ember.zeros(2))

        def forward(self, x):
            self.b = self.b + x
            return self.b * 1

    model = R()
    ep = export(model, (ember.ones(2),))
    assert model.b.device == ember.device("cpu") and model.b.tolist() == [0.0, 0.0]
    run = ep.module()
    assert run(ember.ones(2)).tolist() == [1.0, 1.0] and run(ember.ones(2)).tolist() == [2.0, 2.0]


def test_a_constant_returned_as_an_output_is_kept():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.tensor([2.0, 3.0])          # a plain attribute, not a buffer

        def forward(self, x):
            return x + 1, self.scale

    ep = export(M(), (ember.ones(2),))
    out, scale = ep.module()(ember.ones(2))
    assert scale.tolist() == [2.0, 3.0] and out.tolist() == [2.0, 2.0]


def test_keyword_and_dict_inputs_may_come_in_any_order():
    class M(nn.Module):
        def forward(self, d, *, a, b):
            return d["x"] - d["y"] + a * b

    x, y, a, b = ember.randn(2), ember.randn(2), ember.randn(2), ember.randn(2)
    ep = export(M(), ({"x": x, "y": y},), {"a": a, "b": b})
    exact(ep.module()({"y": y, "x": x}, b=b, a=a), M()({"x": x, "y": y}, a=a, b=b))
    with pytest.raises(GuardError, match=r"has keys"):
        ep.module()({"x": x}, a=a, b=b)


def test_reading_a_traced_value_names_the_problem():
    class Branchy(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(RuntimeError, match=r"reads a traced tensor's values .* an export cannot follow"):
        export(Branchy(), (ember.ones(2),))


def test_non_tensor_guards_compare_types_too():
    class Flag(nn.Module):
        def forward(self, x, k):
            return x * k

    ep = export(Flag(), (ember.ones(2), 1))
    with pytest.raises(GuardError, match=r"args\[1\] == 1"):
        ep.module()(ember.ones(2), True)


def test_writes_through_a_view_of_a_buffer_are_listed():
    class W(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", ember.zeros(3))

        def forward(self, x):
            self.b[0] = 5.0
            return x + self.b

    ep = export(W(), (ember.ones(3),))
    assert list(ep.graph_signature.buffers_to_mutate.values()) == ["b"]
    run = ep.module()
    assert run(ember.ones(3)).tolist() == [6.0, 1.0, 1.0]
