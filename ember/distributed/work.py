"""`Work`: the handle of a collective or point-to-point call made with `async_op=True` (isend/irecv
always return one), and `launch`, which starts a non-blocking MPI operation behind every call.

Every tensor call starts a non-blocking MPI request; a synchronous call simply waits on it. Work
that needs finishing after the transfer (writing staged results back, the AVG division) runs once,
when `wait()` returns or `is_completed()` first sees the request done.
"""
from __future__ import annotations

import datetime
import time

from . import engine
from .errors import DistBackendError

__all__ = ["Work", "launch"]


class Work:
    """A pending collective: `wait()` blocks until it is done (and its outputs are written),
    `is_completed()` polls."""

    def __init__(self, op: str, pg, requests: list, on_complete=None, outputs=()) -> None:
        self._op = op
        self._pg = pg
        self._rank = pg.ranks[pg.rank()]
        self._requests = requests
        self._on_complete = on_complete
        self._outputs = list(outputs)
        self._done = False
        self._source = None

    def _finish(self, statuses) -> None:
        self._done = True
        if statuses and self._op in ("recv", "irecv"):
            self._source = self._pg.ranks[statuses[0].Get_source()]
        if self._on_complete is not None:
            self._on_complete()

    def is_completed(self) -> bool:
        """Whether the operation has finished (its outputs are then written)."""
        if not self._done:
            MPI = engine.mpi()
            statuses = [MPI.Status() for _ in self._requests]
            with engine.mpi_errors(self._op, self._rank):
                done = MPI.Request.Testall(self._requests, statuses)
            if done:
                self._finish(statuses)
        return self._done

    def is_success(self) -> bool:
        """Whether the operation finished without error."""
        return self.is_completed()

    def exception(self):
        """The error the operation ended with (None: failures are raised by `wait`)."""
        return None

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the operation has finished; with `timeout`, raise DistBackendError if it has
        not finished by then."""
        if self._done:
            return True
        if timeout is not None:
            deadline = time.monotonic() + timeout.total_seconds()
            pause = 1e-5
            while not self.is_completed():
                if time.monotonic() > deadline:
                    raise DistBackendError(f"{self._op}: rank {self._rank} timed out after {timeout} waiting for "
                                           f"ranks {self._pg.ranks}")
                time.sleep(pause)
                pause = min(pause * 2, 1e-2)
            return True
        MPI = engine.mpi()
        statuses = [MPI.Status() for _ in self._requests]
        with engine.mpi_errors(self._op, self._rank):
            MPI.Request.Waitall(self._requests, statuses)
        self._finish(statuses)
        return True

    def result(self) -> list:
        """The output tensors of the operation."""
        return list(self._outputs)

    def source_rank(self) -> int:
        """For a finished recv/irecv: the global rank the message came from."""
        if self._source is None:
            raise ValueError(f"source_rank(): only a finished recv or irecv has a source rank (this is {self._op})")
        return self._source


def launch(op: str, pg, start, on_complete=None, async_op: bool = False, outputs=()):
    """Start the request `start()` makes, as a Work; wait on it unless `async_op`."""
    with engine.mpi_errors(op, pg.ranks[pg.rank()]):
        request = start()
    work = Work(op, pg, [request], on_complete, outputs)
    if async_op:
        return work
    work.wait()
    return None
