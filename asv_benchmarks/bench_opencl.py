"""Throughput of the opencl backend (ember-opencl) against numpy on the same machine.

The figures with targets: GEMM GFLOP/s on 1024 x 1024 float32 (target >= 25% of numpy's),
elementwise add and sum throughput on 4M float32. Each class runs one operation with the
`backend` parameter ("ember-opencl", "numpy"), so asv reports both from one run:
`time_*` is asv's own timing of one call, `track_*` the rate (median of a few timed calls).
Every ember call waits for the device (`ember_opencl.runtime.synchronize()`), so the time
is the work, not the enqueue. Classes skip (NotImplementedError in setup) when ember_opencl
is not installed or finds no OpenCL device.

    asv run --python=same --quick --bench opencl
    python asv_benchmarks/compare_opencl.py      # the three ratios side by side, alternating
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

BACKENDS = ["ember-opencl", "numpy"]
GEMM_N = 1024
STREAM_N = 4 * 2**20          # 4M float32 (16 MiB per operand)


def opencl_runtime():
    """ember_opencl.runtime, or NotImplementedError (asv's skip) when there is no opencl device."""
    try:
        import ember  # noqa: F401
        from ember_opencl import runtime
    except ImportError:
        raise NotImplementedError("ember_opencl is not installed") from None
    if not runtime.is_available():
        raise NotImplementedError("ember_opencl finds no OpenCL device")
    return runtime


def make_case(area: str, backend: str) -> tuple[Callable[[], object], float]:
    """A zero-argument call running one `area` operation to completion on `backend`, and the work
    it does: floating-point operations for "gemm", bytes moved for "add" and "sum"."""
    rng = np.random.default_rng(0)
    if area == "gemm":
        host = [rng.standard_normal((GEMM_N, GEMM_N), dtype=np.float32) for _ in range(2)]
        work = 2.0 * GEMM_N ** 3
    else:
        host = [rng.standard_normal(STREAM_N, dtype=np.float32) for _ in range(2 if area == "add" else 1)]
        work = 4.0 * STREAM_N * (3 if area == "add" else 1)      # add reads two and writes one operand
    ops = {"gemm": lambda a, b: a @ b, "add": lambda a, b: a + b, "sum": lambda a: a.sum()}
    op = ops[area]
    if backend == "numpy":
        return (lambda: op(*host)), work
    runtime = opencl_runtime()
    import ember

    dev = [ember.tensor(h, device="opencl") for h in host]

    def run():
        out = op(*dev)
        runtime.synchronize()
        return out

    run()                                                         # builds and caches the kernels
    return run, work


def rate(fn: Callable[[], object], work: float, repeat: int = 5) -> float:
    """work / median seconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return work / statistics.median(times)


class _Area:
    """One operation (`area`, see make_case) per backend; subclasses add the benchmarks."""

    area = ""
    params = BACKENDS
    param_names = ["backend"]
    timeout = 180

    def setup(self, backend):
        self.fn, self.work = make_case(self.area, backend)


class GemmFloat32(_Area):
    """`a @ b` on 1024 x 1024 float32 (mm -> bmm: the opencl GEMM kernel)."""

    area = "gemm"

    def time_matmul_1024(self, backend):
        self.fn()

    def track_gflops_1024(self, backend):
        return rate(self.fn, self.work, repeat=3) / 1e9

    track_gflops_1024.unit = "GFLOP/s"


class ElementwiseAddFloat32(_Area):
    """`a + b` on 4M float32: memory bandwidth of the pointwise engine (bytes read + written)."""

    area = "add"

    def time_add_4m(self, backend):
        self.fn()

    def track_gbytes_per_s_4m(self, backend):
        return rate(self.fn, self.work) / 1e9

    track_gbytes_per_s_4m.unit = "GB/s"


class SumFloat32(_Area):
    """`a.sum()` on 4M float32: the parallel reduction (bytes read)."""

    area = "sum"

    def time_sum_4m(self, backend):
        self.fn()

    def track_gbytes_per_s_4m(self, backend):
        return rate(self.fn, self.work) / 1e9

    track_gbytes_per_s_4m.unit = "GB/s"
