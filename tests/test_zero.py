"""ZeroRedundancyOptimizer (ember.distributed.optim) across real processes.

tests/distributed_workers/zero_training.py runs under `mpiexec -n N` (N = 2 and 4) and checks, on
every rank: DDP + ZeroRedundancyOptimizer(AdamW) training of the digits MLP for 20 steps equals one
process with plain AdamW on the whole batches (float64, 1e-10); each rank's AdamW state covers only
its share of the parameters, the shares partition the model and the largest is within 1/N of the
bytes plus the largest parameter; the state consolidated on rank 0 equals the single process's
state_dict and, loaded on every rank, continues as it does; StepLR on the wrapper drives the local
optimizers' lr; against torch's ZeroRedundancyOptimizer (gloo, in the same processes; on the
default group and on a subgroup) the partition, the parameters after each step (1e-12), the
consolidated state, and the errors match; and parameters of two dtypes train as one process does.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from distributed_support import WORKERS, free_port, launch


@pytest.mark.parametrize("n", [2, 4])
def test_zero_redundancy_optimizer(mpi_job, n):
    try:
        result = launch(n, str(WORKERS / "zero_training.py"), str(free_port()), timeout=150)
    except subprocess.TimeoutExpired as e:         # a rank waited for a collective the others never started
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        pytest.fail(f"the job timed out; its output so far:\n{out[-6000:]}")
    report = (result.stdout + result.stderr)[-6000:]
    assert result.returncode == 0, report
    passed = {int(r): int(k) for r, k in re.findall(r"rank (\d+): (\d+) checks passed", result.stdout)}
    assert sorted(passed) == list(range(n)), report
    # rank 0 also compares the consolidated state (6 parameters x 3 entries) with the single process's
    assert passed[0] >= 45 and min(passed.values()) >= 20, passed
