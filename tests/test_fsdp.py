"""FSDP (fully_shard, FullyShardedDataParallel) and sharded checkpoints.

Across processes: tests/distributed_workers/fsdp_training.py trains examples/char_gpt.py's GPT and
examples/digits_mlp.py's MLP fully sharded on 2 and 4 ranks and checks them against one process
on the whole batches (and each rank's state bytes against 1/N of one process's); a checkpoint
saved on 4 ranks loads on 2 and on 1 with the same next loss. In this process: the errors (the
saved-tensor hooks FSDP is built on are checked against torch in tests/test_saved_tensors_hooks.py).
"""
from __future__ import annotations

import re

import pytest

from ember import nn
from distributed_support import WORKERS, launch

WORKER = str(WORKERS / "fsdp_training.py")


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("program", ["gpt", "mlp"])
def test_fsdp_equals_one_process(mpi_job, program, n):
    result = launch(n, WORKER, "train", program, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = {int(r): int(k) for r, k in re.findall(r"rank (\d+): (\d+) checks passed", result.stdout)}
    assert sorted(passed) == list(range(n)) and passed[0] > 2 * 20, report
    sizes = re.findall(r"state bytes (\d+) of (\d+) on rank (\d) of", result.stdout)
    assert len(sizes) == 2 * n, report                 # every rank measured its state, in both dtypes
    assert all(int(mine) <= int(whole) / n * 1.05 for mine, whole, _ in sizes), sizes


def test_checkpoint_saved_on_4_ranks_loads_on_2_and_1(mpi_job, tmp_path):
    saved = launch(4, WORKER, "save", str(tmp_path), timeout=300)
    assert saved.returncode == 0, saved.stdout + saved.stderr
    losses = [float(re.search(r"next loss (\S+)", saved.stdout).group(1))]
    for n in (2, 1):
        loaded = launch(n, WORKER, "load", str(tmp_path), timeout=300)
        assert loaded.returncode == 0, loaded.stdout + loaded.stderr
        losses.append(float(re.search(r"next loss (\S+)", loaded.stdout).group(1)))
    assert len(set(losses)) == 1 or max(losses) - min(losses) < 1e-12, losses
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.json"] + [f"rank{r}.safetensors" for r in range(4)]


def test_fully_shard_needs_a_process_group():
    from ember.distributed.fsdp import fully_shard

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        fully_shard(nn.Linear(2, 2))
