"""DistributedDataParallel, DistributedSampler and DataParallel.

Across processes: tests/distributed_workers/ddp_training.py trains examples/char_gpt.py's GPT and
examples/digits_mlp.py's MLP for 20 steps with DDP on 2 and 4 ranks and checks them against one
process trained on the concatenated batches (and DDP's features), and examples/ddp_char_gpt.py
runs under the launcher (tests/test_ddp_vs_torch.py compares the features with torch's DDP;
tests/test_launcher.py tests the launcher). In this process: the autograd hooks DDP is built on,
against torch, and the sampler against torch's.
"""
from __future__ import annotations

import re

import pytest
import torch
from torch.utils.data import DistributedSampler as TorchSampler

import ember
from ember import nn
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from distributed_support import WORKERS, launch, run_launcher


# ----------------------------------------------------------------------------- across processes
@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("program", ["gpt", "mlp"])
def test_ddp_equals_one_process(mpi_job, program, n):
    result = launch(n, str(WORKERS / "ddp_training.py"), program, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    passed = {int(r): int(k) for r, k in re.findall(r"rank (\d+): (\d+) checks passed", result.stdout)}
    assert sorted(passed) == list(range(n)), report
    # rank 0 compares 20 losses and every parameter in two dtypes; every rank compares 40 gradients
    assert passed[0] > 2 * (20 + 5) and min(passed.values()) > 40, passed


# ----------------------------------------------------------------------------- in this process
def test_post_accumulate_grad_hook_as_torch():
    seen = {}
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        log = seen[lib.__name__] = []
        w.register_post_accumulate_grad_hook(lambda p, log=log: log.append(p.grad.tolist()))
        (w * 2).sum().backward()
        (w * w).sum().backward()
        lib.autograd.grad((w * 3).sum(), w)                         # no accumulation: no call
        (w * 4).sum().backward(inputs=[w])
        with pytest.raises(RuntimeError, match="non-leaf"):
            (w * 2).register_post_accumulate_grad_hook(print)
    assert seen["ember"] == seen["torch"] == [[2.0] * 3, [4.0] * 3, [8.0] * 3]


def test_queue_callback_runs_when_backward_ends():
    order = []
    w = ember.ones(2, requires_grad=True)

    def hook(p):
        order.append("hook")
        ember.autograd.Variable._execution_engine.queue_callback(lambda: order.append(("end", p.grad.tolist())))

    w.register_post_accumulate_grad_hook(hook)
    (w * 3).sum().backward()
    assert order == ["hook", ("end", [3.0, 3.0])]
    with pytest.raises(RuntimeError, match="during a backward pass"):
        ember.autograd.Variable._execution_engine.queue_callback(print)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (12, 4, False),
                                                  (11, 4, True)])
def test_distributed_sampler_as_torch(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    # shuffled: one permutation per epoch, shared by the ranks, each index on exactly one rank
    parts = [DistributedSampler(range(n), replicas, r, seed=3, drop_last=drop_last) for r in range(replicas)]
    firsts = [list(p) for p in parts]
    union = sorted(i for part in firsts for i in part)
    total = len(parts[0]) * replicas
    assert len(union) == total and (set(union) == set(range(n)) or drop_last)
    generator = ember.Generator().manual_seed(3)
    perm = ember.randperm(n, generator=generator).tolist()
    assert firsts[0][:len(perm[0:total:replicas])] == (perm + perm * replicas)[0:total:replicas]
    for p in parts:
        p.set_epoch(1)
    assert [list(p) for p in parts] != firsts or n < 3
    assert [list(p) for p in parts] == [list(p) for p in parts]          # the same order within an epoch
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(n), 3, 3)


def test_distributed_sampler_in_a_loader():
    data = TensorDataset(ember.arange(10))
    seen = [b[0].tolist() for r in range(2)
            for b in DataLoader(data, batch_size=5, sampler=DistributedSampler(data, 2, r, shuffle=False))]
    assert seen == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]


def test_data_parallel_runs_the_module():
    ember.manual_seed(0)
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    x = ember.randn(4, 3)
    assert model(x).tolist() == inner(x).tolist()
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    assert nn.DataParallel(inner, device_ids=[0, 1]).device_ids == []     # cpu: ignored, as torch


def test_ddp_needs_a_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(nn.Linear(2, 2))


def test_ddp_char_gpt_example(mpi_job, tmp_path):
    example = WORKERS.parents[1] / "examples" / "ddp_char_gpt.py"
    result, _ = run_launcher("--nproc-per-node", "2", str(example), "--max-iters", "4", "--log-interval", "2",
                             "--n-layer", "1", "--n-embd", "32", "--block-size", "16", "--num-chars", "20",
                             "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    losses = [float(v) for v in re.findall(r"^step +\d+ +loss ([\d.]+)", result.stdout, re.M)]
    assert len(losses) == 2 and all(0 < v < 5 for v in losses), result.stdout
    saved = ember.load(tmp_path / "model.safetensors")
    assert saved["transformer.wte.weight"].shape[1] == 32          # tied with lm_head: saved once
