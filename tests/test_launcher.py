"""The launcher, `python -m ember.distributed.run`, and how a job with a failing rank ends.

tests/distributed_workers/failures.py, started by the launcher, trains with DDP while one rank is
killed, hangs or exits early, or leaves before init_process_group: the others must raise
DistBackendError naming it instead of waiting forever, and the launcher must end and say what
happened. torch's own launcher (torchrun) is the reference for its OMP_NUM_THREADS default.
"""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest

from distributed_support import RANK_ENV, WORKERS, run_launcher

FAILURES = str(WORKERS / "failures.py")
NO_OMP_ENV = {k: v for k, v in RANK_ENV.items() if k != "OMP_NUM_THREADS"}


def test_launcher_sets_torchrun_environment(mpi_job):
    result, _ = run_launcher("--nproc-per-node", "2", FAILURES, "env", "30")
    assert result.returncode == 0, result.stdout + result.stderr
    envs = sorted(re.findall(r"^env (.*)$", result.stdout, re.M))
    assert envs == [f"RANK={r} WORLD_SIZE=2 LOCAL_RANK={r} LOCAL_WORLD_SIZE=2 GROUP_RANK=0 MASTER_ADDR=127.0.0.1 "
                    "MASTER_PORT=29500 OMP_NUM_THREADS=1" for r in range(2)]
    assert sorted(re.findall(r"rank (\d) finished", result.stdout)) == ["0", "1"]


def test_launcher_sets_omp_num_threads_as_torchrun(mpi_job):
    """Several processes per node and OMP_NUM_THREADS unset: each rank gets 1, with torchrun's
    warning; a value already set, or a single process per node, is left alone."""
    program = ["--no-python", "sh", "-c", "echo threads=$OMP_NUM_THREADS"]
    ours, _ = run_launcher("--nproc-per-node", "2", *program, env=NO_OMP_ENV)
    theirs, _ = run_launcher("--nproc-per-node", "2", *program, env=NO_OMP_ENV, launcher="torch.distributed.run")
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout.split() == theirs.stdout.split() == ["threads=1"] * 2

    def banner(text: str) -> str:
        return text[text.index("\n*****"):text.rindex("*****") + 5]

    assert banner(ours.stderr) == banner(theirs.stderr)
    kept, _ = run_launcher("--nproc-per-node", "2", *program, env={**NO_OMP_ENV, "OMP_NUM_THREADS": "3"})
    single, _ = run_launcher("--nproc-per-node", "1", *program, env=NO_OMP_ENV)
    assert kept.stdout.split() == ["threads=3"] * 2 and single.stdout.split() == ["threads="]
    assert "OMP_NUM_THREADS" not in kept.stderr + single.stderr


def test_killed_rank_makes_the_others_raise(mpi_job):
    """Acceptance: SIGKILL one rank mid-step; every other rank exits non-zero with DistBackendError
    within the timeout (10 s) + 5 s, and the launcher names the rank and its signal."""
    result, ended = run_launcher("--nproc_per_node", "3", FAILURES, "kill", "10")
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
    result, _ = run_launcher("--nproc-per-node", "2", "--failure-grace", "1", FAILURES, "hang", "2")
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    assert re.search(r"rank 0 \(pid \d+ on .*\) raised DistBackendError: all_reduce: rank 0 in group \[0, 1\]: "
                     r"timed out after 2 s; rank 1 \(pid \d+ on .*\) has not entered this collective", result.stderr), report
    assert "rank 1 (pid" in result.stderr and "stopping them" in result.stderr, report


def test_rank_that_exits_early_is_named_at_once(mpi_job):
    """A rank whose program ends with status 0 while the others wait for it in a collective: its exit
    waits in MPI_Finalize, so it does not look dead, but it marked itself finished: the others raise
    within seconds (not at their 30 s timeout) naming it, and the launcher, which read its note of a
    clean exit, reports it as finished, not as killed by MPI's failure notice (SIGUSR1)."""
    result, ended = run_launcher("--nproc-per-node", "3", FAILURES, "exit", "30")
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    exited_at = float(re.search(r"rank 1 exits at ([\d.]+)", result.stdout).group(1))
    raised = {int(r): float(t) for r, t in re.findall(r"rank (\d) raised DistBackendError at ([\d.]+)", result.stdout)}
    assert sorted(raised) == [0, 2], report
    assert max(raised.values()) - exited_at <= 5 and ended - exited_at <= 15, (raised, exited_at, ended)
    for r in (0, 2):
        assert re.search(rf"rank {r} \(pid \d+ on .*\) raised DistBackendError: .*rank 1 \(pid \d+ on .*\) finished "
                         r"\(its program ended or it destroyed the process group\) without entering this collective",
                         result.stderr), report
    assert re.search(r"rank 1 \(pid \d+ on .*\) finished its program, then was stopped while MPI_Finalize waited",
                     result.stderr), report
    assert "SIGUSR1" not in result.stderr and "timed out" not in result.stderr, report


