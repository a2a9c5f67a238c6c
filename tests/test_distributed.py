"""ember.distributed: the collectives across real processes (mpiexec -n 2 and -n 4 running
tests/distributed_workers/collectives.py, which checks every collective, reduction and dtype
against numpy on every rank), and in this process the calls that need no MPI job: the errors
before init_process_group and of a backend that cannot run, compared with torch.distributed's."""
from __future__ import annotations

import datetime
import re
import subprocess
import sys

import pytest
import torch.distributed as tdist

import ember
import ember.distributed as dist
from distributed_support import CLEAN, WORKERS, launch

WORKER = WORKERS / "collectives.py"


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_across_processes(mpi_job, n):
    result = launch(n, str(WORKER))
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = {int(r): int(k) for r, k in re.findall(r"rank (\d+): (\d+) checks passed", result.stdout)}
    assert sorted(passed) == list(range(n)), report
    assert min(passed.values()) > 250, passed        # every part of the worker ran on every rank


# ----------------------------------------------------------------------------- in this process
NEEDS_INIT = {
    "get_rank": lambda m: m.get_rank(),
    "get_world_size": lambda m: m.get_world_size(),
    "get_backend": lambda m: m.get_backend(),
    "barrier": lambda m: m.barrier(),
    "new_group": lambda m: m.new_group([0]),
    "destroy_process_group": lambda m: m.destroy_process_group(),
}


@pytest.mark.parametrize("call", sorted(NEEDS_INIT))
def test_calls_before_init_raise_as_torch(call):
    with pytest.raises(Exception) as theirs:
        NEEDS_INIT[call](tdist)
    with pytest.raises(Exception) as ours:
        NEEDS_INIT[call](dist)
    if call != "destroy_process_group":            # torch asserts there; ember says what is missing
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)
    assert isinstance(ours.value, ValueError)
    assert "Default process group has not been initialized" in str(ours.value)


def test_collective_before_init_raises_as_torch():
    import torch
    with pytest.raises(ValueError) as theirs:
        tdist.all_reduce(torch.ones(2))
    with pytest.raises(ValueError) as ours:
        dist.all_reduce(ember.ones(2))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="init_process_group"):
        dist.all_gather_object([None], 1)


def test_availability_and_names():
    import importlib.util
    assert dist.is_available() == (importlib.util.find_spec("mpi4py") is not None)
    assert dist.is_mpi_available() == dist.is_gloo_available() == dist.is_available()
    if not ember.cuda.is_available():
        assert dist.is_nccl_available() is False
    assert not dist.is_initialized() and dist.group.WORLD is None
    assert ember.distributed is dist                   # the lazy attribute of the ember package
    assert {k: v.value for k, v in dist.ReduceOp.RedOpType.__members__.items()} == \
        {k: v.value for k, v in tdist.ReduceOp.RedOpType.__members__.items()}
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM and dist.ReduceOp.AVG.name == "AVG"
    assert issubclass(dist.DistBackendError, RuntimeError) and issubclass(dist.DistBackendError, dist.DistError)
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo" and dist.Backend.MPI == tdist.Backend.MPI


def test_import_starts_no_mpi():
    code = "import sys, ember.distributed as d; d.is_available(); print('mpi4py.MPI' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=CLEAN)
    assert out.stdout.strip() == "False", out.stderr


def test_nccl_without_gpu_says_why():
    if dist.is_nccl_available():
        pytest.skip("NCCL can run here: tests/test_nccl.py runs it")
    with pytest.raises(RuntimeError, match=r"'nccl' backend is not available: .*(cupy|CUDA|GPU|NCCL)"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_bad_init_arguments():
    with pytest.raises(TypeError) as theirs:
        tdist.init_process_group("gloo", timeout=5)
    with pytest.raises(TypeError) as ours:
        dist.init_process_group("gloo", timeout=5)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Unknown backend type 'bogus'"):
        dist.init_process_group("bogus")
    with pytest.raises(ValueError, match="init_method must start with"):
        dist.init_process_group("gloo", init_method="bogus://x")
    with pytest.raises(ValueError, match="no Store"):
        dist.init_process_group("gloo", store=object())
    with pytest.raises(TypeError, match="timedelta"):
        dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1).total_seconds())
    assert not dist.is_initialized()
