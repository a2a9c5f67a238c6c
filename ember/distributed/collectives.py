"""The reducing and broadcasting collectives: all_reduce, reduce, reduce_scatter_tensor,
reduce_scatter, broadcast and barrier, on MPI's non-blocking operations.

Each call checks its arguments as torch does, fingerprints itself under the DETAIL debug level,
stages its tensors (ember.distributed.staging) and starts one MPI request (on a 'nccl' group, it
queues the NCCL collective: nccl.py); `async_op=True` returns the Work, otherwise the call waits. A rank outside `group` gets None (with a warning).
On a group of the 'fake' backend (fake.py) a call makes the same checks and stops there.
"""
from __future__ import annotations

import numpy as np

from . import engine, nccl
from .debug import fingerprint
from .process_group import peer, resolve
from .reduce_op import ReduceOp
from .staging import Staged, check_reduce_op, check_same_dtype, check_tensor, check_world_multiple, concatenated
from .work import launch
from .fake import completed

__all__ = ["all_reduce", "reduce", "reduce_scatter_tensor", "reduce_scatter", "broadcast", "barrier"]


def _average(buf: np.ndarray, n: int) -> None:
    """ReduceOp.AVG's division of a sum over `n` ranks (integers truncate, as C and NCCL do)."""
    if buf.dtype.kind == "f":
        buf /= n
    else:
        np.copyto(buf, np.sign(buf) * (np.abs(buf) // n))


def _finish_reduction(s: Staged, average: bool, pg):
    """The completion of a reduction into `s`: ReduceOp.AVG's division when `average`, then the write-back."""
    def done() -> None:
        if average:
            _average(s.buf, pg.size())
        s.commit()
    return done


def prepare(op: str, group, tensors: dict, collective: bool = True):
    """The group a call runs on (None on a rank outside it), after the checks of its `tensors` (by argument
    name; none for the object collectives) and, for a collective (not send/recv) of a real group, the
    DETAIL fingerprint."""
    pg = resolve(group, op)
    if pg is None:
        return None
    for arg, t in tensors.items():
        check_tensor(op, t, arg, pg)
    if collective and not pg.fake:
        fingerprint(pg, op, list(tensors.values()))
    return pg


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` across the ranks of `group` with `op`; every rank gets the result in place."""
    pg = prepare("all_reduce", group, {"tensor": tensor})
    if pg is None:
        return None
    check_reduce_op(op, "all_reduce", tensor)
    if pg.fake:
        return completed("all_reduce", async_op, [tensor])
    if pg.nccl is not None:
        return nccl.all_reduce(pg, tensor, op, async_op)
    MPI = engine.mpi()
    s = Staged(tensor, reduction=True)
    mpi_op, average = engine.mpi_reduction(op, s.category)
    return launch("all_reduce", pg, lambda: pg.comm.Iallreduce(MPI.IN_PLACE, s.buf, mpi_op),
                  _finish_reduction(s, average, pg), async_op, [tensor])


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduce `tensor` across the ranks of `group` into the destination rank's `tensor` (the other
    ranks' tensors are left as they were)."""
    pg = prepare("reduce", group, {"tensor": tensor})
    if pg is None:
        return None
    root = peer(pg, dst, group_dst, "reduce")
    check_reduce_op(op, "reduce", tensor)
    if pg.fake:
        return completed("reduce", async_op, [tensor])
    if pg.nccl is not None:
        return nccl.reduce(pg, tensor, root, op, async_op)
    MPI = engine.mpi()
    s = Staged(tensor, reduction=True)
    mpi_op, average = engine.mpi_reduction(op, s.category)
    if pg.rank() != root:
        return launch("reduce", pg, lambda: pg.comm.Ireduce(s.buf, None, mpi_op, root), None, async_op, [tensor])
    return launch("reduce", pg, lambda: pg.comm.Ireduce(MPI.IN_PLACE, s.buf, mpi_op, root),
                  _finish_reduction(s, average, pg), async_op, [tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):  # noqa: A002
    """Reduce `input` (world_size equal chunks, flat order) across ranks; rank i gets the i-th
    reduced chunk in `output`."""
    pg = prepare("reduce_scatter_tensor", group, {"output": output, "input": input})
    if pg is None:
        return None
    check_same_dtype("reduce_scatter_tensor", [output], input)
    check_world_multiple("reduce_scatter_tensor", input, "input", output, "output", pg.size())
    check_reduce_op(op, "reduce_scatter_tensor", input)
    if pg.fake:
        return completed("reduce_scatter_tensor", async_op, [output])
    if pg.nccl is not None:
        return nccl.reduce_scatter_tensor(pg, output, input, op, async_op)
    src, out = Staged(input, reduction=True), Staged(output, reduction=True, reads=False)
    mpi_op, average = engine.mpi_reduction(op, src.category)
    return launch("reduce_scatter_tensor", pg, lambda: pg.comm.Ireduce_scatter_block(src.buf, out.buf, mpi_op),
                  _finish_reduction(out, average, pg), async_op, [output])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `input_list` (one tensor per rank) across ranks; rank i gets the reduced i-th tensor in `output`."""
    pg = prepare("reduce_scatter", group, {"output": output})
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must have world_size ({pg.size()}) tensors, got {len(input_list)}")
    for t in input_list:
        check_tensor("reduce_scatter", t, "input_list", pg)
    check_same_dtype("reduce_scatter", input_list, output)
    counts = [t.numel() for t in input_list]
    if counts[pg.rank()] != output.numel():
        raise ValueError(f"reduce_scatter: output has {output.numel()} elements but this rank's input_list entry "
                         f"has {counts[pg.rank()]}")
    check_reduce_op(op, "reduce_scatter", output)
    if pg.fake:
        return completed("reduce_scatter", async_op, [output])
    if pg.nccl is not None:
        return nccl.reduce_scatter(pg, output, input_list, op, async_op)
    send = concatenated(input_list, reduction=True)
    out = Staged(output, reduction=True, reads=False)
    mpi_op, average = engine.mpi_reduction(op, out.category)
    return launch("reduce_scatter", pg, lambda: pg.comm.Ireduce_scatter(send, out.buf, counts, mpi_op),
                  _finish_reduction(out, average, pg), async_op, [output])


def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False, group_src: int | None = None):
    """Copy the source rank's `tensor` into `tensor` on every rank of `group`."""
    pg = prepare("broadcast", group, {"tensor": tensor})
    if pg is None:
        return None
    root = peer(pg, src, group_src, "broadcast")
    if pg.fake:
        return completed("broadcast", async_op, [tensor])
    if pg.nccl is not None:
        return nccl.broadcast(pg, tensor, root, async_op)
    s = Staged(tensor, reduction=False, reads=pg.rank() == root)
    done = None if pg.rank() == root else s.commit
    return launch("broadcast", pg, lambda: pg.comm.Ibcast(s.buf, root), done, async_op, [tensor])


def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait until every rank of `group` has reached the barrier (with `timeout`, a timedelta, raise
    DistBackendError if some rank has not arrived by then)."""
    pg = prepare("barrier", group, {})
    if pg is None:
        return None
    if pg.fake:
        return completed("barrier", async_op)
    if pg.nccl is not None:
        work = nccl.barrier(pg, async_op=True)
        if async_op:
            return work
        work.wait(timeout)
        return None
    work = launch("barrier", pg, lambda: pg.comm.Ibarrier(), None, async_op=True)
    if async_op:
        return work
    work.wait(timeout)
    return None