def test_finished_rank_that_did_its_part_is_not_blamed(mpi_job):
    """Rank 1 takes its part in a gather and finishes while rank 0 still waits there for rank 2: it
    entered that collective, so rank 0, checking its peers every half second, must not blame it."""
    result, _ = run_launcher("--nproc-per-node", "3", FAILURES, "gather", "30")
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "rank 0 gathered [0.0, 1.0, 2.0]" in result.stdout, report
    done = float(re.search(r"rank 1 done at ([\d.]+)", result.stdout).group(1))
    joined = float(re.search(r"rank 2 joins the gather at ([\d.]+)", result.stdout).group(1))
    assert joined - done >= 1, report          # rank 0 checked its peers while rank 1 had finished


def test_rank_that_exits_before_init_ends_the_job(mpi_job):
    """A rank that ends with status 0 before init_process_group leaves the others waiting forever in
    MPI's initialisation: the launcher counts it as a failure and stops them after the grace."""
    result, _ = run_launcher("--nproc-per-node", "3", "--failure-grace", "1", FAILURES, "before-init", "30",
                             timeout=90)
    report = result.stdout + result.stderr
    assert result.returncode == 1, report
    assert re.search(r"the job failed; rank 1 first\n  rank 1 \(pid \d+ on .*\) exited with code 0 without calling "
                     r"init_process_group, while the others waited for it in MPI's initialisation", result.stderr), report
    assert "rank 0: stopped by the launcher" in result.stderr and "rank 2: stopped by the launcher" in result.stderr


def test_program_without_init_runs_to_its_end(mpi_job):
    """Only a rank that called init_process_group waits for the others: in a program that never
    calls it, a rank ending early (status 0) is no failure, whatever the grace."""
    result, _ = run_launcher("--nproc-per-node", "2", "--failure-grace", "1", FAILURES, "no-init", "30")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(re.findall(r"rank (\d) finished", result.stdout)) == ["0", "1"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_job_is_reported_as_interrupted(mpi_job, sig):
    """Ctrl-C (SIGINT to the launcher's process group, as a terminal sends it) or SIGTERM after a rank
    failed on its own: the report says the job was interrupted and still names that rank."""
    job = subprocess.Popen([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "3", "--failure-grace",
                            "8", FAILURES, "fail-before-init", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=RANK_ENV, start_new_session=True)
    try:
        ready, _, _ = select.select([job.stdout], [], [], 60)
        assert ready and "rank 1 exits with status 3" in job.stdout.readline()
        time.sleep(1)                           # rank 1's status reaches the launcher
        os.killpg(job.pid, sig)
        out, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    assert job.returncode == 1, out + err
    assert f"the job was interrupted ({sig.name}); 1 rank had failed before" in err, err
    assert re.search(r"rank 1 \(pid \d+ on .*\) exited with code 3\n  ranks 0, 2: stopped by the interrupt", err), err
    assert "the job failed" not in err, err


def test_launcher_refuses_what_mpi_cannot_do():
    for args, message in ((["--max-restarts", "3"], "does not restart"),
                          (["--nnodes", "2"], "--hosts or --hostfile"),
                          (["--nnodes", "2", "--node-rank", "1", "--hosts", "a,b"], "started once, from the first node"),
                          (["--nnodes", "1:4"], "elastic")):
        result = subprocess.run([sys.executable, "-m", "ember.distributed.run", *args, "train.py"],
                                capture_output=True, text=True, timeout=60, env=RANK_ENV)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)


@pytest.mark.parametrize("option", ["--rdzv-backend=c10d", "--rdzv_backend=etcd", "--rdzv-endpoint=node1:29400",
                                    "--rdzv_endpoint=node1:29400", "--rdzv-id=job7", "--rdzv_id=job7",
                                    "--rdzv-conf=timeout=60", "--rdzv_conf=timeout=60"])
def test_launcher_refuses_rendezvous_options(option):
    result, _ = run_launcher(option, "--nproc-per-node", "1", "train.py", timeout=60)
    name, value = option.split("=", 1)
    assert result.returncode == 2, result.stderr
    assert f"{name.replace('_', '-')} {value}: an MPI job needs no rendezvous" in result.stderr, result.stderr


def test_launcher_accepts_the_static_rendezvous(mpi_job):
    result, _ = run_launcher("--rdzv-backend", "static", "--nproc-per-node", "2", "--no-python", "sh", "-c",
                             "echo rank=$RANK")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["rank=0", "rank=1"]
