"""One rank of a job started by `python -m ember.distributed.run`: what mpiexec starts on each slot.

mpiexec runs this file (by path, so it imports nothing of ember) once per rank. It turns the
variables of MPI's process manager into torchrun's (RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, GROUP_RANK, ...) and runs the training program as its child with them (MPI's
own variables and file descriptors are inherited, so the program's init_process_group joins the
job). When the program ends it writes a status file for the launcher (rank, pid, exit code or
signal, when) and exits with the program's code.

Why a parent process rather than exec: MPI's process manager (hydra) kills every process of the
job as soon as one dies by a signal, which would cut off the other ranks before they can report
the failure (DistBackendError). Seen from hydra, this process never dies by a signal: a killed
program becomes exit code 128 + signal, and hydra's own failure notice (SIGUSR1) is ignored here.
A Ctrl-C that mpiexec passes on (SIGINT, SIGTERM) goes to this process's group: the program gets
it once, directly, while this process lives on to write the status.

The program also finds the run directory in $EMBER_RUN_DIR, where ember.distributed leaves its
notes for the launcher (`rank-R.init`, `rank-R.ok`, `rank-R.broken`; see health.py).

    python rank_process.py RUN_DIR NPROC_PER_NODE -- program [args...]
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def torchrun_environment(nproc_per_node: int) -> dict[str, str]:
    """torchrun's variables for this rank, from those of MPI's process manager (hydra)."""
    rank = int(os.environ.get("PMI_RANK", "0"))
    world = int(os.environ.get("PMI_SIZE", "1"))
    local_rank = int(os.environ.get("MPI_LOCALRANKID", rank % nproc_per_node))
    local_world = int(os.environ.get("MPI_LOCALNRANKS", nproc_per_node))
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local_rank),
            "LOCAL_WORLD_SIZE": str(local_world), "GROUP_RANK": str(rank // nproc_per_node),
            "GROUP_WORLD_SIZE": str(max(1, world // nproc_per_node)), "ROLE_RANK": str(rank),
            "ROLE_WORLD_SIZE": str(world), "ROLE_NAME": "default", "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0"}


def _default_usr1() -> None:
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)      # the program takes hydra's notice itself


def _outlive(_sig, _frame) -> None:
    """SIGINT and SIGTERM: mpiexec sends them to this process's group, the program included, which
    takes them itself; this process waits to report how the program ended."""


def main(argv: list[str]) -> int:
    run_dir, nproc_per_node, sep, *program = argv
    if sep != "--" or not program:
        print("usage: rank_process.py RUN_DIR NPROC_PER_NODE -- program [args...]", file=sys.stderr)
        return 2
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    for sig in (signal.SIGINT, signal.SIGTERM):     # not SIG_IGN, which the program would inherit
        signal.signal(sig, _outlive)
    env = {**os.environ, **torchrun_environment(int(nproc_per_node)), "EMBER_RUN_DIR": run_dir}
    child = subprocess.Popen(program, env=env, close_fds=False, preexec_fn=_default_usr1)
    code = child.wait()
    status = {"rank": int(env["RANK"]), "pid": child.pid, "returncode": code, "ended": time.time(),
              "host": os.uname().nodename}
    path = os.path.join(run_dir, f"rank-{env['RANK']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(status, f)
    os.replace(path + ".tmp", path)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
