"""The meta prediction of a training step against independent measurements.

* A small GPT step (forward, backward, AdamW step) and an MLP step under autocast + GradScaler:
  the peak predicted on meta against the cpu peak that tracemalloc's numpy domain measures.
* The MLP, the small GPT and the digits CNN on opencl against the plugin's own allocation counters.
* `python -m ember.memory`: the closed-form model-state lines of a LLaMA-shaped config, --amp,
  --json, --plot and --measure.

The measurement (docs/memory.md, "The independent measurement") does not use ember.memory:
numpy reports every data buffer to tracemalloc under `np.lib.tracemalloc_domain`, and a bare
`ALLOC_HOOK` samples that domain's live bytes after every storage allocation (live bytes only
rise at allocations, so the largest sample is the peak, up to scratch a single numpy call
allocates and frees inside itself). One untraced step runs first, so that first-use caches
(kernel tables, lazily built constants) are not part of the measured step; tracemalloc starts
before the measured model is built, so parameters and inputs are traced.
"""
from __future__ import annotations

import gc
import json
import tracemalloc

import numpy as np
import pytest

import ember
import ember.memory
from ember import nn
from ember.frontend import tensor as tensor_mod
from ember.memory.cli import main
from ember.testing.models import GPT2Config, LlamaConfig, build_llama

from memory_steps import CASES, build_gpt as _build_gpt, build_mlp as _build_mlp, step_gpt as _step_gpt
from memory_steps import step_mlp as _step_fp32



def _amp_step(dtype):
    """One mixed-precision step as PyTorch's recipe has it: float32 parameters, forward and loss
    under autocast, and for float16 a GradScaler (scale, unscale + inf check, step, update)."""
    def step(model, opt, x, y):
        dev = x.device.type
        scaler = ember.amp.GradScaler(dev, enabled=dtype is ember.float16)
        with ember.autocast(dev, dtype=dtype):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
    return step


def _predict(build, step):
    model, opt, x, y = build("meta")
    with ember.memory.track(model=model, optimizer=opt) as mem:
        step(model, opt, x, y)
    return mem


def _numpy_domain_peak(build, step) -> tuple[int, int]:
    """(peak, live at the end) of numpy-domain bytes over one cpu step, measured without ember.memory."""
    model, opt, x, y = build("cpu")          # untraced warm-up step
    step(model, opt, x, y)
    del model, opt, x, y
    gc.collect()
    domain = np.lib.tracemalloc_domain

    def live() -> int:
        # the numpy domain's share of tracemalloc's live blocks: the (domain, size, traceback, ...) tuples
        # take_snapshot() is built from, read directly (a Snapshot and a DomainFilter per sample cost 5x
        # more: 25 s instead of 5 for the GPT step's ~800 samples)
        return sum(t[1] for t in tracemalloc._get_traces() if t[0] == domain)

    peak = [0]

    def sample(storage) -> None:
        peak[0] = max(peak[0], live())

    tracemalloc.start(1)
    try:
        model, opt, x, y = build("cpu")
        peak[0] = live()
        tensor_mod.ALLOC_HOOK = sample
        try:
            step(model, opt, x, y)
        finally:
            tensor_mod.ALLOC_HOOK = None
        end = live()
    finally:
        tracemalloc.stop()
    return peak[0], end


def _check_against_tracemalloc(name, build, step):
    predicted = _predict(build, step)
    measured, end = _numpy_domain_peak(build, step)
    err = (predicted.peak_bytes - measured) / measured
    err_end = (predicted.current_bytes - end) / end
    print(f"\n{name}: meta-predicted peak {predicted.peak_bytes} B, cpu numpy-domain peak (tracemalloc) "
          f"{measured} B: error {100 * err:+.3f}%; at exit {predicted.current_bytes} B vs {end} B ({100 * err_end:+.3f}%)")
    assert abs(err) <= 0.03
    assert abs(err_end) <= 0.03
    return predicted


def test_small_gpt_step_prediction_against_tracemalloc():
    _check_against_tracemalloc("gpt2 (2 layers, 64 wide, vocab 256, batch 2 x 32) AdamW step", _build_gpt, _step_gpt)


#: the GPT training step users size machines by: vocabulary 2048, 384 wide, 6 heads, 4 layers, batch 8 x 128
TRUE_PEAK_GPT = GPT2Config(vocab_size=2048, n_ctx=128, n_embd=384, n_layer=4, n_head=6)


def _build_true_peak_gpt(device):
    return _build_gpt(device, TRUE_PEAK_GPT, batch=8)


