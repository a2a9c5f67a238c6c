"""The benchmark workloads (asv_benchmarks/workloads.py, shared by the asv suite and compare.py)
run, and ember's and torch's training workloads compute the same values from the same weights,
so compare.py's ratios compare the same computation (and the numpy MLP is the same step too).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from asv_benchmarks import compare, conv_workloads as C, workloads as W  # noqa: E402

import ember  # noqa: E402
from ember.testing.models import GPT2Config  # noqa: E402

SMALL_GPT2 = GPT2Config(vocab_size=512, n_ctx=64, n_embd=128, n_head=4, n_layer=2)


def _value(x) -> float:
    return float(x) if isinstance(x, float) else float(x.detach().numpy())


@pytest.fixture(autouse=True)
def _no_inductor(monkeypatch):
    """torch.compile's variant runs torch eager here: inductor's compile takes tens of seconds (compare.py's
    to pay); ember's compiled variants run for real."""
    monkeypatch.setattr(W, "torch_compile", lambda model: model)


@pytest.fixture(autouse=True)
def _small_gpt2(monkeypatch):
    """GPT-2 small's inference rows run a 2-layer GPT-2 here: drawing 124M weights per framework takes seconds
    (compare.py's and asv's to pay)."""
    monkeypatch.setattr(W, "gpt2_inference_config", lambda: SMALL_GPT2)


@pytest.mark.parametrize("row", compare.headline_rows() + compare.extra_rows(), ids=lambda r: r.label)
def test_compare_rows_run(row):
    variants = compare.build_variants(row)
    assert {"ember", "torch"} <= set(variants), row.label
    results = {fw: fn() for fw, fn in variants.items()}
    if row.label.endswith(("256x256", "(8,)")) and "numpy" in results:   # same values in every framework
        for fw in ("ember", "torch"):
            np.testing.assert_allclose(np.asarray(results[fw].detach().numpy()), np.asarray(results["numpy"]),
                                       rtol=1e-5, atol=1e-5, err_msg=f"{row.label}: {fw} vs numpy")


def test_matmul_values():
    a, b = W._medium("numpy", n=64)
    expected = a @ b
    for fw in ("ember", "torch"):
        got = W.matmul(fw, n=64)().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=fw)


@pytest.mark.parametrize("optimizer", W.OPTIMIZERS)
def test_mlp_step_same_losses(optimizer):
    """Three steps from the same weights: the losses agree, so forward, backward and update do too."""
    steps = {fw: W.mlp_step(fw, optimizer) for fw in W.FRAMEWORKS}
    losses = {fw: [_value(step()) for _ in range(3)] for fw, step in steps.items()}
    assert losses["torch"][2] < losses["torch"][0]                    # it trains
    for fw in ("ember", "numpy"):
        np.testing.assert_allclose(losses[fw], losses["torch"], rtol=1e-5, err_msg=f"{fw} vs torch ({optimizer})")


def test_gpt_block_same_loss_and_grads():
    steps = {fw: W.gpt_block_step(fw) for fw in ("ember", "torch")}
    losses = {fw: _value(step()) for fw, step in steps.items()}
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)
    grads = {fw: {n: p.grad.numpy() for n, p in step.block.named_parameters()} for fw, step in steps.items()}
    assert grads["ember"].keys() == grads["torch"].keys()
    for name, g in grads["torch"].items():
        np.testing.assert_allclose(grads["ember"][name], g, rtol=1e-4, atol=1e-6, err_msg=name)


def test_compiled_gpt_block_gives_the_eager_loss_grads_and_outputs():
    eager, compiled = W.gpt_block_step("ember"), W.gpt_block_step("ember", compiled=True)
    np.testing.assert_array_equal(_value(compiled()), _value(eager()))
    for (name, p), q in zip(eager.block.named_parameters(), compiled.block.parameters()):
        np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy(), err_msg=name)
    outs = [W.gpt_block_inference(fw, compiled=c)() for fw, c in (("ember", True), ("ember", False), ("torch", False))]
    np.testing.assert_array_equal(outs[0].numpy(), outs[1].numpy())
    np.testing.assert_allclose(outs[0].numpy(), outs[2].numpy(), rtol=1e-4, atol=1e-5)


