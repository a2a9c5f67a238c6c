"""Weak scaling of DistributedDataParallel: the nanoGPT-style training step of workloads.py (batch 8 per
rank), timed in one process without DDP and in N processes with it.

    mpiexec -n 2 python asv_benchmarks/ddp_scaling.py     # prints the median time per step (rank 0)

compare.py runs it with 1 and 2 processes, one thread each, alternately, and reports the ratio:
with perfect scaling the N-process step (N times the data) takes as long as the 1-process one;
what it costs more is the gradient all-reduce that did not overlap with backward.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per timed chunk (after 3 warm-up steps)")
    parser.add_argument("--chunks", type=int, default=3, help="timed chunks (the median chunk's time per step counts)")
    args = parser.parse_args()
    import ember.distributed as dist
    from asv_benchmarks import workloads
    from ember.nn.parallel import DistributedDataParallel

    world = int(os.environ.get("PMI_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    step = workloads.nanogpt_step("ember", wrap=DistributedDataParallel if world > 1 else None)
    for _ in range(3):                  # warm-up
        step()
    times = []
    for _ in range(args.chunks):        # a chunk: `steps` steps between two barriers, so the time is the slowest rank's
        if world > 1:
            dist.barrier()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        if world > 1:
            dist.barrier()
        times.append((time.perf_counter() - start) / args.steps)
    if world == 1 or dist.get_rank() == 0:
        print(f"median step {statistics.median(times):.6f} s", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
