"""Knowing when a peer is gone or stuck, so no rank waits forever.

MPI itself does not report a peer that died: a collective with a missing rank simply never
completes. So every wait of ember.distributed polls its request against the group's timeout
(`work.py`), and this module tells it who is to blame:

* `Peers.dead(ranks)`: the ranks whose process has exited. At init every rank shares its host
  name and pid; a peer on this host whose pid is gone (or a zombie) is dead. Checked about twice
  a second while a wait is slow, and at once when MPI's process manager signals that a process
  of the job failed, so a killed peer is reported within a second, not at the timeout.
* `Peers.behind(pg, seq)`: the ranks that have not yet entered this group's collective number
  `seq`. Every rank writes the number of each collective it enters on a group into a table in
  node-local shared memory (an MPI shared-memory window, one row per rank of this host), which
  the others read when they time out: the rank that hangs is the one behind.

Peers on other hosts cannot be inspected this way; for them the timeout message names the group.
"""
from __future__ import annotations

import atexit
import os
import signal
import socket
import sys

import numpy as np

__all__ = ["Peers", "MAX_TRACKED_GROUPS", "job_broken", "process_alive", "note_clean_exit", "listen_for_failures",
           "FAILURE_REPORTED"]

MAX_TRACKED_GROUPS = 64         # groups whose progress the shared table tracks (more are allowed, untracked)


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


def _exit_without_finalize() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
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


def note_clean_exit(run_dir: str, rank: int) -> None:
    """Under `python -m ember.distributed.run` ($EMBER_RUN_DIR): leave `rank-R.ok` in the run directory
    when this process ends without an uncaught exception or a broken job, so the launcher can tell
    a rank that finished from one that failed while the others still run."""
    failed = [False]
    previous_hook = sys.excepthook

    def hook(kind, value, tb):
        failed[0] = True
        previous_hook(kind, value, tb)

    def leave_note() -> None:
        if not failed[0]:
            open(os.path.join(run_dir, f"rank-{rank}.ok"), "w").close()

    sys.excepthook = hook
    atexit.register(leave_note)


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


class Peers:
    """Where each rank of the job runs, and the node-local table of how far each has got."""

    def __init__(self, MPI, world) -> None:
        self.host = socket.gethostname()
        self.where: list[tuple[str, int]] = world.allgather((self.host, os.getpid()))
        self.node = world.Split_type(MPI.COMM_TYPE_SHARED)
        node_ranks = self.node.allgather(world.Get_rank())
        self.row_of = {r: i for i, r in enumerate(node_ranks)}     # world rank -> row of the table
        itemsize = np.dtype(np.int64).itemsize
        self.window = MPI.Win.Allocate_shared(MAX_TRACKED_GROUPS * itemsize, itemsize, comm=self.node)
        self.rows = []
        for i in range(len(node_ranks)):
            buf, _ = self.window.Shared_query(i)
            self.rows.append(np.frombuffer(buf, np.int64, MAX_TRACKED_GROUPS))
        self.rows[self.row_of[world.Get_rank()]][:] = 0
        self.node.Barrier()
        self.me = world.Get_rank()

    def entered(self, group_index: int, seq: int) -> None:
        """Record that this rank entered collective number `seq` of group `group_index`."""
        if group_index < MAX_TRACKED_GROUPS:
            self.rows[self.row_of[self.me]][group_index] = seq

    def dead(self, ranks) -> list[int]:
        """The ranks of `ranks` (global) on this host whose process has exited."""
        return [r for r in ranks if self.where[r][0] == self.host and not process_alive(self.where[r][1])]

    def behind(self, ranks, group_index: int, seq: int) -> list[int]:
        """The ranks of `ranks` on this host that have not entered collective `seq` of the group."""
        if group_index >= MAX_TRACKED_GROUPS:
            return []
        return [r for r in ranks if r in self.row_of and self.rows[self.row_of[r]][group_index] < seq]

    def describe(self, rank: int) -> str:
        host, pid = self.where[rank]
        return f"rank {rank} (pid {pid} on {host})"

    def close(self) -> None:
        self.rows = []
        self.window.Free()
        self.node.Free()
