"""The object collectives: broadcast_object_list, all_gather_object, gather_object and
scatter_object_list. Objects travel pickled (ember tensors included), like torch's, and these
calls are synchronous and trust the peers' pickles.

Each call moves its pickles as bytes through MPI's non-blocking collectives: first every rank's
byte count, then the bytes. So an object collective waits like any other, against the group's
timeout, and a dead peer raises DistBackendError instead of blocking forever.
"""
from __future__ import annotations

import pickle

import numpy as np

from . import engine
from .collectives import prepare
from .process_group import peer
from .work import launch
from . import fake

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def _pickled(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _unpickled(buf: np.ndarray):
    return pickle.loads(buf.tobytes())


def _layout(sizes: np.ndarray) -> tuple[list[int], list[int]]:
    """Counts and displacements of pickles of `sizes` bytes laid end to end."""
    counts = [int(n) for n in sizes]
    return counts, [int(d) for d in np.concatenate([[0], np.cumsum(counts)[:-1]])]


def _gather_bytes(op: str, pg, data: np.ndarray, root: int | None) -> list[np.ndarray] | None:
    """Every rank's `data` bytes, on `root` (None: on every rank); None on the others."""
    MPI = engine.mpi()
    mine = np.array([data.size], np.int64)
    sizes = np.empty(pg.size(), np.int64)
    if root is None:
        launch(op, pg, lambda: pg.comm.Iallgather(mine, sizes))
    else:
        launch(op, pg, lambda: pg.comm.Igather(mine, sizes if pg.rank() == root else None, root))
    if root is not None and pg.rank() != root:
        launch(op, pg, lambda: pg.comm.Igatherv(data, None, root))
        return None
    counts, displs = _layout(sizes)
    out = np.empty(sum(counts), np.uint8)
    if root is None:
        launch(op, pg, lambda: pg.comm.Iallgatherv(data, [out, counts, displs, MPI.BYTE]))
    else:
        launch(op, pg, lambda: pg.comm.Igatherv(data, [out, counts, displs, MPI.BYTE], root))
    return [out[d:d + c] for c, d in zip(counts, displs)]


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace the items of `object_list` on every rank by the source rank's (lists of equal length)."""
    pg = prepare("broadcast_object_list", group, {})
    if pg is None:
        return
    root = peer(pg, src, group_src, "broadcast_object_list")
    if pg.fake:
        return fake.broadcast_object_list(pg, root, object_list)
    data = _pickled(list(object_list)) if pg.rank() == root else None
    size = np.array([0 if data is None else data.size], np.int64)
    launch("broadcast_object_list", pg, lambda: pg.comm.Ibcast(size, root))
    if data is None:
        data = np.empty(int(size[0]), np.uint8)
    launch("broadcast_object_list", pg, lambda: pg.comm.Ibcast(data, root))
    received = _unpickled(data)
    if len(received) != len(object_list):
        raise ValueError(f"broadcast_object_list: the source sent {len(received)} objects but this rank's "
                         f"object_list has {len(object_list)}")
    object_list[:] = received


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Every rank's `obj`, into `object_list[i]` for rank i (a list of world_size items), on every rank."""
    pg = prepare("all_gather_object", group, {})
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have world_size ({pg.size()}) items, "
                         f"got {len(object_list)}")
    if pg.fake:                 # as if every rank had passed this rank's object
        object_list[:] = [obj] * pg.size()
        return
    object_list[:] = [_unpickled(b) for b in _gather_bytes("all_gather_object", pg, _pickled(obj), None)]


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """Every rank's `obj` into `object_gather_list[i]` on the destination rank."""
    pg = prepare("gather_object", group, {})
    if pg is None:
        return
    root = peer(pg, dst, group_dst, "gather_object")
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list of world_size ({pg.size()}) items "
                         "on the destination rank")
    if pg.fake:                 # this rank's slot its object, the others unknowable (None)
        if pg.rank() == root:
            object_gather_list[:] = [obj if r == pg.rank() else None for r in range(pg.size())]
        return
    gathered = _gather_bytes("gather_object", pg, _pickled(obj), root)
    if gathered is not None:
        object_gather_list[:] = [_unpickled(b) for b in gathered]


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """The source rank's `scatter_object_input_list[i]` into `scatter_object_output_list[0]` on rank i."""
    pg = prepare("scatter_object_list", group, {})
    if pg is None:
        return
    root = peer(pg, src, group_src, "scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    if pg.rank() == root and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: scatter_object_input_list must have world_size ({pg.size()}) items "
                         "on the source rank")
    if pg.fake:
        scatter_object_output_list[0] = fake.scattered_object(pg, root, scatter_object_input_list)
        return
    MPI = engine.mpi()
    op = "scatter_object_list"
    size = np.empty(1, np.int64)
    if pg.rank() == root:
        pieces = [_pickled(o) for o in scatter_object_input_list]
        sizes = np.array([p.size for p in pieces], np.int64)
        counts, displs = _layout(sizes)
        send = np.concatenate(pieces) if pieces else np.empty(0, np.uint8)
        launch(op, pg, lambda: pg.comm.Iscatter(sizes, size, root))
        mine = np.empty(int(size[0]), np.uint8)
        launch(op, pg, lambda: pg.comm.Iscatterv([send, counts, displs, MPI.BYTE], mine, root))
    else:
        launch(op, pg, lambda: pg.comm.Iscatter(None, size, root))
        mine = np.empty(int(size[0]), np.uint8)
        launch(op, pg, lambda: pg.comm.Iscatterv(None, mine, root))
    scatter_object_output_list[0] = _unpickled(mine)
