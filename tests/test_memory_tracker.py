"""ember.memory.track: an MLP training step (forward, backward, AdamW step) on meta and cpu.

The cpu peak is checked against an independent measurement: tracemalloc's own peak over the step
(memory_steps.true_peak), which sees every allocation numpy makes, the scratch inside kernels included.
"""
import io
import sys
import tracemalloc

import numpy as np
import pytest

import ember
import ember.memory
from ember import nn
from ember.frontend import tensor as tensor_mod

import memory_steps


CASES = memory_steps.CASES
_build, _step = CASES["mlp"]


def _tracked(device):
    model, opt, x, y = _build(device)
    with ember.memory.track(model=model, optimizer=opt) as mem:
        _step(model, opt, x, y)
    return mem, model


@pytest.fixture(scope="module")
def runs():
    return {dev: _tracked(dev) for dev in ("meta", "cpu")}


def _numpy_bytes() -> int:
    snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
    return sum(t.size for t in snap.traces)


def test_meta_predicts_cpu_allocation_sequence(runs):
    meta, cpu = runs["meta"][0], runs["cpu"][0]
    assert meta.peak_bytes == cpu.peak_bytes > 0
    assert meta.current_bytes == cpu.current_bytes
    strip = [[(e["bytes"], e["category"], e["module"], e["op"]) for e in m.timeline] for m in (meta, cpu)]
    assert strip[0] == strip[1]
    assert meta.breakdown == cpu.breakdown


def test_meta_predicts_cpu_gpt2_step():
    build, step = CASES["gpt2"]
    mems = []
    for device in ("meta", "cpu"):
        model, opt, x, y = build(device)
        with ember.memory.track(model=model, optimizer=opt) as mem:
            step(model, opt, x, y)
        mems.append(mem)
    print(f"\ngpt2 step: meta peak {mems[0].peak_bytes} B, cpu tracked peak {mems[1].peak_bytes} B")
    assert mems[0].peak_bytes == mems[1].peak_bytes
    assert [(e["bytes"], e["op"]) for e in mems[0].timeline] == [(e["bytes"], e["op"]) for e in mems[1].timeline]
    assert mems[0].breakdown == mems[1].breakdown


@pytest.mark.parametrize("case", ["mlp", "cnn"])
def test_tracked_and_predicted_peaks_against_tracemalloc_true_peak(case):
    """A steady-state step tracked on cpu equals its prediction on meta (storages and declared kernel scratch
    alike), and both are within 3% of tracemalloc's own peak over the same step (memory_steps.true_peak)."""
    build, step = CASES[case]
    measured, end = memory_steps.true_peak(build, step)
    meta = memory_steps.predicted(build, step)
    model, opt, x, y = build("cpu")
    step(model, opt, x, y)
    with ember.memory.track(model=model, optimizer=opt) as cpu:
        step(model, opt, x, y)
    assert cpu.peak_bytes == meta.peak_bytes and cpu.breakdown == meta.breakdown
    err = (cpu.peak_bytes - measured) / measured
    print(f"\ncpu {case} step: tracked and predicted peak {cpu.peak_bytes} B (kernel scratch "
          f"{cpu.breakdown['scratch']['at_peak']} B), tracemalloc's true peak {measured} B (error {100 * err:+.3f}%); "
          f"at exit tracked {cpu.current_bytes} B, numpy domain {end} B")
    assert abs(err) <= 0.03
    assert abs(cpu.current_bytes - end) / end <= 0.03


def test_breakdown_categories(runs):
    mem, model = runs["meta"]
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    b = mem.breakdown
    assert b["parameters"]["max"] == params
    assert b["gradients"]["max"] == params
    # AdamW: exp_avg and exp_avg_sq per parameter, plus one 0-d float32 `step` per parameter
    # (a cpu tensor, which the tracker records whatever the parameters' device)
    n = len(list(model.parameters()))
    assert b["optimizer_state"]["max"] == 2 * params + 4 * n
    assert b["activations"]["max"] > 0 and b["temporaries"]["max"] > 0
    assert b["inputs"]["max"] == 64 * 128 * 4 + 64 * 8
    assert sum(d["at_peak"] for d in b.values()) == mem.peak_bytes
    # parameters, moments, steps and inputs stay; zero_grad (set_to_none) freed the gradients
    assert mem.current_bytes == 3 * params + 4 * n + b["inputs"]["max"]
    mods = mem.by_module
    assert mods["Sequential.0"]["forward"] > 0 and mods["Sequential.0"]["backward"] > 0
    assert mods["optimizer.AdamW"]["backward"] >= 2 * params


