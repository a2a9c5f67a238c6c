"""`python -m ember.distributed.run`: torchrun's command line, on MPI's process manager.

    python -m ember.distributed.run --nproc-per-node 4 train.py --epochs 3
    python -m ember.distributed.run --nnodes 2 --hosts node1,node2 --nproc-per-node 8 train.py

It starts the ranks with the mpiexec that the `mpich` wheel installs (hydra), each through
`rank_process.py`, which gives the program torchrun's environment (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ...) and reports how it
ended. The job is not torn down when one rank fails: the others find out through
ember.distributed (DistBackendError naming the failed peer) and exit; ranks still running
`--failure-grace` seconds after the first failure are stopped. The launcher then names each
failed rank with its exit code, signal or error, and exits 1 (0 when every rank succeeded).

A rank whose job broke (a DistBackendError) exits with status 1 without finalizing MPI.

Several nodes: MPI starts the whole job from one place, so run the launcher once, on the first
node, with `--hosts` (or `--hostfile`) naming every node; mpiexec reaches the others (over ssh).
`mpiexec -n N python train.py` works too, without the environment variables and the report.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "parse_args"]

RANK_PROCESS = Path(__file__).with_name("rank_process.py")
PREFIX = "ember.distributed.run"


def _mpiexec() -> str:
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise SystemExit(f"{PREFIX}: no mpiexec beside {sys.executable} or on PATH; "
                         "pip install 'ember[distributed]' installs MPICH's")
    return found


def _nproc(value: str) -> int:
    if value in ("auto", "cpu"):
        return os.cpu_count() or 1
    if value == "gpu":
        raise argparse.ArgumentTypeError("--nproc-per-node gpu: give the number of processes (one per GPU)")
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--nproc-per-node must be a positive integer, 'auto' or 'cpu', "
                                         f"got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _nnodes(value: str) -> int:
    low, _, high = value.partition(":")
    if high and high != low:
        raise argparse.ArgumentTypeError(f"--nnodes {value}: elastic node counts need a rendezvous; MPI starts a "
                                         "fixed number of nodes (give one number)")
    return int(low)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """torchrun's options (both spellings: --nproc-per-node and --nproc_per_node) and the program."""
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run", description=__doc__.splitlines()[0])

    def option(name: str, **kw) -> None:
        p.add_argument(f"--{name}", f"--{name.replace('-', '_')}", **kw)

    option("nproc-per-node", type=_nproc, default=1, help="processes per node (an integer, 'auto' or 'cpu')")
    option("nnodes", type=_nnodes, default=1, help="number of nodes")
    option("node-rank", type=int, default=0, help="this node's rank (the launcher runs on node 0 only)")
    option("master-addr", default="127.0.0.1", help="exported as MASTER_ADDR")
    option("master-port", type=int, default=29500, help="exported as MASTER_PORT")
    option("standalone", action="store_true", help="a single-node job (the default here)")
    option("max-restarts", type=int, default=0, help="only 0: a failed job is reported, not restarted")
    option("run-id", default="none", help="exported as TORCHELASTIC_RUN_ID")
    option("hosts", default=None, help="comma-separated node names for a job on several nodes")
    option("hostfile", default=None, help="MPI host file for a job on several nodes")
    option("failure-grace", type=float, default=30.0,
           help="seconds the other ranks get to exit after one fails, before they are terminated")
    p.add_argument("-m", "--module", action="store_true", help="run the program as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the program as an executable")
    p.add_argument("training_script", help="the program each rank runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.max_restarts != 0:
        p.error("--max-restarts: ember's launcher does not restart failed jobs; use 0")
    if args.nnodes > 1 and args.node_rank != 0:
        p.error(f"--node-rank {args.node_rank}: with MPI the whole job is started once, from the first node "
                "(--node-rank 0) with --hosts or --hostfile naming every node; mpiexec starts the other nodes' ranks")
    if args.nnodes > 1 and not (args.hosts or args.hostfile):
        p.error(f"--nnodes {args.nnodes} needs --hosts or --hostfile naming the nodes")
    if args.module and args.no_python:
        p.error("-m/--module and --no-python cannot be used together")
    return args


def _program(args) -> list[str]:
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.training_script, *args.training_script_args]
    return [sys.executable, "-u", args.training_script, *args.training_script_args]