def test_gpt_step_prediction_against_tracemalloc_true_peak():
    """The peak a user sees: tracemalloc's own peak over a steady-state cpu step (after one step, so AdamW's
    state exists), scratch inside the kernels included, not samples taken at allocations. Its Python objects
    are the all-domain bytes live before the step less numpy's; the graph's objects made during the step
    count as numpy bytes here (a fraction of a percent). The cpu kernels keep their scratch in blocks
    (`ArrayModule.scratch_block`), so the step's storages are its peak."""
    model, opt, x, y = _build_true_peak_gpt("meta")
    _step_gpt(model, opt, x, y)
    with ember.memory.track(model=model, optimizer=opt) as predicted:
        _step_gpt(model, opt, x, y)
    domain = np.lib.tracemalloc_domain
    tracemalloc.start(1)
    try:
        model, opt, x, y = _build_true_peak_gpt("cpu")
        _step_gpt(model, opt, x, y)
        gc.collect()
        python_bytes = tracemalloc.get_traced_memory()[0] - sum(t[1] for t in tracemalloc._get_traces() if t[0] == domain)
        tracemalloc.reset_peak()
        _step_gpt(model, opt, x, y)
        true_peak = tracemalloc.get_traced_memory()[1] - python_bytes
    finally:
        tracemalloc.stop()
    err = (predicted.peak_bytes - true_peak) / true_peak
    print(f"\ngpt (4 layers, 384 wide, vocab 2048, batch 8 x 128) AdamW step: meta-predicted peak "
          f"{predicted.peak_bytes / 2**20:.1f} MiB, cpu true peak (tracemalloc's own) {true_peak / 2**20:.1f} MiB: "
          f"error {100 * err:+.2f}%")
    assert abs(err) <= 0.03


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_amp_step_prediction_against_tracemalloc(dtype):
    step = _amp_step(getattr(ember, dtype))
    scaler = " + GradScaler" if dtype == "float16" else ""
    _check_against_tracemalloc(f"mlp AdamW step, autocast {dtype}{scaler}", _build_mlp, step)


def test_amp_breakdown_half_size_activations_float32_state():
    fp32 = _predict(_build_mlp, _step_fp32)
    amp = _predict(_build_mlp, _amp_step(ember.float16))
    n_params = 128 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10
    for mem in (fp32, amp):                  # model state stays float32 under autocast
        b = mem.breakdown
        assert b["parameters"]["max"] == b["gradients"]["max"] == 4 * n_params
        assert b["optimizer_state"]["max"] == 2 * 4 * n_params + 4 * 6     # moments + six float32 `step`s

    def forward_activations(mem):
        return [(e["module"], e["bytes"]) for e in mem.timeline
                if e["kind"] == "alloc" and e["phase"] == "forward" and e["category"] == "activations"]

    # float32: the ReLU outputs (64 x 256) are the activations the layers allocate (Linear saves its
    # input and the weight Parameter itself); the logits are not saved: cross_entropy keeps the
    # log-probabilities it computes (64 x 10), outside the modules, as torch's log_softmax does
    assert forward_activations(fp32) == [("Sequential.1", 64 * 256 * 4), ("Sequential.3", 64 * 256 * 4)]
    for mem in (fp32, amp):                  # float32 under autocast too (cross_entropy runs in float32)
        assert [e["bytes"] for e in mem.timeline if e["kind"] == "alloc" and e["category"] == "activations"
                and e["module"] == "Global" and e["op"] == "_cross_entropy_indices"] == [64 * 10 * 4]
    # autocast float16: the same ReLU outputs at half the size, plus the float16 casts Linear saves:
    # the input of the first layer and the weights of the others (grad of their input needs them); the
    # float16 logits are not saved (cross_entropy saves its float32 log-probabilities, outside the modules)
    assert forward_activations(amp) == [("Sequential.0", 64 * 128 * 2), ("Sequential.1", 64 * 256 * 2),
                                        ("Sequential.2", 256 * 256 * 2), ("Sequential.3", 64 * 256 * 2),
                                        ("Sequential.4", 10 * 256 * 2)]




