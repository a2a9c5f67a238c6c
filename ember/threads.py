"""`ember.set_num_threads` / `ember.get_num_threads`: the threads the cpu backend's kernels use.

PyTorch's counterparts size its intra-op thread pool. The cpu backend's parallel work is
numpy's BLAS (matmul, conv through im2col), so these size the BLAS thread pool, through
threadpoolctl (which finds OpenBLAS, MKL or BLIS in the process, whichever numpy loaded).
Elementwise numpy kernels are single-threaded either way.

Why it matters: on a machine whose cores are busy, a multi-threaded BLAS waits for descheduled
threads, and small matmuls become several times slower; `ember.set_num_threads(1)` is then the
fix, as `torch.set_num_threads(1)` is for torch (asv_benchmarks/compare.py --threads).
"""
from __future__ import annotations

import builtins

from ember.core.errors import ArgumentTypeError, ArgumentValueError


def _blas_pools() -> list:
    from threadpoolctl import ThreadpoolController

    import numpy  # noqa: F401  (loads the BLAS threadpoolctl is to find)

    return [pool for pool in ThreadpoolController().lib_controllers if pool.user_api == "blas"]


def set_num_threads(n: int) -> None:
    """Use `n` threads in the cpu backend's BLAS calls (torch.set_num_threads)."""
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int):
        raise ArgumentTypeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise ArgumentValueError(f"set_num_threads expects a positive integer, but got {n}")
    for pool in _blas_pools():
        pool.set_num_threads(n)


def get_num_threads() -> int:
    """The threads the cpu backend's BLAS calls use (torch.get_num_threads); 1 without a threaded BLAS."""
    pools = _blas_pools()
    return max((pool.num_threads for pool in pools), default=1)