def _command(args, run_dir: str) -> list[str]:
    world = args.nproc_per_node * args.nnodes
    cmd = [_mpiexec(), "-disable-auto-cleanup", "-n", str(world), "-ppn", str(args.nproc_per_node)]
    if args.hosts:
        cmd += ["-hosts", args.hosts]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    for name, value in (("MASTER_ADDR", args.master_addr), ("MASTER_PORT", str(args.master_port)),
                        ("TORCHELASTIC_RUN_ID", args.run_id)):
        cmd += ["-genv", name, value]
    return cmd + [sys.executable, str(RANK_PROCESS), run_dir, str(args.nproc_per_node), "--", *_program(args)]


def _statuses(run_dir: str) -> dict[int, dict]:
    """The ranks that have ended, by rank: their rank_process.py status (pid, returncode, ended, host)."""
    out = {}
    for path in Path(run_dir).glob("rank-*.json"):
        status = json.loads(path.read_text())
        out[status["rank"]] = status
    return out


def _supervise(job: subprocess.Popen, run_dir: str, grace: float) -> None:
    """Wait for the job; once a rank has failed, give the others `grace` seconds, then stop them."""
    first_failure = None
    while job.poll() is None:
        if first_failure is None and any(s["returncode"] != 0 for s in _statuses(run_dir).values()):
            first_failure = time.monotonic()
        if first_failure is not None and time.monotonic() - first_failure > grace:
            print(f"{PREFIX}: ranks still running {grace:g} s after the first failure: stopping them",
                  file=sys.stderr, flush=True)
            job.send_signal(signal.SIGINT)          # hydra passes it on to every rank
            try:
                job.wait(10)
            except subprocess.TimeoutExpired:
                job.kill()
            break
        time.sleep(0.1)
    job.wait()


def _how(code: int) -> str:
    """A return code in words: 'exited with code 3', 'was killed by signal 9 (SIGKILL)'."""
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else "unknown"
        return f"was killed by signal {-code} ({name})"
    return f"exited with code {code}"


def report(statuses: dict[int, dict], world: int, run_dir: str) -> int:
    """Print which ranks failed and how, in the order they ended; the launcher's exit code: 0 when
    every rank succeeded, else 1. A rank that raised DistBackendError left its message in the run
    directory, and is reported with it."""
    failed = sorted((s for s in statuses.values() if s["returncode"] != 0), key=lambda s: s["ended"])
    missing = [r for r in range(world) if r not in statuses]
    if not failed and not missing:
        return 0
    lines = [f"{PREFIX}: the job failed; rank {failed[0]['rank'] if failed else missing[0]} first"]
    for s in failed:
        note = Path(run_dir) / f"rank-{s['rank']}.broken"
        what = f"raised DistBackendError: {note.read_text()}" if note.exists() else _how(s["returncode"])
        after = "" if s is failed[0] else f", {s['ended'] - failed[0]['ended']:.1f} s later"
        lines.append(f"  rank {s['rank']} (pid {s['pid']} on {s['host']}) {what}{after}")
    lines += [f"  rank {r}: stopped by the launcher" for r in missing]
    print("\n".join(lines), file=sys.stderr, flush=True)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    world = args.nproc_per_node * args.nnodes
    with tempfile.TemporaryDirectory(prefix="ember-run-") as run_dir:
        job = subprocess.Popen(_command(args, run_dir))
        previous = {sig: signal.signal(sig, lambda s, _f: job.send_signal(s)) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            _supervise(job, run_dir, args.failure_grace)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return report(_statuses(run_dir), world, run_dir)


if __name__ == "__main__":
    sys.exit(main())