def test_report_json_plot(runs, tmp_path):
    import json

    mem = runs["cpu"][0]
    text = mem.report()
    assert "parameters" in text and "optimizer.AdamW" in text
    data = json.loads(mem.to_json())
    assert data["peak_bytes"] == mem.peak_bytes
    assert max(e["current"] for e in data["timeline"]) == mem.peak_bytes
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs matplotlib"):
            mem.plot(str(tmp_path / "m.png"))
    else:
        mem.plot(str(tmp_path / "m.png"))
        assert (tmp_path / "m.png").stat().st_size > 0


def test_not_in_use_and_no_nesting():
    from ember.dispatcher import ALL_OPS

    meta_key = ember.empty(1, device="meta")._keys & ember.dispatcher.keys.BACKEND_MASK
    assert tensor_mod.ALLOC_HOOK is None
    # meta runs lerp through one kernel (torch meta's strides), and through cpu's decomposition while
    # tracking, from the first meta storage the tracker sees on (a cpu run never pays for the swap)
    assert meta_key in ALL_OPS["lerp.Scalar"].kernels
    with ember.memory.track():
        ember.ones(2) + 1
        assert meta_key in ALL_OPS["lerp.Scalar"].kernels
        ember.empty(1, device="meta")
        assert meta_key not in ALL_OPS["lerp.Scalar"].kernels
    assert meta_key in ALL_OPS["lerp.Scalar"].kernels
    with ember.memory.track(device="meta"):
        assert meta_key not in ALL_OPS["lerp.Scalar"].kernels
    assert meta_key in ALL_OPS["lerp.Scalar"].kernels
    with ember.memory.track():
        with pytest.raises(RuntimeError, match="already recording"):
            ember.memory.track().__enter__()
    assert tensor_mod.ALLOC_HOOK is None


MiB = 1 << 20


def test_cuda_caching_model_rules():
    from ember.memory import simulate

    seq = [("alloc", 100, "a"),            # 512-byte block in a new 2 MiB small segment
           ("alloc", 3 * MiB // 2, "b"),   # large pool: a 20 MiB segment, split
           ("alloc", 11 * MiB, "c"),       # best fit: the 18.5 MiB remainder, split again
           ("free", 0, "b"), ("free", 0, "c"),   # merge back into one free 20 MiB block
           ("alloc", 25 * MiB, "d"),       # no fit: a 26 MiB segment; the 1 MiB rest is not split
           ("alloc", MiB + 1, "e")]        # rounds to MiB + 512: large pool, from the 20 MiB block
    r = simulate(seq, "cuda-caching")
    assert r["peak_reserved"] == r["reserved"] == (2 + 20 + 26) * MiB
    assert r["peak_allocated"] == r["allocated"] == 512 + 26 * MiB + MiB + 512
    small = [("alloc", MiB, "x"), ("alloc", MiB, "y"), ("alloc", 1, "z"), ("alloc", 0, "w")]
    r = simulate(small, "cuda-caching")
    assert (r["reserved"], r["allocated"]) == (4 * MiB, 2 * MiB + 512)
    assert simulate(seq, "exact")["peak_allocated"] == 100 + 25 * MiB + MiB + 1
    # cupy: a new chunk of exactly the rounded size per miss; "e" splits b's cached 1.5 MiB chunk (best fit)
    r = simulate(seq, "cupy-pool")
    assert r["peak_reserved"] == r["reserved"] == 512 + 3 * MiB // 2 + 11 * MiB + 25 * MiB
    assert r["allocated"] == 512 + 25 * MiB + MiB + 512
    with pytest.raises(ValueError, match="'allocator' must be one of"):
        simulate(seq, "buddy")


def test_allocator_models_on_a_training_step(runs):
    mem = runs["meta"][0]
    assert mem.simulate("exact")["peak_allocated"] == mem.peak_bytes
    cc = mem.simulate("cuda-caching")
    assert mem.peak_bytes < cc["peak_allocated"] <= cc["peak_reserved"]
    assert cc["peak_reserved"] % (2 * MiB) == 0
    cp = mem.simulate("cupy-pool")
    assert mem.peak_bytes < cp["peak_allocated"] <= cp["peak_reserved"] < cc["peak_reserved"]


def _tiny_mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))


