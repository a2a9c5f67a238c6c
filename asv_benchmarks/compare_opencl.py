"""The opencl acceptance figures side by side with numpy's, in one process, alternating.

    python asv_benchmarks/compare_opencl.py [--repeat 7]

For GEMM (1024 x 1024 float32, GFLOP/s), elementwise add and sum (4M float32, GB/s) it
times one ember-opencl call and one numpy call in turn, `repeat` times, and prints each
side's median rate and the ratio ember-opencl / numpy. The cases are bench_opencl's (the asv
benchmarks), so both report the same work. Exits with a message when there is no opencl device.
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


if __name__ == "__main__":
    main()
