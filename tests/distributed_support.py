"""What the multi-process tests share: the mpiexec of the environment running the tests, a clean
environment for the ranks, a free port for torch's rendezvous, and the fixture that skips (saying
why) only when no MPI job can start."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ember.distributed as dist

WORKERS = Path(__file__).parent / "distributed_workers"
# a rank's environment: no debug level or torchrun variables inherited from whoever runs the tests
CLEAN = {k: v for k, v in os.environ.items()
         if k not in ("EMBER_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                      "EMBER_RUN_DIR")}
RANK_ENV = {**CLEAN, "OMP_NUM_THREADS": "1"}


def mpiexec() -> str | None:
    """The mpiexec of the environment running the tests (the mpich wheel installs it beside python)."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def free_port() -> int:
    """A port nothing listens on now, for torch's TCP rendezvous in the workers that compare with torch
    (so concurrent runs do not collide)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n: int, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """`mpiexec -n N python ARGS...`, output captured."""
    return subprocess.run([mpiexec(), "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=RANK_ENV)


def run_launcher(*args: str, timeout: int = 120, env: dict | None = None,
                 launcher: str = "ember.distributed.run") -> tuple[subprocess.CompletedProcess, float]:
    """`python -m ember.distributed.run ARGS` (or another launcher module), and the time it ended."""
    result = subprocess.run([sys.executable, "-m", launcher, *args], capture_output=True, text=True,
                            timeout=timeout, env=RANK_ENV if env is None else env)
    return result, time.time()


@pytest.fixture(scope="session")
def mpi_job():
    """Skip (saying why) only when an MPI job cannot be started at all."""
    if not dist.is_available():
        pytest.skip("mpi4py is not installed: pip install 'ember[distributed]'")
    if mpiexec() is None:
        pytest.skip("no mpiexec found beside the interpreter or on PATH (the mpich wheel provides it)")
    probe = launch(2, "-c", "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()", timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"mpiexec cannot start a 2-process job here: {probe.stderr.strip()[-500:]}")
