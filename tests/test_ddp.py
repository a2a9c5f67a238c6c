"""DistributedDataParallel, DistributedSampler, DataParallel and the launcher.

Across processes: tests/distributed_workers/ddp_training.py trains examples/char_gpt.py's GPT and
examples/digits_mlp.py's MLP for 20 steps with DDP on 2 and 4 ranks and checks them against one
process trained on the concatenated batches (and DDP's features); failures.py, started by
`python -m ember.distributed.run`, kills or hangs one rank and the others must raise
DistBackendError within the group's timeout. In this process: the autograd hooks DDP is built on,
against torch, and the sampler against torch's.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import torch
from torch.utils.data import DistributedSampler as TorchSampler

import ember
from ember import nn
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from distributed_support import RANK_ENV, WORKERS, launch


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


def run_launcher(*args: str, timeout: int = 120) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m ember.distributed.run ARGS`, and the time it ended."""
    result = subprocess.run([sys.executable, "-m", "ember.distributed.run", *args], capture_output=True, text=True,
                            timeout=timeout, env=RANK_ENV)
    return result, time.time()


def test_launcher_sets_torchrun_environment(mpi_job):
    result, _ = run_launcher("--nproc-per-node", "2", str(WORKERS / "failures.py"), "env", "30")
    assert result.returncode == 0, result.stdout + result.stderr
    envs = sorted(re.findall(r"^env (.*)$", result.stdout, re.M))
    assert envs == [f"RANK={r} WORLD_SIZE=2 LOCAL_RANK={r} LOCAL_WORLD_SIZE=2 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 "
                    "MASTER_PORT=29500" for r in range(2)]
    assert sorted(re.findall(r"rank (\d) finished", result.stdout)) == ["0", "1"]


def test_killed_rank_makes_the_others_raise(mpi_job):
    """Acceptance: SIGKILL one rank mid-step; every other rank exits non-zero with DistBackendError
    within the timeout (10 s) + 5 s, and the launcher names the rank and its signal."""
    result, ended = run_launcher("--nproc_per_node", "3", str(WORKERS / "failures.py"), "kill", "10")
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    killed_at = float(re.search(r"rank 1 killed at ([\d.]+)", result.stdout).group(1))
    raised = {int(r): float(t) for r, t in re.findall(r"rank (\d) raised DistBackendError at ([\d.]+)", result.stdout)}
    assert sorted(raised) == [0, 2], report
    assert max(raised.values()) - killed_at <= 15 and ended - killed_at <= 15, (raised, killed_at, ended)
    assert re.search(r"rank 1 \(pid \d+ on .*\) was killed by signal 9 \(SIGKILL\)", result.stderr), report
    for r in (0, 2):
        assert re.search(rf"rank {r} \(pid \d+ on .*\) raised DistBackendError: .*rank 1 \(pid \d+ on .*\) exited",
                         result.stderr), report


def test_hung_rank_is_named_after_the_timeout(mpi_job):
    result, _ = run_launcher("--nproc-per-node", "2", "--failure-grace", "1", str(WORKERS / "failures.py"),
                             "hang", "2")
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    assert re.search(r"rank 0 \(pid \d+ on .*\) raised DistBackendError: all_reduce: rank 0 in group \[0, 1\]: "
                     r"timed out after 2 s; rank 1 \(pid \d+ on .*\) has not entered this collective", result.stderr), report
    assert "rank 1 (pid" in result.stderr and "stopping them" in result.stderr, report


def test_launcher_refuses_what_mpi_cannot_do():
    for args, message in ((["--max-restarts", "3"], "does not restart"),
                          (["--nnodes", "2"], "--hosts or --hostfile"),
                          (["--nnodes", "2", "--node-rank", "1", "--hosts", "a,b"], "started once, from the first node"),
                          (["--nnodes", "1:4"], "elastic")):
        result = subprocess.run([sys.executable, "-m", "ember.distributed.run", *args, "train.py"],
                                capture_output=True, text=True, timeout=60, env=RANK_ENV)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)


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
    with pytest.raises(ValueError, match="one device"):
        nn.DataParallel(inner, device_ids=[0, 1])


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