def test_cli_gpt2_small_closed_form(capsys, tmp_path):
    from ember.memory.cli import main

    assert main(["ember.testing.models:gpt2_small", "--batch", "1", "--seq", "8", "--optimizer", "adamw",
                 "--allocator", "cuda-caching", "--json", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    print(out.split("\n\nmodule")[0])
    assert "124,439,808 parameters" in out
    import json

    b = json.loads((tmp_path / "m.json").read_text())["breakdown"]
    n_bytes = 124_439_808 * 4
    assert b["parameters"]["max"] == b["gradients"]["max"] == n_bytes
    # exp_avg and exp_avg_sq, and the float32 `step` counters of its 148 parameter tensors (the head tied):
    # the fused AdamW step keeps them on the parameters' device, as torch's fused=True does
    assert b["optimizer_state"]["max"] == 2 * n_bytes + 148 * 4
    assert out.count("agrees") == 3


def test_cli_measure_and_errors(capsys):
    from ember.memory.cli import main

    assert main([f"{__name__}:_tiny_mlp", "--batch", "4", "--optimizer", "sgd", "--measure", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "prediction error +0.000%" in out
    with pytest.raises(SystemExit, match="MODULE:FACTORY"):
        main(["nocolon", "--batch", "1"])
    with pytest.raises(SystemExit, match="nn.Embedding"):
        main([f"{__name__}:_tiny_mlp", "--batch", "1", "--seq", "4"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
def test_cli_shows_the_phases_on_a_terminal_only(capsys, monkeypatch, terminal):
    from ember.memory.cli import main

    err = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert main([f"{__name__}:_tiny_mlp", "--batch", "4", "--optimizer", "sgd"]) == 0
    shown = err.getvalue()
    assert capsys.readouterr().out.startswith(f"model {__name__}:_tiny_mlp: 2,762 parameters")
    phases = ("build", "forward", "backward", "optimizer step", "4/4")
    assert all(p in shown for p in phases) if terminal else shown == "", shown


def test_without_op_names_the_same_peak_breakdown_and_modules():
    """`ops=False` drops the per-call dispatch mode: the same recording, every allocation's op "".
    (Inputs are made inside the block: without `ops`, a tensor from before the block that only an
    op uses, never a module or autograd, is not seen.)"""
    mems = {}
    for ops in (False, True):
        model, opt, _, _ = _build("meta")
        with ember.memory.track(model=model, optimizer=opt, ops=ops) as mems[ops]:
            _step(model, opt, ember.randn(64, 128, device="meta"), ember.randint(0, 10, (64,), device="meta"))
    lean, full = mems[False], mems[True]
    assert lean.peak_bytes == full.peak_bytes > 0 and lean.current_bytes == full.current_bytes
    assert lean.breakdown == full.breakdown
    assert lean.by_module == full.by_module
    strip = [[(e["kind"], e["bytes"], e["category"], e["module"], e["phase"]) for e in m.timeline] for m in (lean, full)]
    assert strip[0] == strip[1]
    assert {e["op"] for e in lean.timeline} <= {"", "<existing>"}
    assert {"linear", "randn", "relu"} <= {e["op"] for e in full.timeline}


def test_storages_released_after_the_block_are_not_recorded():
    x = ember.ones(4)
    with ember.memory.track() as mem:
        y = x * 2
    n_events = len(mem.events)
    del y                                   # its storage class still reports releases: to no tracker
    with ember.memory.track() as other:
        z = x + 1
        del z
    assert len(mem.events) == n_events
    assert [e["kind"] for e in other.timeline] == ["alloc", "alloc", "free"]   # x from first use, z, z freed


def test_by_module_backward_of_siblings_sharing_an_input_and_parameters_at_entry():
    """Each module's backward is the nodes its forward made: two Linear siblings reading the same
    input (LLaMA's w1/w3) each own their weight and bias gradients, and the parameters that exist
    when the block starts are listed under the module holding them, not under "Global"."""

    class Gated(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(8, 16)
            self.w3 = nn.Linear(8, 16)

        def forward(self, x):
            return self.w1(x) * self.w3(x)

    model = Gated()
    x = ember.randn(4, 8)
    with ember.memory.track(model=model) as mem:
        model(x).sum().backward()
    mods = mem.by_module
    linear_grads = 16 * 8 * 4 + 16 * 4                # weight and bias gradients, float32
    assert mods["Gated.w1"]["backward"] == mods["Gated.w3"]["backward"] == linear_grads
    assert mods["Gated.w1"]["forward"] == mods["Gated.w3"]["forward"] == 4 * 16 * 4
    assert mods["Gated"]["backward"] == 2 * 4 * 16 * 4  # the product's gradients for both factors
    assert mods["Gated.w1"]["at_peak"] >= linear_grads  # its parameters live there from the start
    assert "Global" not in mods or mods["Global"]["at_peak"] < linear_grads


def test_meta_tensors_made_before_the_block_run_as_cpu_from_their_first_op():
    """With op names on (the default), the tracker sees an op's meta inputs before the op runs, so a
    composite op on tensors made before the block is already decomposed as cpu runs it: the same
    allocations as a block that switched meta over at entry (`device="meta"`)."""
    a, b = ember.randn(8, 8, device="meta"), ember.randn(8, 8, device="meta")
    runs = []
    for device in (None, "meta"):
        with ember.memory.track(device=device) as mem:
            ember.lerp(a, b, 0.5)
        runs.append([(e["kind"], e["bytes"], e["op"]) for e in mem.timeline])
    assert runs[0] == runs[1]
    assert len([e for e in runs[0] if e[0] == "alloc" and e[2] != "<existing>"]) > 1   # decomposed: temporaries too


def test_model_copied_or_pickled_inside_the_block_and_a_failed_entry_leave_no_wrapper():
    """With `model=`, the tracker follows the model's modules through an instance `forward` for the
    block: a deepcopy or pickle made inside it must not carry that wrapper (the copy would run the
    original's forward), and an entry that fails halfway must remove what it installed."""
    import copy
    import pickle

    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    x = ember.randn(4, 3)
    with ember.memory.track(model=model):
        twin = copy.deepcopy(model)
        clone = pickle.loads(pickle.dumps(model))
    for m in (twin, clone):
        assert all("forward" not in mod.__dict__ for mod in m.modules())
        with ember.no_grad():
            m[0].weight.zero_()
            m[0].bias.zero_()
        assert float(m(x).abs().sum()) == 0.0          # its own (zeroed) weights, not the original's
    assert all("forward" not in mod.__dict__ for mod in model.modules())

    tracker = ember.memory.track(model=model)

    def fail():                                         # a step after the wrappers are installed
        assert "forward" in model[0].__dict__
        raise RuntimeError("entry fails here")
    tracker._meta_at_entry = fail
    with pytest.raises(RuntimeError, match="entry fails here"):
        tracker.__enter__()
    assert all("forward" not in mod.__dict__ for mod in model.modules())
    assert tensor_mod.ALLOC_HOOK is None
    with ember.memory.track(model=model) as mem:        # a later block works as before
        model(x)
    assert mem.peak_bytes > 0


def test_a_meta_prediction_does_not_depend_on_whether_cpu_was_loaded_before():
    """Scanning a meta model starts meta's kernel swaps; the cpu backend must be loaded before that (a
    plugin load reinstalls every backend's kernels, which would undo the swaps half-way)."""
    import subprocess
    import sys

    run = ("from ember.memory.cli import main; "
           "main(['ember.testing.models:llama7b', '--batch', '1', '--seq', '16', '--dtype', 'bfloat16', "
           "'--optimizer', 'adamw'])")
    peaks = []
    for prelude in ("", "import ember; ember.ones(1); "):
        proc = subprocess.run([sys.executable, "-c", prelude + run], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        peaks.append(next(line for line in proc.stdout.splitlines() if line.startswith("peak:")))
    assert peaks[0] == peaks[1]


def test_a_backward_running_in_another_thread_is_not_this_threads_running_node():
    """The node the engine runs is per thread: a backward paused inside a hook in another thread leaves
    this thread's allocations attributed to this thread's place (a process-wide slot raced between threads
    and, after a threaded run, left a stale node that moved every later forward allocation to 'Global')."""
    import threading

    from ember.frontend.autograd import graph

    inside, release = threading.Event(), threading.Event()
    w = ember.ones(3, requires_grad=True)
    w.register_hook(lambda g: (inside.set(), release.wait(10), g)[-1])
    worker = threading.Thread(target=lambda: (w * 2).sum().backward())
    worker.start()
    try:
        assert inside.wait(10)
        assert graph.RUNNING.node is None
        model, opt, x, y = _build("meta")
        with ember.memory.track(model=model, optimizer=opt) as mem:
            _step(model, opt, x, y)
        alone, _ = _tracked("meta")
        assert mem.breakdown == alone.breakdown
    finally:
        release.set()
        worker.join()
    assert graph.RUNNING.node is None
