"""`Work`: the handle of a collective or point-to-point call made with `async_op=True` (isend/irecv
always return one), and `launch`, which starts a non-blocking MPI operation behind every call.

Every tensor call starts a non-blocking MPI request; a synchronous call simply waits on it. Work
that needs finishing after the transfer (writing staged results back, the AVG division) runs once,
when `wait()` returns or `is_completed()` first sees the request done. Waiting polls the request
against a deadline, so a dead or stuck peer raises DistBackendError instead of blocking forever.
"""
from __future__ import annotations

import datetime
import os
import time

from . import engine
from .errors import DistBackendError
from .health import FAILURE_REPORTED, job_broken

__all__ = ["Work", "launch"]

YIELD_SECONDS = 0.02            # poll, yielding the core between polls, this long: most collectives finish within it
MAX_PAUSE = 1e-3                # then sleep between polls, doubling up to this
HEALTH_CHECK_AFTER = 0.5        # a wait this long starts checking whether the peers are alive
HEALTH_CHECK_EVERY = 0.5


class Work:
    """A pending collective: `wait()` blocks until it is done (and its outputs are written),
    `is_completed()` polls."""

    def __init__(self, op: str, pg, requests: list, on_complete=None, outputs=(), collective: bool = True) -> None:
        self._op = op
        self._pg = pg
        self._collective = collective
        self._seq = pg.sequence           # this collective's number on the group (fingerprint counted it)
        self._rank = pg.ranks[pg.rank()]
        self._requests = requests
        self._on_complete = on_complete
        self._outputs = list(outputs)
        self._done = False
        self._source = None
        self._statuses = None

    def _finish(self) -> None:
        self._done = True
        if self._statuses and self._op in ("recv", "irecv"):
            self._source = self._pg.ranks[self._statuses[0].Get_source()]
        if self._on_complete is not None:
            self._on_complete()

    def _poll(self) -> bool:
        """Whether the engine has finished the transfer (MPI: all requests tested complete)."""
        MPI = engine.mpi()
        if self._statuses is None:
            self._statuses = [MPI.Status() for _ in self._requests]
        with engine.mpi_errors(self._op, self._rank):
            return MPI.Request.Testall(self._requests, self._statuses)

    def is_completed(self) -> bool:
        """Whether the operation has finished (its outputs are then written)."""
        if not self._done and self._poll():
            self._finish()
        return self._done

    def is_success(self) -> bool:
        """Whether the operation finished without error."""
        return self.is_completed()

    def exception(self):
        """The error the operation ended with (None: failures are raised by `wait`)."""
        return None

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the operation has finished (its outputs then written). A peer that died, or
        no completion within `timeout` (the group's timeout when None), raises DistBackendError
        naming the rank at fault where it can be found (see health.py)."""
        if self._done:
            return True
        limit = (timeout or self._pg.timeout).total_seconds()
        start = time.monotonic()
        next_health_check = start + HEALTH_CHECK_AFTER
        pause = 0.0
        while not self.is_completed():
            now = time.monotonic()
            if now - start > limit:
                raise self._broken(self._stalled(f"timed out after {limit:g} s"))
            if now >= next_health_check or FAILURE_REPORTED[0]:
                self._check_peers()
                if FAILURE_REPORTED[0] and now - start > HEALTH_CHECK_AFTER:
                    raise self._broken(self._stalled("MPI's process manager reports that a process of the job "
                                                     "failed", ["?"]))
                next_health_check = now + HEALTH_CHECK_EVERY
            if now - start < YIELD_SECONDS:
                os.sched_yield()            # back at once unless another process wants this core
            else:                           # a slow operation: stop polling hard
                time.sleep(pause)
                pause = min(max(2 * pause, 2e-5), MAX_PAUSE)
        return True

    def _check_peers(self) -> None:
        """Raise DistBackendError when a peer this operation waits for will never take its part: a
        collective's peer that finished without entering it (see health.py), or a peer whose process
        is gone. A finished peer is named first: it is the cause when the others then fail."""
        peers = self._pg.peers
        others = [r for r in self._pg.ranks if r != self._rank]
        finished = peers.finished_before(others, self._pg.index, self._seq) if self._collective else []
        if finished:
            raise self._broken(self._stalled(
                f"{', '.join(peers.describe(r) for r in finished)} finished (its program ended or it destroyed the "
                f"process group) without entering this collective (number {self._seq} on the group)", finished))
        dead = peers.dead(others)
        if dead:
            raise self._broken(self._stalled(f"{', '.join(peers.describe(r) for r in dead)} exited before completing it",
                                             dead))

    def _broken(self, message: str) -> DistBackendError:
        """The error to raise for a job that cannot continue (and the exit that follows, see health.py)."""
        job_broken(self._pg.peers, message)
        return DistBackendError(message)

    def _stalled(self, what: str, dead=()) -> str:
        """The message of a wait that cannot complete: what happened, and who is behind."""
        msg = f"{self._op}: rank {self._rank} in group {self._pg.ranks}: {what}"
        if not dead and self._collective:
            behind = self._pg.peers.behind([r for r in self._pg.ranks if r != self._rank], self._pg.index,
                                           self._seq)
            if behind:
                msg += (f"; {', '.join(self._pg.peers.describe(r) for r in behind)} has not entered this collective "
                        f"(number {self._seq} on the group)")
        return msg + "; the job cannot continue"

    def result(self) -> list:
        """The output tensors of the operation."""
        return list(self._outputs)

    def source_rank(self) -> int:
        """For a finished recv/irecv: the global rank the message came from."""
        if self._source is None:
            raise ValueError(f"source_rank(): only a finished recv or irecv has a source rank (this is {self._op})")
        return self._source


def launch(op: str, pg, start, on_complete=None, async_op: bool = False, outputs=(), collective: bool = True):
    """Start the request `start()` makes, as a Work; wait on it unless `async_op`."""
    with engine.mpi_errors(op, pg.ranks[pg.rank()]):
        request = start()
    work = Work(op, pg, [request], on_complete, outputs, collective)
    if async_op:
        return work
    work.wait()
    return None
