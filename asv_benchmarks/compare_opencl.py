"""The opencl acceptance figures side by side with numpy's, in one process, alternating.

    python asv_benchmarks/compare_opencl.py [--repeat 7]

For GEMM (1024 x 1024 float32, GFLOP/s), elementwise add and sum (4M float32, GB/s) it
times one ember-opencl call and one numpy call in turn, `repeat` times, and prints each
side's median rate and the ratio ember-opencl / numpy. The cases are bench_opencl's (the asv
benchmarks), so both report the same work. Then a nanoGPT training step on the device, eager and
compiled (the whole step), alternating: the time per step and the kernels each launches
(ember_opencl.codegen.launches()), with the targets compiled <= 0.5x eager's time and <= a third of
its launches. Exits with a message when there is no opencl device.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_opencl import BACKENDS, make_case, opencl_runtime  # noqa: E402

AREAS = [("gemm", "matmul 1024x1024 float32", 1e9, "GFLOP/s"),
         ("add", "a + b, 4M float32", 1e9, "GB/s"),
         ("sum", "a.sum(), 4M float32", 1e9, "GB/s")]


def measure(area: str, repeat: int) -> dict[str, float]:
    """Median rate (work per second) of each backend, calls alternating between them."""
    cases = {b: make_case(area, b) for b in BACKENDS}
    samples = {b: [] for b in BACKENDS}
    for _ in range(repeat):
        for b, (fn, work) in cases.items():
            start = time.perf_counter()
            fn()
            samples[b].append(work / (time.perf_counter() - start))
    return {b: statistics.median(v) for b, v in samples.items()}


def training_step(repeat: int) -> dict[str, tuple[float, float]]:
    """{"eager", "compiled"}: (median seconds, kernels launched) per nanoGPT training step on the opencl
    device (workloads.nanogpt_step: AdamW; compiled: the whole step, ember.compile(step,
    mode="reduce-overhead")), the two alternating; each step waits for its loss."""
    from ember_opencl import codegen

    from workloads import nanogpt_step

    steps = {"eager": nanogpt_step("ember", device="opencl"),
             "compiled": nanogpt_step("ember", device="opencl", compiled="step")}
    launches = {}
    for name, step in steps.items():
        for _ in range(3):                          # warm-up: optimizer state, the recording, the first replay
            float(step())
        before = codegen.launches()
        float(step())
        launches[name] = codegen.launches() - before
    samples = {name: [] for name in steps}
    for _ in range(repeat):
        for name, step in steps.items():
            start = time.perf_counter()
            float(step())
            samples[name].append(time.perf_counter() - start)
    return {name: (statistics.median(samples[name]), launches[name]) for name in steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    try:
        runtime = opencl_runtime()
    except NotImplementedError as exc:
        sys.exit(f"compare_opencl: {exc}")
    print(f"opencl device: {runtime.get_device_name()}; {args.repeat} alternating calls each, medians")
    print(f"{'case':<28} {'ember-opencl':>14} {'numpy':>14} {'unit':>8} {'ember/numpy':>12}")
    for area, label, scale, unit in AREAS:
        r = measure(area, args.repeat)
        e, n = r["ember-opencl"] / scale, r["numpy"] / scale
        print(f"{label:<28} {e:>14.2f} {n:>14.2f} {unit:>8} {e / n:>11.1%}")
    step = training_step(args.repeat)
    (te, le), (tc, lc) = step["eager"], step["compiled"]
    print("\nnanoGPT training step (AdamW) on opencl, eager against ember.compile(step, mode=\"reduce-overhead\"):")
    print(f"{'':<28} {'eager':>14} {'compiled':>14} {'compiled/eager':>16}  target")
    print(f"{'time per step':<28} {te * 1e3:>11.1f} ms {tc * 1e3:>11.1f} ms {tc / te:>15.2f}x  <= 0.5x "
          f"{'MET' if tc / te <= 0.5 else 'MISSED'}")
    print(f"{'kernels launched per step':<28} {le:>14d} {lc:>14d} {lc / le:>15.2f}x  <= 0.33x "
          f"{'MET' if lc * 3 <= le else 'MISSED'}")


if __name__ == "__main__":
    main()
