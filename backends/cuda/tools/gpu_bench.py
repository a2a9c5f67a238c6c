"""Ember on cuda vs raw cupy, side by side in one run: tiny-op overhead and large-kernel throughput.

    python backends/cuda/tools/gpu_bench.py [--quick]

1. Tiny ops (16 float32 elements: pure launch + framework overhead): microseconds per call of
   ember's add / mul / relu / sum / softmax against cupy's own call, and the ratio.
2. 4096^2 float32 matmul: TFLOP/s of `a @ b` in ember and in cupy (the same cuBLAS call
   underneath; the ratio is ember's overhead at large sizes, expected ~1.0).
3. Softmax over 4096 x 4096 float32 rows: ember's fused kernel against cupy's composite
   (max, subtract, exp, sum, divide), GB/s of one read and one write.

Every timing synchronizes the device before the clock stops. Exits non-zero when ember's
results differ from cupy's (the bench doubles as a smoke test).
"""
from __future__ import annotations

import argparse
import sys
import time


def timed(fn, iters: int, sync) -> float:
    """Seconds per call of fn() (after warm-up), the device synchronized at both ends."""
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (a smoke run)")
    args = parser.parse_args(argv)

    import cupy
    import numpy as np

    import ember

    row = next((r for r in ember.backends.status() if r["name"] == "cuda"), None)
    if row is None or row["state"] != "available":
        print(f"cuda backend not available: {row['reason'] if row else 'ember-cuda is not installed'}")
        return 1
    sync = cupy.cuda.Device().synchronize
    failures = []
    print(f"device: {row['devices'][0]}")

    # -- 1. tiny ops ----------------------------------------------------------------------
    n_tiny = 200 if args.quick else 2000
    x = ember.arange(16, dtype=ember.float32, device="cuda") - 8
    c = cupy.arange(16, dtype=cupy.float32) - 8
    cases = [
        ("add", lambda: x + x, lambda: c + c),
        ("mul", lambda: x * x, lambda: c * c),
        ("relu", lambda: x.relu(), lambda: cupy.maximum(c, 0)),
        ("sum", lambda: x.sum(), lambda: c.sum()),
        ("softmax", lambda: ember.softmax(x, dim=0),
         lambda: (lambda e: e / e.sum())(cupy.exp(c - c.max()))),
    ]
    print(f"\ntiny ops (16 float32, {n_tiny} calls each): microseconds per call")
    print(f"  {'op':<10}{'ember':>10}{'cupy':>10}{'ratio':>8}")
    for name, e_fn, c_fn in cases:
        te, tc = timed(e_fn, n_tiny, sync), timed(c_fn, n_tiny, sync)
        print(f"  {name:<10}{te * 1e6:>10.1f}{tc * 1e6:>10.1f}{te / tc:>8.1f}x")
        got, want = cupy.asnumpy(cupy.from_dlpack(e_fn())), cupy.asnumpy(c_fn())
        if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            failures.append(f"tiny {name}: ember {got} != cupy {want}")

    # -- 2. matmul --------------------------------------------------------------------------
    n = 4096
    iters = 5 if args.quick else 20
    ember.manual_seed(0)
    a = ember.rand(n, n, device="cuda") - 0.5            # uniform_ runs on the device (randn's normals on the host)
    b = ember.rand(n, n, device="cuda") - 0.5
    ca, cb = cupy.from_dlpack(a), cupy.from_dlpack(b)      # the same memory, no copy
    te, tc = timed(lambda: a @ b, iters, sync), timed(lambda: ca @ cb, iters, sync)
    flops = 2.0 * n ** 3
    print(f"\nmatmul {n}x{n} float32 ({iters} calls): TFLOP/s")
    print(f"  ember {flops / te / 1e12:8.2f}   cupy {flops / tc / 1e12:8.2f}   ember/cupy time {te / tc:5.2f}")
    diff = float(cupy.abs(cupy.from_dlpack(a @ b) - ca @ cb).max())
    if diff > 1e-2:
        failures.append(f"matmul: max |ember - cupy| = {diff}")

    # -- 3. softmax -------------------------------------------------------------------------
    def cupy_softmax(v):
        e = cupy.exp(v - v.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    te, tc = timed(lambda: ember.softmax(a, dim=1), iters, sync), timed(lambda: cupy_softmax(ca), iters, sync)
    gbytes = 2 * a.numel() * 4 / 1e9
    print(f"\nsoftmax rows of {n}x{n} float32 ({iters} calls): GB/s (one read + one write)")
    print(f"  ember (fused) {gbytes / te:8.1f}   cupy (composite) {gbytes / tc:8.1f}   speed-up {tc / te:5.2f}x")
    diff = float(cupy.abs(cupy.from_dlpack(ember.softmax(a, dim=1)) - cupy_softmax(ca)).max())
    if diff > 1e-6:
        failures.append(f"softmax: max |ember - cupy| = {diff}")

    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nbench OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
