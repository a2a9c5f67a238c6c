"""Side-by-side ratios in one process: ember vs PyTorch (and numpy), alternating, medians.

    python asv_benchmarks/compare.py [--repeat 15] [--number 2000]

Each case runs its ember, torch and numpy variants in alternation, many times, and the
table reports the median time per call and the ratios ember/torch and ember/numpy.
Import times are measured in fresh interpreters, also alternating.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np


def tiny_add_cases():
    import ember
    import torch

    data = np.arange(8, dtype=np.float32)
    cases = {}
    for grad in (False, True):
        ea, eb = ember.tensor(data, requires_grad=grad), ember.tensor(data, requires_grad=grad)
        ta, tb = torch.tensor(data, requires_grad=grad), torch.tensor(data, requires_grad=grad)
        variants = {"ember": lambda ea=ea, eb=eb: ea + eb, "torch": lambda ta=ta, tb=tb: ta + tb}
        if not grad:
            na, nb = data.copy(), data.copy()
            variants["numpy"] = lambda: na + nb
        cases[f"a + b, shape (8,), requires_grad={grad}"] = variants
    return cases


def measure(variants: dict, repeat: int, number: int) -> dict[str, float]:
    samples = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            samples[name].append(timeit.timeit(fn, number=number) / number)
    return {name: statistics.median(v) for name, v in samples.items()}


def import_times(repeat: int) -> dict[str, float]:
    """Wall time of `python -c "import X"` (interpreter start included), alternating."""
    samples = {"ember": [], "torch": []}
    for _ in range(repeat):
        for name in samples:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {name}"], check=True)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--import-repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"{'case':<44} {'ember':>10} {'torch':>10} {'numpy':>10} {'ember/torch':>12} {'ember/numpy':>12}")
    for case, variants in tiny_add_cases().items():
        t = measure(variants, args.repeat, args.number)
        numpy_t = t.get("numpy")
        print(f"{case:<44} {t['ember'] * 1e6:>8.2f}us {t['torch'] * 1e6:>8.2f}us "
              f"{(numpy_t or 0) * 1e6:>8.2f}us {t['ember'] / t['torch']:>11.2f}x "
              + (f"{t['ember'] / numpy_t:>11.2f}x" if numpy_t else f"{'-':>12}"))
    imp = import_times(args.import_repeat)
    label = 'python -c "import X" (wall)'
    print(f"{label:<44} {imp['ember']:>9.3f}s {imp['torch']:>9.3f}s {'':>10} "
          f"{imp['ember'] / imp['torch']:>11.2f}x")


if __name__ == "__main__":
    main()