@pytest.mark.filterwarnings("ignore:normal_. backend .opencl. has no kernel")
@pytest.mark.parametrize("case", ["mlp", "gpt2", "cnn"])
def test_step_on_opencl_against_plugin_counters(case):
    """The meta prediction made for opencl (`target="opencl"`: its GEMM's packed panels, declared by
    the plugin, are added) against the plugin's own allocation counter."""
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    from ember_opencl.allocator import round_size

    build, step = CASES[case]
    model, opt, x, y = build("meta")
    with ember.memory.track(model=model, optimizer=opt, target="opencl") as predicted:
        step(model, opt, x, y)
    gc.collect()
    ember.opencl.synchronize()
    before = ember.opencl.memory_allocated()     # anything another test left alive is not this step's
    model, opt, x, y = build("opencl")
    ember.opencl.synchronize()
    ember.opencl.reset_peak_memory_stats()
    with ember.memory.track(model=model, optimizer=opt, device="opencl") as mem:
        step(model, opt, x, y)
    ember.opencl.synchronize()
    measured = ember.opencl.max_memory_allocated() - before

    def rounded_peak(m):                         # the plugin counts blocks at its rounding (512 B; 2 MiB above 1 MiB)
        cur = peak = 0
        for e in m.timeline:
            if e["device"].startswith(("opencl", "meta")):
                cur += round_size(abs(e["bytes"])) * (1 if e["kind"] == "alloc" else -1)
                peak = max(peak, cur)
        return peak

    meta_peak = predicted.simulate("exact", device="meta")["peak_allocated"]
    err = (meta_peak - measured) / measured
    err_rounded = (rounded_peak(predicted) - measured) / measured
    print(f"\nopencl {case} step: plugin max_memory_allocated {measured} B; tracked on opencl {mem.peak_bytes} B "
          f"({rounded_peak(mem)} B at the plugin's rounding); meta-predicted {meta_peak} B (error {100 * err:+.3f}%), "
          f"{rounded_peak(predicted)} B at the plugin's rounding (error {100 * err_rounded:+.3f}%)")
    assert abs(err) <= 0.03
    assert abs(err_rounded) <= 0.03
    if case != "cnn":
        # the MLP's and the GPT's peaks are in the optimizer step, where no GEMM scratch is alive, so
        # the storages tracked on opencl are the whole of it (the CNN's peak is inside conv2's backward GEMM)
        assert rounded_peak(mem) == measured


def test_opencl_bmm_workspace_is_what_the_plugin_allocates():
    """The scratch the plugin declares for one bmm is what its counter sees beyond operands and output."""
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    from ember.dispatcher.plugins import REGISTRY
    from ember_opencl.allocator import round_size

    a = ember.randn(3, 20, 40, device="opencl")
    b = ember.randn(1, 40, 30, device="opencl").expand(3, 40, 30)      # broadcast batch: packed once
    ember.opencl.synchronize()
    before = ember.opencl.memory_allocated()
    ember.opencl.reset_peak_memory_stats()
    out = ember.bmm(a, b)
    ember.opencl.synchronize()
    scratch = ember.opencl.max_memory_allocated() - before - round_size(out.nelement() * 4)
    backend = REGISTRY.load("opencl").backend
    declared = backend.workspace("bmm", (ember.empty(3, 20, 40, device="meta")._data,
                                         ember.empty(1, 40, 30, device="meta").expand(3, 40, 30)._data))
    assert len(declared) == 2 and sum(round_size(n) for n in declared) == scratch > 0


# ----------------------------------------------------------------------------------------- the CLI
def tiny_llama():
    return build_llama(LlamaConfig(vocab_size=96, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_seq_len=16))


def tiny_mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def test_cli_llama_breakdown_equals_closed_form(capsys, tmp_path):
    """Acceptance 3 on a small LLaMA-shaped config: bfloat16 parameters, AdamW."""
    assert main([f"{__name__}:tiny_llama", "--batch", "1", "--seq", "16", "--dtype", "bfloat16",
                 "--optimizer", "adamw", "--json", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    print(out.split("\nmodule")[0])
    # closed form: embedding and head 2*V*d, per layer 4*d*d (attention) + 3*d*h (SwiGLU) + 2*d (norms), final norm d
    v, d, h, n = 96, 32, 64, 2
    P = 2 * v * d + n * (4 * d * d + 3 * d * h + 2 * d) + d
    n_tensors = 2 + 9 * n + 1
    assert f"{P:,} parameters" in out
    b = json.loads((tmp_path / "m.json").read_text())["breakdown"]
    assert b["parameters"]["max"] == P * 2
    assert b["gradients"]["max"] == P * 2
    assert b["optimizer_state"]["max"] == 2 * P * 2 + 4 * n_tensors     # two moments + a float32 `step` per tensor
    for cat, want in (("parameters", P * 2), ("gradients", P * 2), ("optimizer_state", 2 * P * 2 + 4 * n_tensors)):
        assert f"{want:,}" in next(line for line in out.splitlines() if line.startswith(cat))
    assert out.count("agrees") == 3


def test_cli_amp_and_measure(capsys):
    assert main([f"{__name__}:tiny_mlp", "--batch", "8", "--amp", "float16", "--optimizer", "adamw",
                 "--measure", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "autocast float16 + GradScaler" in out and out.count("agrees") == 3   # float32 model state
    assert "prediction error +0.000%" in out
    with pytest.raises(SystemExit, match="--amp float16 keeps float32 parameters"):
        main([f"{__name__}:tiny_mlp", "--batch", "1", "--amp", "float16", "--dtype", "bfloat16"])


def test_cli_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")            # the `plot` extra; without it plot() raises (test_memory_tracker)
    assert main([f"{__name__}:tiny_mlp", "--batch", "2", "--plot", str(tmp_path / "m.png")]) == 0
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
