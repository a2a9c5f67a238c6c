"""The collectives that move distinct pieces between ranks: all_gather, all_gather_into_tensor,
gather, scatter, all_to_all_single and all_to_all, on MPI's non-blocking (v-)operations, so
pieces of different sizes are served too (on a 'nccl' group, NCCL's calls: see nccl.py). On a
group of the 'fake' backend (fake.py) a call makes its checks and stops there.
"""
from __future__ import annotations

import numpy as np

from . import nccl
from .collectives import prepare
from .process_group import peer
from .staging import Staged, check_same_dtype, check_tensor, check_world_multiple, concatenated, deliver
from .work import launch
from .fake import completed

__all__ = ["all_gather", "all_gather_into_tensor", "gather", "scatter", "all_to_all_single", "all_to_all"]


def _offsets(counts: list[int]) -> list[int]:
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])] if counts else []


def _deliver_all(tensors, flat: np.ndarray, counts: list[int]):
    """A callback writing consecutive pieces of `flat` into `tensors`."""
    def done() -> None:
        for t, start, n in zip(tensors, _offsets(counts), counts):
            deliver(t, flat[start:start + n])
    return done


def _check_list(op: str, tensors, arg: str, pg, reference) -> list[int]:
    """torch's checks on a list of one tensor per rank (all of `reference`'s dtype); their element counts."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: `{arg}` must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != pg.size():
        raise ValueError(f"{op}: `{arg}` must have world_size ({pg.size()}) tensors, got {len(tensors)}")
    for t in tensors:
        check_tensor(op, t, arg, pg)
    check_same_dtype(op, tensors, reference)
    return [t.numel() for t in tensors]


def _root_list(op: str, tensors, arg: str, role: str, pg, root: int, tensor) -> list[int] | None:
    """The element counts of the root's `tensors` (one per rank, the root's own the size of `tensor`);
    None on the other ranks, which must not give any."""
    if pg.rank() != root:
        if tensors:
            raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{role} ranks.")
        return None
    if not tensors:
        raise ValueError(f"Argument ``{arg}`` must be specified on {role} rank.")
    counts = _check_list(op, tensors, arg, pg, tensor)
    if counts[root] != tensor.numel():
        raise ValueError(f"{op}: {arg}[{root}] has {counts[root]} elements but tensor has {tensor.numel()}")
    return counts


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Every rank's `tensor`, into `tensor_list[i]` for rank i, on every rank (sizes may differ
    between ranks; each rank's `tensor_list` gives them)."""
    pg = prepare("all_gather", group, {"tensor": tensor})
    if pg is None:
        return None
    counts = _check_list("all_gather", tensor_list, "tensor_list", pg, tensor)
    if counts[pg.rank()] != tensor.numel():
        raise ValueError(f"all_gather: tensor_list[{pg.rank()}] has {counts[pg.rank()]} elements but this rank's "
                         f"tensor has {tensor.numel()}")
    if pg.fake:
        return completed("all_gather", async_op, tensor_list)
    if pg.nccl is not None:
        return nccl.all_gather(pg, tensor_list, tensor, async_op)
    send = Staged(tensor, reduction=False).buf
    recv = np.empty(sum(counts), send.dtype)
    return launch("all_gather", pg, lambda: pg.comm.Iallgatherv(send, [recv, counts]),
                  _deliver_all(tensor_list, recv, counts), async_op, tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's `input_tensor`, concatenated in rank order (flat order: stacked or catted along
    dim 0) into `output_tensor` on every rank."""
    pg = prepare("all_gather_into_tensor", group, {"output_tensor": output_tensor, "input_tensor": input_tensor})
    if pg is None:
        return None
    check_same_dtype("all_gather_into_tensor", [output_tensor], input_tensor)
    check_world_multiple("all_gather_into_tensor", output_tensor, "output", input_tensor, "input", pg.size())
    if pg.fake:
        return completed("all_gather_into_tensor", async_op, [output_tensor])
    if pg.nccl is not None:
        return nccl.all_gather_into_tensor(pg, output_tensor, input_tensor, async_op)
    send = Staged(input_tensor, reduction=False).buf
    out = Staged(output_tensor, reduction=False, reads=False)
    return launch("all_gather_into_tensor", pg, lambda: pg.comm.Iallgather(send, out.buf), out.commit, async_op,
                  [output_tensor])


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Every rank's `tensor` into `gather_list[i]` for rank i, on the destination rank only."""
    pg = prepare("gather", group, {"tensor": tensor})
    if pg is None:
        return None
    root = peer(pg, dst, group_dst, "gather")
    counts = _root_list("gather", gather_list, "gather_list", "destination", pg, root, tensor)
    if pg.fake:
        return completed("gather", async_op, gather_list or ())
    if pg.nccl is not None:
        return nccl.gather(pg, tensor, gather_list, root, async_op)
    send = Staged(tensor, reduction=False).buf
    if counts is None:
        return launch("gather", pg, lambda: pg.comm.Igatherv(send, None, root), None, async_op)
    recv = np.empty(sum(counts), send.dtype)
    return launch("gather", pg, lambda: pg.comm.Igatherv(send, [recv, counts], root),
                  _deliver_all(gather_list, recv, counts), async_op, gather_list)


