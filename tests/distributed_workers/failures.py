"""Run by tests/test_launcher.py under `python -m ember.distributed.run`: jobs in which one rank fails
or leaves early, to check that the others raise DistBackendError instead of waiting forever and
that the launcher reports what happened.

    python failures.py MODE TIMEOUT_SECONDS

A DDP training job of 3 steps, whose group timeout is TIMEOUT_SECONDS. MODE `env` prints
torchrun's variables and trains (nothing fails); in the middle of step 2 (after its forward,
before its backward) rank 1 then, by MODE: `kill`s itself with SIGKILL, `hang`s (sleeps), or
`exit`s with status 0, printing the time first. Each rank prints the time when it raised
DistBackendError. Other modes, without training:

* `before-init` (`fail-before-init`): rank 1 exits with status 0 (3) before init_process_group;
  the others call it, where MPI's initialisation waits for rank 1 forever.
* `gather`: rank 1 takes its part in a gather to rank 0 and finishes at once; rank 2 joins the
  gather 2 s later; nothing fails, so no rank may be blamed for finishing.
* `no-init`: no init_process_group at all; rank 0 ends at once, the others 3 s later.
"""
from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP


def say(line: str) -> None:
    """Print `line` in one write, so that lines of ranks printing at the same time do not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def train(mode: str, rank: int) -> None:
    """Three DDP steps; rank 1 fails (or leaves) as `mode` says in the middle of step 2."""
    ember.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(ember.randn(4, 8)).pow(2).mean()
        if step == 1 and rank == 1 and mode == "kill":
            say(f"rank 1 killed at {time.time():.3f}")
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 1 and rank == 1 and mode == "hang":
            say(f"rank 1 hangs at {time.time():.3f}")
            time.sleep(3600)
        if step == 1 and rank == 1 and mode == "exit":
            say(f"rank 1 exits at {time.time():.3f}")
            sys.exit(0)
        opt.zero_grad()
        try:
            loss.backward()
        except dist.DistBackendError:
            say(f"rank {rank} raised DistBackendError at {time.time():.3f}")
            raise
        opt.step()


def gather(rank: int) -> None:
    """Rank 0 gathers every rank's number; rank 2 joins 2 s late, after rank 1 has finished."""
    mine = ember.full((4,), float(rank))
    if rank == 2:
        time.sleep(2)
        say(f"rank 2 joins the gather at {time.time():.3f}")
    out = [ember.zeros(4) for _ in range(dist.get_world_size())] if rank == 0 else None
    dist.gather(mine, out, dst=0)
    if rank == 0:
        say(f"rank 0 gathered {[t[0].item() for t in out]}")
    say(f"rank {rank} done at {time.time():.3f}")


def main() -> None:
    mode, timeout = sys.argv[1], float(sys.argv[2])
    launched_rank = int(os.environ["RANK"])
    if mode == "no-init":
        time.sleep(0 if launched_rank == 0 else 3)
        say(f"rank {launched_rank} finished")
        return
    if launched_rank == 1 and mode in ("before-init", "fail-before-init"):
        code = 0 if mode == "before-init" else 3
        say(f"rank 1 exits with status {code} before init_process_group")
        sys.exit(code)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
    rank = dist.get_rank()
    if mode == "env":
        names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
                 "OMP_NUM_THREADS")
        say("env " + " ".join(f"{k}={os.environ.get(k)}" for k in names))
    if mode == "gather":
        gather(rank)
        return
    train(mode, rank)
    say(f"rank {rank} finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
