"""DistributedDataParallel against torch's, across real processes.

tests/distributed_workers/ddp_vs_torch.py runs under `mpiexec -n N` (N = 2 and 3, one job each)
and, on every rank, runs each scenario (gradient averaging over several buckets, a second backward
with retain_graph, a module wrapped twice, a backward through `.module`, a no_grad forward before
the backward, find_unused_parameters after no_sync / with gradient_as_bucket_view / with a
dataclass output, a custom Function returning a None gradient, BatchNorm buffers, no_sync
accumulation, the unfinished-reduction error, static_graph) with torch's DDP on a gloo group and
with ember's, comparing gradients, buffers and errors exactly. Every scenario must match on every rank.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from distributed_support import WORKERS, free_port, launch

# one verdict per scenario per rank (found anywhere: mpiexec may join two ranks' lines)
LINE = re.compile(r"rank (\d+) scenario (\w+): (ok|MISMATCH)(.*?)(?=rank \d+ scenario |rank \d+: |$)", re.M)
SCENARIOS = 13                  # the worker's scenarios, all run by each job
TOTAL = re.compile(r"rank (\d+): (\d+) scenarios matched of (\d+)")


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_matches_torch(mpi_job, n):
    try:
        result = launch(n, str(WORKERS / "ddp_vs_torch.py"), str(free_port()), timeout=150)
    except subprocess.TimeoutExpired as e:         # a rank waited for a collective the others never started
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        pytest.fail(f"the job timed out; its output so far:\n{out[-6000:]}")
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-6000:]
    totals = {int(r): (int(k), int(m)) for r, k, m in TOTAL.findall(result.stdout)}
    assert sorted(totals) == list(range(n)), report[-6000:]
    verdicts = LINE.findall(result.stdout)
    mismatches = sorted(f"rank {r} {name}:{detail}" for r, name, verdict, detail in verdicts if verdict == "MISMATCH")
    failed = sorted({name for _, name, verdict, _ in verdicts if verdict == "MISMATCH"})
    scenarios = totals[0][1]
    assert len(verdicts) == n * scenarios, report[-6000:]
    assert scenarios >= SCENARIOS and all(k == m == scenarios for k, m in totals.values()) and not mismatches, (
        f"{len(failed)} of {scenarios} scenarios differ from torch on some rank: {failed}\n" + "\n".join(mismatches))
