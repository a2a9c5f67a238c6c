"""Side-by-side ratios in one process: ember vs PyTorch (and numpy), alternating, medians.

    python asv_benchmarks/compare.py            # the rows with a target, ~2-3 minutes
    python asv_benchmarks/compare.py --quick    # smoke run: few samples, a few seconds
    python asv_benchmarks/compare.py --all      # also the informational rows (method call, in-place op,
                                                # 256x256 elementwise and reductions)
    python asv_benchmarks/compare.py --only nanoGPT   # the rows whose label contains "nanoGPT"

Each row runs its ember, torch and numpy variants (the workloads of asv_benchmarks/workloads.py,
shared with the asv benchmarks) in alternation: one sample of each in turn, `--repeat` times,
each sample long enough (`--sample-time`) for the clock. The table reports the median time per
call of each framework, the ratios ember/torch and ember/numpy, the row's target
and whether the measured ratio meets it. Import times are measured in fresh
interpreters (`python -c "import X"`, interpreter start included for both), also alternating.

The cold-start row runs a short training script (workloads.cold_start_code: import, a small model, one
step) in fresh interpreters, alternating, as the import row does.

The DDP row runs asv_benchmarks/ddp_scaling.py under mpiexec: 2 processes with DistributedDataParallel
against 1 process without it, one thread each, same batch per process (weak scaling), the fastest of
`--import-repeat` alternating runs each; its ratio is in the ember/torch column.

The machine may be shared: only the ratios, measured side by side, are meaningful, never a lone time.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def workloads():
    """asv_benchmarks.workloads, imported on first use (after --threads has set the thread variables)."""
    from asv_benchmarks import workloads as module

    return module


def conv_workloads():
    """asv_benchmarks.conv_workloads, imported on first use as workloads() is."""
    from asv_benchmarks import conv_workloads as module

    return module


@dataclass(frozen=True)
class Target:
    """`ember/<against> <= ratio` on time per call (for a throughput target, ratio is 1/throughput ratio)."""

    against: str
    ratio: float
    text: str

    def met(self, times: dict[str, float]) -> bool:
        return times["ember"] / times[self.against] <= self.ratio


def at_most(against: str, ratio: float) -> Target:
    return Target(against, ratio, f"<= {ratio:g}x {against}")


@dataclass(frozen=True)
class AllOf:
    """Several targets, met when every one is."""

    targets: tuple

    def met(self, times: dict[str, float]) -> bool:
        return all(t.met(times) for t in self.targets)

    @property
    def text(self) -> str:
        return ", ".join(t.text for t in self.targets)


def throughput_at_least(against: str, ratio: float) -> Target:
    return Target(against, 1.0 / ratio, f"thrpt >= {ratio:g}x {against}")


@dataclass(frozen=True)
class Row:
    label: str
    build: Callable[[str], Callable]     # framework -> the callable to time (NotImplementedError: none)
    target: Target | AllOf | None = None


def headline_rows() -> list[Row]:
    """The rows with a target (`import ember` and the cold start are measured separately, in fresh interpreters)."""
    W, C = workloads(), conv_workloads()
    return [
        Row("a + b (8,)", lambda fw: W.tiny_add(fw, False), at_most("torch", 1.2)),
        Row("a + b (8,), requires_grad", lambda fw: W.tiny_add(fw, True), at_most("torch", 1.2)),
        Row("digits MLP step, SGD", lambda fw: W.mlp_step(fw, "sgd"), at_most("torch", 0.8)),
        Row("digits MLP step, Adam", lambda fw: W.mlp_step(fw, "adam"), at_most("torch", 0.6)),
        # the whole step (forward, backward, update) recorded once and replayed (torch eager beside it)
        Row("digits MLP step, Adam, reduce-overhead", lambda fw: W.mlp_step(fw, "adam", mode="reduce-overhead"),
            AllOf((at_most("torch", 0.4), at_most("numpy", 1.3)))),
        Row("digits CNN step", C.cnn_step, at_most("torch", 1.2)),
        # two of ResNet's basic blocks (32 -> 32 at 32 x 32, 32 -> 64 at stride 2), batch 8
        Row("ResNet basic blocks fwd+bwd", C.resnet_blocks_step),
        Row("GPT block fwd+bwd (128, 4h, 64x8)", W.gpt_block_step, at_most("torch", 1.5)),
        Row("nanoGPT step, AdamW, tanh GELU", W.nanogpt_step, at_most("torch", 1.2)),
        Row("nanoGPT step, AdamW, exact GELU", lambda fw: W.nanogpt_step(fw, approximate="none"),
            at_most("torch", 1.2)),
        # ember.compile of the whole step (recorded and replayed) against torch.compile of the model (inductor;
        # its first call compiles for tens of seconds; torch's backward and AdamW then run eagerly)
        Row("nanoGPT step, compiled", lambda fw: W.nanogpt_step(fw, compiled="step" if fw == "ember" else True),
            at_most("torch", 1.0)),
        # the same eager step with ember on its opencl device (PoCL on these CPUs), torch and numpy on the cpu
        # beside it; listed where an OpenCL device is available
        *([Row("nanoGPT step, tanh GELU, ember on opencl",
               lambda fw: W.nanogpt_step(fw, device="opencl" if fw == "ember" else "cpu"))]
          if opencl_available() else []),
        # word_language_model's training step: 2 LSTM layers of 256, seq 35, batch 20, vocabulary 10000
        Row("LSTM LM step (2x256, 35x20)", W.lstm_lm_step, at_most("torch", 1.5)),
        Row("GPT-2 small inference, batch 1", W.gpt2_small_inference, at_most("torch", 1.2)),
        Row("Adam step, 100 parameters", lambda fw: W.optimizer_step(fw, "adam")),
        Row("AdamW step, 100 parameters", lambda fw: W.optimizer_step(fw, "adamw")),
        Row("matmul 1024x1024 float32", W.matmul, throughput_at_least("numpy", 0.95)),
        Row("GPT-2 small on meta", W.gpt2_small_meta, at_most("torch", 1.0)),
    ]


def opencl_available() -> bool:
    import ember

    return ember.opencl.is_available()


def extra_rows() -> list[Row]:
    """Informational rows (no acceptance target): the rest of the asv suite's workloads."""
    W = workloads()
    rows = [Row("a.mul(b) (8,)", W.tiny_method), Row("a.mul_(b) (8,)", W.tiny_inplace)]
    # ember.compile'd (torch eager beside it): the compiler's rows until they get their targets
    rows += [Row("GPT block fwd+bwd, ember.compile", lambda fw: W.gpt_block_step(fw, compiled=True)),
             Row("GPT block no_grad fwd, ember.compile", lambda fw: W.gpt_block_inference(fw, compiled=True)),
             Row("GPT block no_grad fwd", W.gpt_block_inference)]
    rows += [Row(f"{op} 256x256", lambda fw, op=op: W.elementwise(fw, op)) for op in W.ELEMENTWISE_OPS]
    rows += [Row(f"{op} 256x256", lambda fw, op=op: W.reduction(fw, op)) for op in W.REDUCTION_OPS]
    return rows


