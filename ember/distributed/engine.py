"""The communication engines behind the backends: MPI through mpi4py, NCCL through cupy's binding.

mpi4py is imported (which initialises MPI) only when a process group is created, so
`import ember.distributed` and `is_available()` never start MPI. Every MPI failure reaches the
user as `DistBackendError` naming the operation and the rank.
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import warnings

from .errors import DistBackendError
from .reduce_op import RedOpType

__all__ = ["mpi", "mpi_installed", "nccl", "nccl_unavailable_reason", "mpi_errors", "mpi_reduction"]

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


def _preload_pip_nccl() -> None:
    """Load libnccl from the nvidia-nccl-cu12 wheel, when it is installed, so cupy's NCCL binding
    finds it (cupy looks only in the CUDA toolkit's folders; a CUDA build of torch brings the wheel)."""
    spec = importlib.util.find_spec("nvidia.nccl") if importlib.util.find_spec("nvidia") else None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        library = os.path.join(folder, "lib", "libnccl.so.2")
        if os.path.exists(library):
            ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
            return


_NCCL: list = []        # [cupy's NCCL binding] once loaded


def nccl():
    """cupy's NCCL binding (cupy_backends.cuda.libs.nccl), loading libnccl first when cupy did not
    find it; ImportError (naming what is missing) when there is none."""
    if _NCCL:
        return _NCCL[0]
    try:
        import cupy  # noqa: F401  (cupy first: it loads the CUDA runtime the binding links against)
    except ImportError as e:
        raise ImportError("cupy is not installed (the 'nccl' backend runs NCCL through cupy.cuda.nccl)") from e
    with warnings.catch_warnings():          # cupy warns when libnccl is missing: the error below says it
        warnings.simplefilter("ignore")
        from cupy.cuda import nccl as wrapper
    if not getattr(wrapper, "available", False):
        _preload_pip_nccl()
    try:
        from cupy_backends.cuda.libs import nccl as binding
    except ImportError as e:
        raise ImportError("cupy cannot load the NCCL library libnccl.so.2 (pip install nvidia-nccl-cu12)") from e
    _NCCL.append(binding)
    return binding


def nccl_unavailable_reason() -> str | None:
    """Why the 'nccl' backend cannot serve this process (the first missing piece: cupy, its NCCL
    binding and library, a CUDA GPU); None when it can."""
    try:
        nccl()
    except ImportError as e:
        return str(e)
    import cupy
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy raises its CUDARuntimeError when there is no driver
        return f"no CUDA GPU is usable ({e})"
    if count == 0:
        return "no CUDA GPU is visible"
    return None


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
