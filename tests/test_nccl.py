"""The 'nccl' backend on real GPUs: tests/distributed_workers/nccl_collectives.py under
`mpiexec -n N`, N the visible GPUs (at most 2), each rank on its own GPU. It checks every
collective against numpy, async handles on the current stream, subgroups, the errors, and DDP and
FSDP training over NCCL against one process. Skipped, saying why, where NCCL cannot run (no GPU,
no cupy NCCL binding or library); `make gpu-check` runs it on a GPU machine. Without a GPU,
tests/test_distributed.py checks that init_process_group('nccl') says what is missing."""
from __future__ import annotations

import re

import pytest

import ember
import ember.distributed as dist
from distributed_support import WORKERS, launch


def test_nccl_collectives_and_training(mpi_job):
    if not dist.is_nccl_available():
        from ember.distributed import engine

        pytest.skip(f"the 'nccl' backend cannot run here: {engine.nccl_unavailable_reason()}")
    n = min(2, ember.cuda.device_count())
    result = launch(n, str(WORKERS / "nccl_collectives.py"), timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = {int(r): int(k) for r, k in re.findall(r"rank (\d+): (\d+) checks passed", result.stdout)}
    assert sorted(passed) == list(range(n)), report
    assert min(passed.values()) > 150, passed        # every part of the worker ran on every rank