def test_lstm_lm_step_same_losses():
    """compare.py's LSTM language-model row times the same computation in both: three steps' losses agree
    (the state carried from step to step)."""
    steps = {fw: W.lstm_lm_step(fw) for fw in ("ember", "torch")}
    losses = {fw: [_value(step().detach()) for _ in range(3)] for fw, step in steps.items()}
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)


def test_nanogpt_numpy_variant_is_the_steps_matrix_products():
    """compare.py's numpy column of the nanoGPT rows (the floor under any step) runs the products ember's
    step runs: the FLOP counter's count of ember's step is theirs, to the FLOP, and the scores attention's
    backward recomputes (q @ k.T once more per layer: it saves no weights, as a flash attention)."""
    from ember.utils.flop_counter import FlopCounterMode

    step, gemms = W.nanogpt_step("ember"), W.nanogpt_step("numpy")
    with FlopCounterMode(display=False) as counter:
        step()
    flops = sum(2 * np.prod(a) * b[-1] for a, b in gemms.shapes)
    C, T, H, L = (W.NANOGPT[k] for k in ("n_embd", "n_ctx", "n_head", "n_layer"))
    recomputed = L * 2 * W.NANOGPT_BATCH * H * T * (C // H) * T
    assert counter.get_total_flops() == flops + recomputed and flops == 1_409_286_144
    assert len(gemms.shapes) == 39 and gemms().shape == gemms.shapes[-1][0][:-1] + gemms.shapes[-1][1][-1:]


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_nanogpt_step_same_losses_eager_and_compiled(approximate):
    """Three AdamW steps from the same weights: ember's losses are torch's, and ember.compile's are eager's."""
    steps = {"torch": W.nanogpt_step("torch", approximate=approximate),
             "ember": W.nanogpt_step("ember", approximate=approximate),
             "compiled": W.nanogpt_step("ember", compiled=True, approximate=approximate)}
    losses = {name: [_value(step()) for _ in range(3)] for name, step in steps.items()}
    assert losses["torch"][2] < losses["torch"][0]
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)
    np.testing.assert_allclose(losses["compiled"], losses["ember"], rtol=1e-6)


@pytest.mark.parametrize("compiled, dtype, rtol", [(True, "float32", 1e-5), ("step", "float32", 1e-5),
                                                   ("step", "float64", 1e-10)])
def test_twenty_compiled_nanogpt_steps_keep_eagers_losses(compiled, dtype, rtol):
    """The whole step recorded and replayed (as compare.py times it), and the model compiled (its joint
    graph, which the recorded step's replay of a GPT does not use)."""
    eager, compiled = W.nanogpt_step("ember", dtype=dtype), W.nanogpt_step("ember", compiled=compiled, dtype=dtype)
    losses = [(_value(eager()), _value(compiled())) for _ in range(20)]
    np.testing.assert_allclose([c for _, c in losses], [e for e, _ in losses], rtol=rtol)
    assert losses[-1][0] < losses[0][0]


def test_cnn_step_same_losses():
    """examples/digits_cnn.py's step (dropout off: ember's and torch's masks differ): three Adadelta steps
    from the same weights give the same losses, so forward, backward and update agree."""
    steps = {fw: C.cnn_step(fw, dropout=(0.0, 0.0)) for fw in ("ember", "torch")}
    losses = {fw: [step() for _ in range(3)] for fw, step in steps.items()}
    assert losses["torch"][2] < losses["torch"][0]
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)


def test_cnn_step_trains_the_examples_model_with_its_dropout():
    """What asv and compare.py time: the example's own network, in training mode with the example's dropout."""
    step = C.cnn_step("ember")
    net = type(step.model)
    assert (net.__module__, net.__qualname__) == (C.example("digits_cnn").__name__, "cnn_model.<locals>.Net")
    assert step.model.training and (step.model.dropout1.p, step.model.dropout2.p) == (0.25, 0.5)
    assert np.isfinite(step())


