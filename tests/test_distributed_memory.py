"""ember.memory sizes one rank of a DDP or FSDP job on the meta device, with the 'fake' backend and no
processes started: the prediction of every rank's peak (and its breakdown) matches what
ember.memory.track measures on cpu in the real 2- and 4-rank jobs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import ember
import ember.distributed as dist
from distributed_support import RANK_ENV, WORKERS, launch

WORKER = str(WORKERS / "memory_prediction.py")


def _ranks(output: str) -> dict[int, tuple[int, dict]]:
    return {int(r): (int(peak), json.loads(parts))
            for r, peak, parts in re.findall(r"rank (\d+): peak (\d+) at_peak (\{[^}]*\})", output)}


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
@pytest.mark.parametrize("n", [2, 4])
def test_meta_prediction_matches_every_rank(mpi_job, mode, n):
    measured = launch(n, WORKER, mode, "cpu", timeout=300)
    assert measured.returncode == 0, measured.stdout + measured.stderr
    real = _ranks(measured.stdout)
    assert sorted(real) == list(range(n)), measured.stdout
    for rank in range(n):
        predicted = subprocess.run([sys.executable, WORKER, mode, "meta", str(rank), str(n)], capture_output=True,
                                   text=True, timeout=300, env=RANK_ENV)
        assert predicted.returncode == 0, predicted.stderr
        (peak, parts), = _ranks(predicted.stdout).values()
        assert abs(peak - real[rank][0]) <= 0.03 * real[rank][0], (rank, peak, real[rank])
        assert parts == real[rank][1], (rank, parts, real[rank][1])


def test_fake_backend_acts_out_the_collectives():
    dist.init_process_group("fake", rank=1, world_size=4)
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (1, 4, "fake")
        t = ember.ones(3)
        assert dist.all_reduce(t) is None and t.tolist() == [1.0, 1.0, 1.0]     # no data moves
        assert dist.all_reduce(t, async_op=True).wait()
        objects = [None] * 4
        dist.all_gather_object(objects, {"rank": 1})
        assert objects == [{"rank": 1}] * 4
        sub = dist.new_group([1, 3])
        assert (dist.get_rank(sub), dist.get_world_size(sub)) == (0, 2)
        with pytest.raises(TypeError, match="Expected parameter `tensor` of type Tensor"):
            dist.broadcast([1.0], src=0)
    finally:
        dist.destroy_process_group()
    with pytest.raises(ValueError, match="0 <= rank < world_size"):
        dist.init_process_group("fake", rank=4, world_size=4)
    assert not dist.is_initialized()
