"""Knowing when a peer is gone, finished or stuck, so no rank waits forever.

MPI itself does not report a peer that died: a collective with a missing rank simply never
completes. So every wait of ember.distributed polls its request against the group's timeout
(`work.py`), and this module tells it who is to blame:

* `Peers.dead(ranks)`: the ranks whose process has exited. At init every rank shares its host
  name and pid; a peer on this host whose pid is gone (or a zombie) is dead. Checked about twice
  a second while a wait is slow, and at once when MPI's process manager signals that a process
  of the job failed, so a killed peer is reported within a second, not at the timeout.
* `Peers.behind(ranks, group_index, seq)`: the ranks that have not yet entered this group's
  collective number `seq`. Every rank writes the number of each collective it enters on a group
  into a table in node-local shared memory (an MPI shared-memory window, one row per rank of this
  host), which the others read when they time out: the rank that hangs is the one behind.
* `Peers.finished_before(ranks, group_index, seq)`: the ranks behind that have finished (their
  program ended, or they destroyed the default group): they will never enter the collective, and
  their process does not look dead either, since a clean exit waits in MPI_Finalize for every
  rank. The table's last column holds that mark, set by `Peers.finish`.

Peers on other hosts cannot be inspected this way; for them the timeout message names the group.
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import sys

import numpy as np

__all__ = ["Peers", "MAX_TRACKED_GROUPS", "job_broken", "job_peers", "process_alive", "note_clean_exit",
           "note_joining", "listen_for_failures", "FAILURE_REPORTED"]

MAX_TRACKED_GROUPS = 64         # groups whose progress the shared table tracks (more are allowed, untracked)
FINISHED = MAX_TRACKED_GROUPS   # the table's last column: 1 once the rank has finished (see Peers.finish)


_broken = [False]


def job_broken(peers: "Peers", message: str) -> None:
    """A peer is gone or stuck and this process is about to raise DistBackendError. At exit it must
    not run MPI_Finalize, which would wait for the dead peer forever: an exit handler registered
    after mpi4py's finalizer (so run first) ends the process with status 1 once Python has printed
    the traceback. Under the launcher, the message also goes to its run directory for its report."""
    run_dir = os.environ.get("EMBER_RUN_DIR")
    if run_dir:
        with open(os.path.join(run_dir, f"rank-{peers.me}.broken"), "w") as f:
            f.write(message)
    if not _broken[0]:
        _broken[0] = True
        atexit.register(_exit_without_finalize)


def _flush() -> None:
    """Write out what the program printed: an exit that follows may never complete (a stuck
    MPI_Finalize stopped by the launcher) or skips Python's own flushing (os._exit)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):        # None, closed or broken
            pass


def _exit_without_finalize() -> None:
    _flush()
    os._exit(1)


#: set when MPI's process manager signals (SIGUSR1, hydra's notice to the survivors of a job run without
#: auto-cleanup) that a process of the job failed: waits then check their peers at once
FAILURE_REPORTED = [False]


def listen_for_failures() -> None:
    """Take hydra's SIGUSR1 failure notice (whose default action would kill this process too) as
    a reason to check the peers, unless the program handles SIGUSR1 itself."""
    try:
        if signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL:
            signal.signal(signal.SIGUSR1, lambda _sig, _frame: FAILURE_REPORTED.__setitem__(0, True))
    except ValueError:          # not the main thread: signals cannot be handled here
        pass


#: what the exit handler of note_clean_exit needs: the job's Peers, the launcher's run directory, and
#: whether the program ended by an uncaught exception
_exit_watch = {"installed": False, "peers": None, "run_dir": None, "failed": False}


def note_joining(run_dir: str) -> None:
    """Under `python -m ember.distributed.run`: leave `rank-R.init` (R from $RANK) in the run
    directory before MPI's initialisation, which waits for every rank of the job. A rank that ends
    without joining then leaves this one waiting forever, and the launcher, seeing the note, counts
    that as a failure (a program that never calls init_process_group is not held to it)."""
    open(os.path.join(run_dir, f"rank-{os.environ.get('RANK', '0')}.init"), "w").close()


