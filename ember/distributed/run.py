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

What counts as a failure: a non-zero exit, and an exit with status 0 that left no note of a clean
exit after init_process_group (`rank-R.ok`, see ember.distributed.health) while a rank that called
init_process_group still runs: that rank would wait for it forever, in MPI's initialisation (the
rank ended before joining) or finalisation. A rank whose job broke (a DistBackendError) exits with
status 1 without finalizing MPI. A rank that finished its program and left its note waits in
MPI_Finalize for every rank: once a rank has failed and only such ranks still run, they are
stopped after a second and reported as finished. Ctrl-C or SIGTERM goes to every rank through mpiexec (a second one makes
mpiexec kill them), and the report says the job was interrupted, naming the ranks that had
failed before. Like torchrun, several processes per node get OMP_NUM_THREADS=1 unless it is set.

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
RENDEZVOUS = ("rdzv-backend", "rdzv-endpoint", "rdzv-id", "rdzv-conf")     # torchrun's, refused
FINALIZE_WAIT = 1.0     # seconds before stopping ranks that finished their program but wait in MPI_Finalize


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


def _rendezvous_options(args) -> list[str]:
    """The rendezvous options of torchrun given, as written: all are refused but `--rdzv-backend
    static`, torchrun's name for a fixed set of nodes, which is what an MPI job is."""
    given = []
    for name in RENDEZVOUS:
        value = getattr(args, name.replace("-", "_"))
        if value is not None and (name, value) != ("rdzv-backend", "static"):
            given.append(f"--{name} {value}")
    return given


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
           help="seconds the other ranks get to exit after one fails (or after Ctrl-C), before they are stopped")
    for name in RENDEZVOUS:
        option(name, default=None, help="refused: an MPI job needs no rendezvous (--rdzv-backend static is accepted)")
    p.add_argument("-m", "--module", action="store_true", help="run the program as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the program as an executable")
    p.add_argument("training_script", help="the program each rank runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    rendezvous = _rendezvous_options(args)
    if rendezvous:
        p.error(f"{', '.join(rendezvous)}: an MPI job needs no rendezvous: mpiexec starts every rank and connects "
                "them (leave out the --rdzv options; for several nodes give --hosts or --hostfile)")
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


def _command(args, run_dir: str, env: dict[str, str]) -> list[str]:
    world = args.nproc_per_node * args.nnodes
    cmd = [_mpiexec(), "-disable-auto-cleanup", "-n", str(world), "-ppn", str(args.nproc_per_node)]
    if args.hosts:
        cmd += ["-hosts", args.hosts]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    for name, value in {"MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
                        "TORCHELASTIC_RUN_ID": args.run_id, **env}.items():
        cmd += ["-genv", name, value]
    return cmd + [sys.executable, str(RANK_PROCESS), run_dir, str(args.nproc_per_node), "--", *_program(args)]


def _statuses(run_dir: str) -> dict[int, dict]:
    """The ranks that have ended, by rank: their rank_process.py status (pid, returncode, ended, host)."""
    out = {}
    for path in Path(run_dir).glob("rank-*.json"):
        status = json.loads(path.read_text())
        out[status["rank"]] = status
    return out


def _notes(run_dir: str, kind: str) -> set[int]:
    """The ranks that left a `rank-R.<kind>` note in the run directory (see ember.distributed.health)."""
    return {int(path.name[len("rank-"):-len(kind) - 1]) for path in Path(run_dir).glob(f"rank-*.{kind}")}


class Ranks:
    """What the run directory says about the ranks: how each one that ended did (rank_process.py's
    status), which finished their program cleanly after init_process_group (`.ok`, left at exit)
    and which called init_process_group (`.init`, left before MPI's initialisation)."""

    def __init__(self, run_dir: str, world: int) -> None:
        self.run_dir = run_dir
        self.world = world
        self.ended = _statuses(run_dir)
        self.ok = _notes(run_dir, "ok")
        self.joining = _notes(run_dir, "init")

    def running(self) -> list[int]:
        return [r for r in range(self.world) if r not in self.ended]

    def left_early(self, s: dict) -> bool:
        """Whether the rank of status `s` ended with status 0 but without a clean exit after
        init_process_group (no `.ok`) while a rank that called init_process_group still ran: MPI's
        initialisation, or its finalisation, waits for every rank, so that one would wait forever."""
        return s["returncode"] == 0 and s["rank"] not in self.ok and any(
            r not in self.ended or self.ended[r]["ended"] > s["ended"] for r in self.joining - {s["rank"]})

    def finished_then_stopped(self, s: dict) -> bool:
        """Whether the rank of status `s` finished its program and was then ended by a signal: its exit
        waited in MPI_Finalize, which waits for every rank, for ranks that failed."""
        return s["returncode"] < 0 and s["rank"] in self.ok

    def failed(self) -> list[dict]:
        """The statuses of the ranks that failed, first failure first."""
        failed = [s for s in self.ended.values()
                  if (s["returncode"] != 0 and not self.finished_then_stopped(s)) or self.left_early(s)]
        return sorted(failed, key=lambda s: s["ended"])

    def how(self, s: dict) -> str:
        """How the rank of status `s` ended, in words."""
        note = Path(self.run_dir) / f"rank-{s['rank']}.broken"
        if note.exists():
            return f"raised DistBackendError: {note.read_text()}"
        if self.finished_then_stopped(s):
            return "finished its program, then was stopped while MPI_Finalize waited for the failed ranks"
        if self.left_early(s) and s["rank"] not in self.joining:
            return ("exited with code 0 without calling init_process_group, while the others waited for it in "
                    "MPI's initialisation")
        if self.left_early(s):
            return "exited with code 0 without finishing cleanly (it skipped MPI_Finalize) while the others still ran"
        return _how(s["returncode"])


def _stop(job: subprocess.Popen) -> None:
    """Stop the job: Ctrl-C to mpiexec, which passes it on to every rank; a second one, which
    makes mpiexec kill them, 10 s later; then mpiexec itself."""
    for wait in (10, 5):
        job.send_signal(signal.SIGINT)
        try:
            job.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass
    job.kill()


def _supervise(job: subprocess.Popen, run_dir: str, world: int, grace: float, interrupted: list) -> None:
    """Wait for the job. Once a rank has failed or the launcher was interrupted, give the others
    `grace` seconds to exit, then stop them. Ranks that all finished their program only wait in
    MPI_Finalize, for every rank, so for ranks that failed and never will: they are stopped after
    one second."""
    first_failure = since = None
    while job.poll() is None:
        ranks = Ranks(run_dir, world)
        if first_failure is None and (ranks.failed() or interrupted):
            first_failure, since = time.monotonic(), "the first failure" if ranks.failed() else "the interrupt"
        if first_failure is not None:
            waited = time.monotonic() - first_failure
            running = ranks.running()
            finalizing = bool(running) and all(r in ranks.ok for r in running)
            if waited > grace or (finalizing and waited > min(grace, FINALIZE_WAIT)):
                why = "that finished their program waiting in MPI_Finalize" if finalizing else (
                    f"still running {grace:g} s after {since}")
                print(f"{PREFIX}: ranks {why}: stopping them", file=sys.stderr, flush=True)
                _stop(job)
                break
        time.sleep(0.1)
    job.wait()


def _how(code: int) -> str:
    """A return code in words: 'exited with code 3', 'was killed by signal 9 (SIGKILL)'."""
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else "unknown"
        return f"was killed by signal {-code} ({name})"
    return f"exited with code {code}"


def report(ranks: Ranks, interrupted: tuple[int, float] | None = None) -> int:
    """Print which ranks failed and how, in the order they ended; the launcher's exit code: 0 when
    every rank succeeded, else 1. A rank that raised DistBackendError left its message in the run
    directory, and is reported with it. After an interrupt (`interrupted`: the signal and when it
    came), the ranks that failed before it are listed, and the others as stopped by it."""
    if not ranks.running() and all(s["returncode"] == 0 for s in ranks.ended.values()):
        return 0
    failed = ranks.failed()
    stopped = [s for s in sorted(ranks.ended.values(), key=lambda s: s["ended"]) if ranks.finished_then_stopped(s)]
    if interrupted is not None:
        sig, when = interrupted
        before = [s for s in failed if s["ended"] < when]
        later = sorted({s["rank"] for s in failed if s not in before} | set(ranks.running()))
        lines = [f"{PREFIX}: the job was interrupted ({signal.Signals(sig).name})"
                 + (f"; {len(before)} rank{'s' if len(before) > 1 else ''} had failed before" if before else "")]
        lines += [f"  rank {s['rank']} (pid {s['pid']} on {s['host']}) {ranks.how(s)}" for s in before + stopped]
        if later:
            lines.append(f"  rank{'s' if len(later) > 1 else ''} {', '.join(map(str, later))}: stopped by the interrupt")
    else:
        first = failed[0] if failed else None
        lines = [f"{PREFIX}: the job failed" + (f"; rank {first['rank']} first" if first else "")]
        for s in failed + stopped:
            after = "" if first is None or s is first else f", {s['ended'] - first['ended']:.1f} s later"
            lines.append(f"  rank {s['rank']} (pid {s['pid']} on {s['host']}) {ranks.how(s)}{after}")
        lines += [f"  rank {r}: stopped by the launcher" for r in ranks.running()]
    print("\n".join(lines), file=sys.stderr, flush=True)
    return 1


def _omp_threads(args) -> dict[str, str]:
    """torchrun's default: with several processes per node and OMP_NUM_THREADS unset, each rank
    gets OMP_NUM_THREADS=1 (so the ranks do not overload the cores), with torchrun's warning."""
    if args.nproc_per_node <= 1 or "OMP_NUM_THREADS" in os.environ:
        return {}
    print("\n*****************************************\n"
          "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
          "system being overloaded, please further tune the variable for optimal performance in your "
          "application as needed. \n*****************************************", file=sys.stderr, flush=True)
    return {"OMP_NUM_THREADS": "1"}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    world = args.nproc_per_node * args.nnodes
    interrupted: list[tuple[int, float]] = []

    def interrupt(sig: int, _frame) -> None:
        interrupted.append((sig, time.time()))
        job.send_signal(sig)                        # mpiexec passes it on to every rank; a second one kills them

    with tempfile.TemporaryDirectory(prefix="ember-run-") as run_dir:
        # a session of its own: a Ctrl-C typed in the terminal reaches mpiexec once, through the launcher
        job = subprocess.Popen(_command(args, run_dir, _omp_threads(args)), start_new_session=True)
        previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            _supervise(job, run_dir, world, args.failure_grace, interrupted)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return report(Ranks(run_dir, world), interrupted[0] if interrupted else None)


if __name__ == "__main__":
    sys.exit(main())