def scatter(tensor, scatter_list=None, src: int | None = None, group=None, async_op: bool = False,
            group_src: int | None = None):
    """The source rank's `scatter_list[i]` into `tensor` on rank i."""
    pg = prepare("scatter", group, {"tensor": tensor})
    if pg is None:
        return None
    root = peer(pg, src, group_src, "scatter")
    counts = _root_list("scatter", scatter_list, "scatter_list", "source", pg, root, tensor)
    if pg.fake:
        return completed("scatter", async_op, [tensor])
    if pg.nccl is not None:
        return nccl.scatter(pg, tensor, scatter_list, root, async_op)
    out = Staged(tensor, reduction=False, reads=False)
    send = None if counts is None else [concatenated(scatter_list), counts]
    return launch("scatter", pg, lambda: pg.comm.Iscatterv(send, out.buf, root), out.commit, async_op, [tensor])


def _splits(op: str, t, sizes, n: int, arg: str) -> list[int]:
    """Element counts per rank of `t` cut along dim 0 by `sizes` (equal parts when None)."""
    rows = t.shape[0] if t.dim() else 1
    per_row = t.numel() // rows if rows else 0
    if sizes is None:
        if rows % n:
            raise ValueError(f"{op}: {arg} dim 0 ({rows}) must divide evenly by world_size ({n}) when no split "
                             "sizes are given")
        return [rows // n * per_row] * n
    sizes = [int(x) for x in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size: {op} got {arg}_split_sizes={sizes} for "
                           f"dim 0 of {rows} over {n} ranks")
    return [x * per_row for x in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,  # noqa: A002
                      async_op: bool = False):
    """Cut `input` along dim 0 into world_size pieces (by `input_split_sizes`, equal when None) and
    send piece i to rank i; `output` receives the pieces from every rank, in rank order."""
    pg = prepare("all_to_all_single", group, {"output": output, "input": input})
    if pg is None:
        return None
    check_same_dtype("all_to_all_single", [output], input)
    send_counts = _splits("all_to_all_single", input, input_split_sizes, pg.size(), "input")
    recv_counts = _splits("all_to_all_single", output, output_split_sizes, pg.size(), "output")
    if pg.fake:
        return completed("all_to_all_single", async_op, [output])
    if pg.nccl is not None:
        src = nccl.DeviceBuffer(input, "all_to_all_single")
        dst = nccl.DeviceBuffer(output, "all_to_all_single", reads=False)
        return nccl.all_to_all(pg, [(src, o, n) for o, n in zip(_offsets(send_counts), send_counts)],
                               [(dst, o, n) for o, n in zip(_offsets(recv_counts), recv_counts)],
                               "all_to_all_single", [output], async_op)
    send = Staged(input, reduction=False).buf
    out = Staged(output, reduction=False, reads=False)
    return launch("all_to_all_single", pg,
                  lambda: pg.comm.Ialltoallv([send, send_counts], [out.buf, recv_counts]), out.commit, async_op,
                  [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Send `input_tensor_list[i]` to rank i; `output_tensor_list[j]` receives rank j's piece."""
    pg = prepare("all_to_all", group, {})
    if pg is None:
        return None
    if not input_tensor_list:
        raise ValueError("all_to_all: input_tensor_list must not be empty")
    reference = input_tensor_list[0]
    send_counts = _check_list("all_to_all", input_tensor_list, "input_tensor_list", pg, reference)
    recv_counts = _check_list("all_to_all", output_tensor_list, "output_tensor_list", pg, reference)
    if pg.fake:
        return completed("all_to_all", async_op, output_tensor_list)
    if pg.nccl is not None:
        return nccl.all_to_all(pg, [(nccl.DeviceBuffer(t, "all_to_all"), 0, t.numel()) for t in input_tensor_list],
                               [(nccl.DeviceBuffer(t, "all_to_all", reads=False), 0, t.numel())
                                for t in output_tensor_list], "all_to_all", output_tensor_list, async_op)
    send = concatenated(input_tensor_list)
    recv = np.empty(sum(recv_counts), send.dtype)
    return launch("all_to_all", pg, lambda: pg.comm.Ialltoallv([send, send_counts], [recv, recv_counts]),
                  _deliver_all(output_tensor_list, recv, recv_counts), async_op, output_tensor_list)
