"""The object collectives: broadcast_object_list, all_gather_object, gather_object and
scatter_object_list. Objects travel pickled (ember tensors included), through mpi4py's
object messaging; like torch's, these calls are synchronous and trust the peers' pickles.
"""
from __future__ import annotations

from . import engine
from .collectives import prepare
from .process_group import peer

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace the items of `object_list` on every rank by the source rank's (lists of equal length)."""
    pg = prepare("broadcast_object_list", group, {})
    if pg is None:
        return
    root = peer(pg, src, group_src, "broadcast_object_list")
    with engine.mpi_errors("broadcast_object_list", pg.ranks[pg.rank()]):
        received = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root)
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
    with engine.mpi_errors("all_gather_object", pg.ranks[pg.rank()]):
        object_list[:] = pg.comm.allgather(obj)


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
    with engine.mpi_errors("gather_object", pg.ranks[pg.rank()]):
        gathered = pg.comm.gather(obj, root)
    if pg.rank() == root:
        object_gather_list[:] = gathered


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
    with engine.mpi_errors("scatter_object_list", pg.ranks[pg.rank()]):
        scatter_object_output_list[0] = pg.comm.scatter(
            list(scatter_object_input_list) if pg.rank() == root else None, root)