def test_resnet_blocks_same_loss_gradients_and_running_statistics():
    """ResNet's basic blocks in ember and torch from the same weights: the same loss twice (the running
    statistics updated between), the same weight gradients, the same running statistics after."""
    steps = {fw: C.resnet_blocks_step(fw) for fw in ("ember", "torch")}
    losses = {fw: [float(step().detach()) for _ in range(2)] for fw, step in steps.items()}
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-5)
    ember_state = dict(steps["ember"].model.named_parameters())
    for name, p in steps["torch"].model.named_parameters():
        np.testing.assert_allclose(ember_state[name].grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    ember_buffers = dict(steps["ember"].model.named_buffers())
    for name, b in steps["torch"].model.named_buffers():
        np.testing.assert_allclose(ember_buffers[name].numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(ember_buffers) == 15 and sum(p.dim() == 4 for p in ember_state.values()) == 5


def test_gpt2_inference_same_logits_on_a_small_config():
    """gpt2_small_inference's forward, on a 2-layer GPT-2 (vocabulary 512, 128 wide, 4 heads) rather than
    GPT-2 small, whose 124M weights take seconds to draw in each framework: the same logits."""
    logits = {fw: W.gpt2_small_inference(fw, tokens=32, config=SMALL_GPT2)() for fw in ("ember", "torch")}
    assert not logits["ember"].requires_grad and tuple(logits["ember"].shape) == (1, 32, 512)
    expected = logits["torch"].numpy()
    np.testing.assert_allclose(logits["ember"].numpy(), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    assert W.gpt2_model("ember", SMALL_GPT2) is W.gpt2_model("ember", SMALL_GPT2)     # built once per process
    for fw in ("ember", "torch"):
        model = W.gpt2_model(fw, SMALL_GPT2)
        assert model.lm_head.weight is model.wte.weight


@pytest.mark.parametrize("optimizer", W.ADAM_VARIANTS)
def test_optimizer_step_same_parameters_after_three_steps(optimizer):
    steps = {fw: W.optimizer_step(fw, optimizer) for fw in W.FRAMEWORKS}
    before = [p.detach().numpy().copy() for p in steps["torch"].params]
    assert len(before) == 100 and sum(p.size for p in before) == 3_500_800
    for step in steps.values():
        step(), step(), step()
    params = {fw: [np.asarray(p if fw == "numpy" else p.detach().numpy()) for p in step.params]
              for fw, step in steps.items()}
    for fw in ("ember", "numpy"):
        for i, (got, expected) in enumerate(zip(params[fw], params["torch"])):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-8, err_msg=f"{fw} {optimizer} param {i}")
    assert not np.allclose(params["torch"][0], before[0], rtol=1e-3)


def test_cold_start_programs_print_the_same_loss():
    """cold_start_code's program, in a fresh interpreter per framework: it runs, and its loss and updated
    weights are torch's."""
    import subprocess

    runs = {fw: subprocess.Popen([sys.executable, "-c", W.cold_start_code(fw)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for fw in ("ember", "torch")}   # side by side
    printed = {}
    for fw, run in runs.items():
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, (fw, err)
        printed[fw] = [float(v) for v in out.split()]
    assert len(printed["torch"]) == 2 and printed["torch"][0] > 1.0
    np.testing.assert_allclose(printed["ember"], printed["torch"], rtol=1e-5)


def test_gpt2_meta_same_parameter_count():
    counts = {fw: sum(p.numel() for p in W.gpt2_small_meta(fw)().parameters()) for fw in ("ember", "torch")}
    assert counts["ember"] == counts["torch"] == 124_439_808
    assert W.gpt2_small_meta("ember")().wte.weight.device == ember.device("meta")


def test_targets_and_table_format():
    times = {"ember": 1.4e-6, "torch": 1e-6, "numpy": 2e-6}
    assert compare.at_most("torch", 1.5).met(times) and not compare.at_most("torch", 1.0).met(times)
    assert compare.throughput_at_least("numpy", 0.95).met({"ember": 1.05e-3, "numpy": 1e-3})
    assert not compare.throughput_at_least("numpy", 0.95).met({"ember": 1.06e-3, "numpy": 1e-3})
    line = compare.format_row("a + b", times, compare.at_most("torch", 1.5))
    assert "1.40x" in line and "0.70x" in line and line.endswith("MET")
    assert compare.format_row("x", {"ember": 2e-3, "torch": 1e-3}, compare.at_most("torch", 1.0)).endswith("MISSED")


def test_unknown_framework_is_a_clear_error():
    with pytest.raises(ValueError, match="workloads: framework must be one of .* got 'jax'"):
        W.lib_of("jax")
    with pytest.raises(NotImplementedError, match="gpt_block_step: no numpy counterpart"):
        W.gpt_block_step("numpy")
    with pytest.raises(ValueError, match="workloads: framework must be one of .* got 'jax'"):
        W.cold_start_code("jax")
    with pytest.raises(ValueError, match="optimizer_step: optimizer must be one of .* got 'sgd'"):
        W.optimizer_step("torch", "sgd")


def test_memory_benchmarks_run():
    """bench_memory's classes run as asv runs them: the timed step under each tracking mode, and the
    side-by-side ratio (one short round here; a ratio is positive and finite, the tracker exits)."""
    from asv_benchmarks import bench_memory
    from ember.frontend import tensor as tensor_mod

    for tracking in bench_memory.TrainingStepTracked.params:
        bench = bench_memory.TrainingStepTracked()
        bench.setup(tracking)
        bench.time_step(tracking)
        assert (tensor_mod.ALLOC_HOOK is None) == (tracking == "off")
        bench.teardown(tracking)
    assert tensor_mod.ALLOC_HOOK is None
    for tracking in bench_memory.TrackerOverhead.params:
        bench = bench_memory.TrackerOverhead()
        bench.rounds, bench.steps_per_block = 2, 1
        bench.setup(tracking)
        assert 0 < bench.track_ratio(tracking) < float("inf")
        assert tensor_mod.ALLOC_HOOK is None


def test_the_documented_asv_commands_work_on_a_machine_asv_has_never_seen(tmp_path):
    """docs/performance.md's asv commands in order, with a HOME that holds no ~/.asv-machine.json:
    `asv machine --yes` records the machine, after which a run starts (dry: nothing saved)."""
    import os
    import subprocess

    asv = str(Path(sys.executable).with_name("asv"))
    env = {**os.environ, "HOME": str(tmp_path)}
    root = Path(__file__).resolve().parents[1]
    run = ["run", "--python=same", "--quick", "--dry-run", "--bench", "bench_import.Import"]
    for args in (["machine", "--yes"], ["check", "--python=same"], run):
        done = subprocess.run([asv, *args], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "asv machine --yes" not in done.stdout, (args, done.stdout, done.stderr)
    assert (tmp_path / ".asv-machine.json").is_file()


def test_a_compiled_training_step_peaks_no_higher_than_the_eager_step(monkeypatch):
    """tracemalloc's peak over one nanoGPT-style step (after the warm-up steps): the compiled model's joint
    graph frees each saved value and incoming gradient after its last use, as eager autograd does, and so
    does the replay of the whole step recorded (mode="reduce-overhead"). Against eager autograd keeping the
    outputs it can recompute (GELU's, layer norm's), as the joint graph's partition keeps them."""
    import tracemalloc

    from ember.frontend.autograd import graph

    monkeypatch.setattr(graph, "RECOMPUTE_SAVED_OUTPUTS", False)
    peaks = {}
    for compiled in (False, True, "step"):
        step = W.nanogpt_step("ember", compiled=compiled)
        step(), step(), step()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            step()
            peaks[compiled] = tracemalloc.get_traced_memory()[1] - start
        finally:
            tracemalloc.stop()
    assert peaks[True] <= peaks[False] and peaks["step"] <= peaks[False], peaks
