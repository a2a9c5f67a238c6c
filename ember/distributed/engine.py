"""The communication engines behind the backends: MPI through mpi4py, and the NCCL availability check.

mpi4py is imported (which initialises MPI) only when a process group is created, so
`import ember.distributed` and `is_available()` never start MPI. Every MPI failure reaches the
user as `DistBackendError` naming the operation and the rank.
"""
from __future__ import annotations

import contextlib
import importlib.util
import warnings

from .errors import DistBackendError
from .reduce_op import RedOpType

__all__ = ["mpi", "mpi_installed", "nccl_unavailable_reason", "mpi_errors", "mpi_reduction"]

INSTALL_HINT = "pip install 'ember[distributed]' (mpi4py and the mpich wheel, which brings mpiexec)"


def mpi_installed() -> bool:
    """Whether mpi4py can be imported (checked without importing it, so MPI is not started)."""
    return importlib.util.find_spec("mpi4py") is not None


def mpi():
    """mpi4py's MPI module; the first call initialises MPI in this process."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(f"ember.distributed: the 'mpi' backend needs mpi4py and an MPI library: {INSTALL_HINT}") from e
    return MPI


def nccl_unavailable_reason() -> str:
    """Why the 'nccl' backend cannot serve this process (ember has no NCCL engine yet; before that,
    the first missing piece of cupy's NCCL and a CUDA GPU is named)."""
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (the 'nccl' backend runs NCCL through cupy.cuda.nccl)"
    try:
        with warnings.catch_warnings():          # cupy warns when libnccl is missing: the reason says it
            warnings.simplefilter("ignore")
            from cupy.cuda import nccl
    except ImportError as e:
        return f"cupy has no NCCL support ({e})"
    if not getattr(nccl, "available", True):
        return "cupy cannot load the NCCL library (libnccl.so.2; pip install nvidia-nccl-cu12)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy raises its CUDARuntimeError when there is no driver
        return f"no CUDA GPU is usable ({e})"
    if count == 0:
        return "no CUDA GPU is visible"
    return "ember's NCCL engine is not built yet; use the 'mpi' backend with cpu tensors"


@contextlib.contextmanager
def mpi_errors(op: str, rank: int):
    """Turn an MPI error raised inside the block into DistBackendError naming `op` and `rank`."""
    MPI = mpi()
    try:
        yield
    except MPI.Exception as e:
        raise DistBackendError(f"{op}: the MPI engine failed on rank {rank}: {e.Get_error_string()}") from e


def mpi_reduction(op, category: str):
    """The MPI operation serving `op` on values of `category` ('float', 'int' or 'bool', after the
    staging of ember.distributed.staging), and whether an AVG division must follow. `op` was checked
    already (staging.check_reduce_op)."""
    MPI = mpi()
    if category == "bool":
        # torch's bool reductions: SUM and MAX are a logical or, PRODUCT and MIN a logical and
        table = {RedOpType.SUM: MPI.MAX, RedOpType.MAX: MPI.MAX, RedOpType.BOR: MPI.BOR,
                 RedOpType.PRODUCT: MPI.MIN, RedOpType.MIN: MPI.MIN, RedOpType.BAND: MPI.BAND,
                 RedOpType.BXOR: MPI.BXOR}
        return table[op], False
    table = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD, RedOpType.MIN: MPI.MIN,
             RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND, RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
    return table[op], op is RedOpType.AVG
