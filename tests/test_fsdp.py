"""FSDP (fully_shard, FullyShardedDataParallel) and sharded checkpoints.

Across processes: tests/distributed_workers/fsdp_training.py trains examples/char_gpt.py's GPT and
examples/digits_mlp.py's MLP fully sharded on 2 and 4 ranks and checks them against one process
on the whole batches (and each rank's state bytes against 1/N of one process's); a checkpoint
saved on 4 ranks loads on 2 and on 1 with the same next loss. In this process: the saved-tensor
hooks FSDP is built on, against torch, and the errors.
"""
from __future__ import annotations

import re

import pytest
import torch

import ember
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


def test_saved_tensors_hooks_as_torch():
    logs = {}
    for lib in (torch, ember):
        log = logs[lib.__name__] = []

        def pack(t, log=log):
            log.append(("pack", tuple(t.shape)))
            return ("box", t.detach().clone())

        def unpack(box, log=log):
            log.append("unpack")
            return box[1]

        x = lib.arange(3.0, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * x).exp().sum()
        y.backward()
        log.append([round(v, 4) for v in x.grad.tolist()])
    assert logs["ember"] == logs["torch"]
    # a pack hook returning the tensor itself keeps the in-place check
    a = ember.ones(2, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        b = a * 1
        c = (b * b).sum()
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.backward()


def test_fully_shard_needs_a_process_group():
    from ember.distributed.fsdp import fully_shard

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        fully_shard(nn.Linear(2, 2))