def note_clean_exit(peers: "Peers", run_dir: str | None) -> None:
    """Prepare this process's exit; init_process_group calls it once mpi4py is imported, so the exit
    handler registered here (once per process) runs before mpi4py's, which calls MPI_Finalize.
    MPI_Finalize waits for every rank of the job, so a rank that ends while its peers still wait
    on it would look alive to them until their timeout. At exit, this handler:

    * marks the rank finished in the progress table (`Peers.finish`): a peer waiting in a
      collective this rank never entered raises DistBackendError within a second, naming it;
    * when the program ended without an uncaught exception (a broken job, see `job_broken`,
      exits before this handler runs), ignores SIGUSR1, the notice MPI's process manager sends
      when a peer fails, whose default action would kill this rank, which did its part, while it
      waits in MPI_Finalize;
    * then, under `python -m ember.distributed.run` (`run_dir` is $EMBER_RUN_DIR), leaves
      `rank-R.ok` in the run directory: the launcher reads it to tell a rank that finished its
      program from one that failed, or that ended before joining the job, while others still run."""
    _exit_watch.update(peers=peers, run_dir=run_dir)
    if _exit_watch["installed"]:
        return
    _exit_watch["installed"] = True
    previous_hook = sys.excepthook

    def hook(kind, value, tb):
        _exit_watch["failed"] = True
        previous_hook(kind, value, tb)

    sys.excepthook = hook
    atexit.register(_at_exit)


def _at_exit() -> None:
    """The exit handler of `note_clean_exit`."""
    peers = _exit_watch["peers"]
    peers.finish()
    _flush()
    if _exit_watch["failed"]:
        return
    try:
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    except ValueError:          # not the main thread
        pass
    if _exit_watch["run_dir"]:
        open(os.path.join(_exit_watch["run_dir"], f"rank-{peers.me}.ok"), "w").close()


def process_alive(pid: int) -> bool:
    """Whether process `pid` (of this host) is running: not gone, not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:             # no procfs (not Linux): ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


_job: list["Peers"] = []


def job_peers(MPI, world) -> "Peers":
    """The job's Peers: made by the first init_process_group, started afresh by a later one. It
    lives until the process exits, because freeing its shared window waits for every rank of the
    node, which would block a rank that destroys its group while its peers still wait on it."""
    if _job:
        _job[0].start()
    else:
        _job.append(Peers(MPI, world))
    return _job[0]


class Peers:
    """Where each rank of the job runs, and the node-local table of how far each has got."""

    def __init__(self, MPI, world) -> None:
        self.host = socket.gethostname()
        self.where: list[tuple[str, int]] = world.allgather((self.host, os.getpid()))
        self.node = world.Split_type(MPI.COMM_TYPE_SHARED)
        node_ranks = self.node.allgather(world.Get_rank())
        self.row_of = {r: i for i, r in enumerate(node_ranks)}     # world rank -> row of the table
        itemsize = np.dtype(np.int64).itemsize
        self.window = MPI.Win.Allocate_shared((FINISHED + 1) * itemsize, itemsize, comm=self.node)
        self.rows = []
        for i in range(len(node_ranks)):
            buf, _ = self.window.Shared_query(i)
            self.rows.append(np.frombuffer(buf, np.int64, FINISHED + 1))
        self.me = world.Get_rank()
        self.start()

    def start(self) -> None:
        """Clear this rank's row (no collective entered, not finished) and wait until every rank of
        the node has: init_process_group, which is collective, calls it."""
        self.rows[self.row_of[self.me]][:] = 0
        self.node.Barrier()

    def entered(self, group_index: int, seq: int) -> None:
        """Record that this rank entered collective number `seq` of group `group_index`."""
        if group_index < MAX_TRACKED_GROUPS:
            self.rows[self.row_of[self.me]][group_index] = seq

    def finish(self) -> None:
        """Record that this rank has finished (its program ends, or it destroyed the default group):
        it will enter no more collectives of this job's groups."""
        self.rows[self.row_of[self.me]][FINISHED] = 1

    def dead(self, ranks) -> list[int]:
        """The ranks of `ranks` (global) on this host whose process has exited."""
        return [r for r in ranks if self.where[r][0] == self.host and not process_alive(self.where[r][1])]

    def behind(self, ranks, group_index: int, seq: int) -> list[int]:
        """The ranks of `ranks` on this host that have not entered collective `seq` of the group."""
        if group_index >= MAX_TRACKED_GROUPS:
            return []
        return [r for r in ranks if r in self.row_of and self.rows[self.row_of[r]][group_index] < seq]

    def finished_before(self, ranks, group_index: int, seq: int) -> list[int]:
        """The ranks of `ranks` on this host that finished without entering collective `seq` of the
        group: it cannot complete. A finished rank that entered it did its part and is not named."""
        return [r for r in self.behind(ranks, group_index, seq) if self.rows[self.row_of[r]][FINISHED]]

    def describe(self, rank: int) -> str:
        host, pid = self.where[rank]
        return f"rank {rank} (pid {pid} on {host})"
