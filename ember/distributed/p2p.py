"""Point-to-point messages: send, recv, isend, irecv (MPI's tagged messages within a group).

`dst`/`src` are global ranks, `group_dst`/`group_src` ranks within `group`; recv with neither
takes the next message from any rank and returns who sent it. On a 'nccl' group (nccl.py) the
source must be named and tags are ignored: NCCL matches messages between two ranks in order.
"""
from __future__ import annotations

from . import engine, nccl
from .collectives import prepare
from .process_group import peer
from .staging import Staged
from .work import launch
from .fake import CompletedWork

__all__ = ["send", "recv", "isend", "irecv"]


def _start_send(op: str, tensor, dst, group, tag: int, group_dst):
    pg = prepare(op, group, {"tensor": tensor}, collective=False)
    if pg is None:
        return None
    to = peer(pg, dst, group_dst, op)
    if to == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of the "
                         "current process.")
    if pg.fake:
        return CompletedWork(op)
    if pg.nccl is not None:
        return nccl.send(pg, op, tensor, to)
    buf = Staged(tensor, reduction=False).buf
    return launch(op, pg, lambda: pg.comm.Isend(buf, to, tag), async_op=True, collective=False)


def _start_recv(op: str, tensor, src, group, tag: int, group_src):
    pg = prepare(op, group, {"tensor": tensor}, collective=False)
    if pg is None:
        return None
    frm = peer(pg, src, group_src, op, optional=True)
    if frm == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank of the current process.")
    if pg.fake:                 # the sender is the rank named, or the next rank when none is
        return CompletedWork(op, [tensor], pg.ranks[(pg.rank() + 1) % pg.size() if frm is None else frm])
    if pg.nccl is not None:
        return nccl.recv(pg, op, tensor, frm)
    out = Staged(tensor, reduction=False, reads=False)
    source = engine.mpi().ANY_SOURCE if frm is None else frm
    return launch(op, pg, lambda: pg.comm.Irecv(out.buf, source, tag), out.commit, True, [tensor], collective=False)


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send `tensor` to rank `dst`, returning once the buffer may be reused."""
    work = _start_send("send", tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive a message from rank `src` (any rank when None) into `tensor`; returns the sender's
    global rank (-1 on a rank outside `group`)."""
    work = _start_recv("recv", tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source_rank()


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None):
    """Start sending `tensor` to rank `dst`; returns the Work (don't change `tensor` before `wait()`)."""
    return _start_send("isend", tensor, dst, group, tag, group_dst)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns the Work
    (`source_rank()` names the sender once done)."""
    return _start_recv("irecv", tensor, src, group, tag, group_src)
