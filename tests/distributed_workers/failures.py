"""Run by tests/test_ddp.py under `python -m ember.distributed.run`: a DDP training job in which one
rank fails, to check that the others raise DistBackendError instead of waiting forever.

    python failures.py MODE TIMEOUT_SECONDS

MODE `env` prints torchrun's variables and trains 3 steps (nothing fails); `kill`: rank 1 kills
itself with SIGKILL in the middle of step 2 (after its forward, before its backward), printing
the time first; `hang`: rank 1 sleeps in the middle of step 2 instead. The group's timeout is
TIMEOUT_SECONDS. Each rank prints the time when it raised DistBackendError.
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


def main() -> None:
    mode, timeout = sys.argv[1], float(sys.argv[2])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
    rank = dist.get_rank()
    if mode == "env":
        names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
        print("env " + " ".join(f"{k}={os.environ.get(k)}" for k in names), flush=True)
    ember.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(ember.randn(4, 8)).pow(2).mean()
        if step == 1 and rank == 1 and mode == "kill":
            print(f"rank 1 killed at {time.time():.3f}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 1 and rank == 1 and mode == "hang":
            print(f"rank 1 hangs at {time.time():.3f}", flush=True)
            time.sleep(3600)
        opt.zero_grad()
        try:
            loss.backward()
        except dist.DistBackendError:
            print(f"rank {rank} raised DistBackendError at {time.time():.3f}", flush=True)
            raise
        opt.step()
    print(f"rank {rank} finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