def build_variants(row: Row) -> dict[str, Callable]:
    variants = {}
    for fw in workloads().FRAMEWORKS:
        try:
            variants[fw] = row.build(fw)
        except NotImplementedError:
            pass
    return variants


def _sample(fn: Callable, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


#: calls of each variant before any is timed: past every one-time cost of a program's first steps (caches,
#: optimizer state, a reduce-overhead step's recording and first replays) and past the cpu backend's switch
#: to its numba kernels, which a kernel makes after its first 16 calls (ember_cpu/plugin.py NUMBA_KERNELS);
#: the time per call that sizes a sample comes from calls after these
WARMUP_CALLS = 20


def measure(variants: dict[str, Callable], repeat: int, sample_time: float) -> dict[str, float]:
    """Median seconds per call of each variant: `repeat` samples, taken in alternation, after WARMUP_CALLS
    calls of each."""
    numbers = {}
    for name, fn in variants.items():
        for _ in range(WARMUP_CALLS):
            fn()
        per_call = _sample(fn, 3)
        numbers[name] = max(1, int(sample_time / max(per_call, 1e-9)))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            samples[name].append(_sample(fn, numbers[name]))
    return {name: statistics.median(v) for name, v in samples.items()}


def fresh_interpreter_times(codes: dict[str, str], repeat: int) -> dict[str, float]:
    """Median wall time of `python -c CODE` (interpreter start included) for each name's code, alternating.

    Measured with bytecode caches in place, as an installed package has them (pip compiles
    torch's at install): PYTHONDONTWRITEBYTECODE is dropped from the children's environment and
    one unmeasured run of each writes the caches (an editable install's first import compiles
    ember's sources, ~0.8 s that a second import does not pay)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[str, list[float]] = {name: [] for name in codes}
    for code in codes.values():
        subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    for _ in range(repeat):
        for name, code in codes.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def import_times(repeat: int) -> dict[str, float]:
    """`python -c "import X"` for ember and torch (see fresh_interpreter_times)."""
    return fresh_interpreter_times({name: f"import {name}" for name in ("ember", "torch")}, repeat)


def cold_start_times(repeat: int) -> dict[str, float]:
    """A short training script in a fresh interpreter (import, a small model, one step:
    workloads.cold_start_code) for ember and torch (see fresh_interpreter_times)."""
    return fresh_interpreter_times({name: workloads().cold_start_code(name) for name in ("ember", "torch")}, repeat)


def ddp_weak_scaling(repeat: int, ranks: int = 2) -> dict[str, float] | None:
    """Time per nanoGPT step (ddp_scaling.py, the fastest of `repeat` runs) of `ranks` DDP processes and
    of one process without DDP, one thread each, the two jobs alternating; None when no MPI job can start."""
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_scaling.py")
    if not os.path.exists(mpiexec):
        return None
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    samples: dict[str, list[float]] = {"ember": [], "one rank": []}
    for _ in range(repeat):
        for name, n in (("one rank", 1), ("ember", ranks)):
            out = subprocess.run([mpiexec, "-n", str(n), sys.executable, script], capture_output=True, text=True,
                                 env=env, timeout=600)
            if out.returncode != 0:
                print(f"ddp_scaling.py with {n} processes failed: {out.stderr.strip()[-300:]}")
                return None
            samples[name].append(float(out.stdout.split()[-2]))
    # the fastest run of each: a 2-process job on a shared machine is slowed by any other load far more
    # than a 1-process one, so medians measure the neighbours; the minima measure the step
    return {name: min(v) for name, v in samples.items()}


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}" if unit != "s" else f"{seconds:.3f} s"
    return f"{seconds / 1e-9:.3g} ns"


HEADER = (f"{'case':<40} {'ember':>9} {'torch':>9} {'numpy':>9} {'ember/torch':>11} {'ember/numpy':>11}"
          f"  {'target':<22} {'status'}")


def format_row(label: str, times: dict[str, float], target: Target | AllOf | None) -> str:
    def ratio(other: str) -> str:
        return f"{times['ember'] / times[other]:.2f}x" if other in times else "-"

    status = "-" if target is None else ("MET" if target.met(times) else "MISSED")
    return (f"{label:<40} {fmt_time(times.get('ember')):>9} {fmt_time(times.get('torch')):>9} "
            f"{fmt_time(times.get('numpy')):>9} {ratio('torch'):>11} {ratio('numpy'):>11}"
            f"  {target.text if target else '-':<22} {status}")


def environment_line() -> str:
    import numpy
    import torch

    import ember

    threads = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
               if k in os.environ}
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: ember {ember.__version__} "
            f"({ember.get_num_threads()} threads), torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"numpy {numpy.__version__}, python {platform.python_version()}, {platform.machine()}, "
            f"{os.cpu_count()} cpus" + (f", {threads}" if threads else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="samples per variant (default 15)")
    parser.add_argument("--sample-time", type=float, default=0.05, help="seconds per sample (default 0.05)")
    parser.add_argument("--import-repeat", type=int, default=7, help="fresh interpreters per framework")
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 samples of ~5 ms, 1 import each")
    parser.add_argument("--all", action="store_true", help="also the informational rows without a target")
    parser.add_argument("--only", metavar="TEXT", default=None,
                        help="only the rows whose label contains TEXT (informational ones included; no import row)")
    parser.add_argument("--threads", type=int, default=None,
                        help="cap every framework's threads (OMP/OPENBLAS/MKL_NUM_THREADS and torch.set_num_threads); "
                             "default: each library's own default. On a loaded machine, torch's thread pool waits "
                             "for busy cores on every parallel op; --threads 1 compares single-core work")
    args = parser.parse_args(argv)
    if args.threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)       # before numpy/torch are imported; import rows inherit it
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    if args.quick:
        args.repeat, args.sample_time, args.import_repeat = 3, 0.005, 1

    started = time.perf_counter()
    print(environment_line())
    print(f"medians of {args.repeat} alternating samples of ~{args.sample_time * 1e3:g} ms; "
          f"import: {args.import_repeat} fresh interpreters each")
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > cpus and args.threads is None:
        print(f"warning: load average {load:.1f} on {cpus} cpus: multi-threaded ops (BLAS, torch's pool) wait for "
              "descheduled threads and small-model rows become noise; --threads 1 compares single-core work")
    print(HEADER)
    missed = 0
    rows = headline_rows() + (extra_rows() if args.all or args.only else [])
    for row in [r for r in rows if args.only is None or args.only in r.label]:
        times = measure(build_variants(row), args.repeat, args.sample_time)
        print(format_row(row.label, times, row.target), flush=True)
        missed += row.target is not None and not row.target.met(times)
    if args.only is None or args.only in "DDP weak scaling":
        scaling = ddp_weak_scaling(args.import_repeat)
        if scaling is not None:
            target = at_most("one rank", 1.15)
            print(f"{'DDP weak scaling: nanoGPT step, 2 ranks':<40} {fmt_time(scaling['ember']):>9} "
                  f"{'-':>9} {'-':>9} {scaling['ember'] / scaling['one rank']:>10.2f}x {'-':>11}  "
                  f"{'<= 1.15x 1 rank, no DDP':<22} {'MET' if target.met(scaling) else 'MISSED'}", flush=True)
            missed += not target.met(scaling)
    if args.only is None:
        imp = import_times(args.import_repeat)
        target = at_most("torch", 0.3)
        print(format_row('import (python -c "import X")', imp, target))
        missed += not target.met(imp)
    if args.only is None or args.only in "cold start":
        cold = cold_start_times(args.import_repeat)
        target = at_most("torch", 0.4)
        print(format_row("cold start: import, MLP, one step", cold, target))
        missed += not target.met(cold)
    print(f"{missed} target(s) missed; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
