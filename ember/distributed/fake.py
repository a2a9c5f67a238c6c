"""The "fake" backend: one process standing for one rank of a job that is not running.

    dist.init_process_group("fake", rank=0, world_size=64)
    with ember.device("meta"):
        model = build_model()
    model = DistributedDataParallel(model)        # or fully_shard(...)
    with ember.memory.track(model=model, optimizer=opt) as mem:
        ...one training step...                    # rank 0's memory in a 64-rank job

It exists to size distributed training (ember.memory on the meta device) before owning the
machines, as torch's fake process group serves tracing. No MPI is started. Every call makes the
checks the real one makes (tensor types, sizes of the per-rank lists and of the gathered or
scattered tensors, dtype agreement, src/dst ranks, the ReduceOp), on tensors of any device (meta
above all), then completes at once: an `async_op=True` call returns a Work that is already done.
The tensor collectives move no data: their outputs keep what they held (on meta there is nothing
to move). The object collectives give what this one process can know of the other ranks' objects:

* `all_gather_object`: every slot holds this rank's object, as if every rank had passed it (so
  checks that the ranks agree, such as DistributedDataParallel's on the model, pass);
* `gather_object`: on the destination rank, this rank's slot holds its object and the others
  None, the other ranks' objects being unknowable (so rank-specific data, such as
  ZeroRedundancyOptimizer's consolidated state, is never made up);
* `broadcast_object_list`: a rank that is not the source keeps its own list: the source's is
  unknowable, and a script that builds the objects on every rank (a config) has the same list
  everywhere. A non-source list of None placeholders, the usual `[obj if rank == src else None]`,
  raises ValueError: there is nothing to stand in for the source's objects;
* `scatter_object_list`: rank r gets item r of `scatter_object_input_list`, which a non-source rank
  must therefore pass too (else ValueError: the source's objects are unknowable);
* `recv`/`irecv` report the sender they name (with none, the next rank).

The tensor collectives are written once (collectives.py, gather_scatter.py): after their checks
they return `completed(...)` on a fake group. The point-to-point calls and the object collectives
take `fake_aware`, which runs their stand-ins here when a fake group exists.
"""
from __future__ import annotations

import functools
import inspect

__all__ = ["ACTIVE", "FakeComm", "CompletedWork", "completed", "fake_aware"]

#: whether a fake default group exists: the one test of `fake_aware`'s fast path
ACTIVE = [False]


class FakeComm:
    """What a ProcessGroup asks of its communicator, for a rank of a group that exists only on paper."""

    def __init__(self, rank: int, size: int) -> None:
        self._rank, self._size = rank, size

    def Get_rank(self) -> int:      # noqa: N802 (mpi4py's names)
        return self._rank

    def Get_size(self) -> int:      # noqa: N802
        return self._size

    def Free(self) -> None:         # noqa: N802
        pass


class CompletedWork:
    """The Work of a fake collective: done from the start."""

    def __init__(self, op: str, outputs=(), source: int | None = None) -> None:
        self._op = op
        self._outputs = list(outputs)
        self._source = source

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self):
        return None

    def result(self) -> list:
        return list(self._outputs)

    def source_rank(self) -> int:
        """For an irecv: the global rank it names as the sender."""
        if self._source is None:
            raise ValueError(f"source_rank(): only a finished recv or irecv has a source rank (this is {self._op})")
        return self._source


def completed(op: str, async_op: bool, outputs=()):
    """What a collective returns on a fake group once its checks have passed: a done Work when `async_op`,
    else None."""
    return CompletedWork(op, outputs) if async_op else None


def fake_aware(fn):
    """Wrap a point-to-point or object collective so that, while a fake default group exists, its stand-in
    here runs instead (one list lookup per call otherwise)."""
    signature = inspect.signature(fn)
    stand_in = _STAND_INS[fn.__name__]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if ACTIVE[0]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return stand_in(fn.__name__, **bound.arguments)
        return fn(*args, **kwargs)

    return call


def _group(op: str, group, tensors: dict, collective: bool = True):
    """The fake group of a call after the checks every call makes (None on a rank outside it)."""
    from .collectives import prepare

    return prepare(op, group, tensors, collective)


def _root(pg, global_rank, group_rank, op: str, optional: bool = False):
    """The group rank a call names (src or dst), checked as the real calls check it."""
    from .process_group import peer

    return peer(pg, global_rank, group_rank, op, optional=optional)


def _send(op, tensor, dst, group, tag, group_dst):
    """send/isend: the tensor and the destination checked, nothing sent."""
    pg = _group(op, group, {"tensor": tensor}, collective=False)
    if pg is None:
        return None
    if _root(pg, dst, group_dst, op) == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of the "
                         "current process.")
    return CompletedWork(op) if op == "isend" else None


def _recv(op, tensor, src, group, tag, group_src):
    """recv/irecv: the tensor and the source checked, `tensor` left as it is; the sender is the rank named
    (the next rank when none is)."""
    pg = _group(op, group, {"tensor": tensor}, collective=False)
    if pg is None:
        return -1 if op == "recv" else None
    frm = _root(pg, src, group_src, op, optional=True)
    if frm == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank of the current process.")
    source = pg.ranks[(pg.rank() + 1) % pg.size() if frm is None else frm]
    return source if op == "recv" else CompletedWork(op, [tensor], source)


def _broadcast_object_list(op, object_list, src, group, device, group_src):
    """A non-source rank keeps its own list (see the module docstring); one of None placeholders raises."""
    pg = _group(op, group, {})
    if pg is None:
        return
    root = _root(pg, src, group_src, op)
    if pg.rank() != root and object_list and all(o is None for o in object_list):
        raise ValueError(f"broadcast_object_list: with the 'fake' backend, rank {pg.ranks[pg.rank()]} cannot receive "
                         f"the objects of the source rank {pg.ranks[root]}, and its own object_list holds only None; "
                         "build the objects on every rank (then each keeps its own), or size the source rank")


def _all_gather_object(op, object_list, obj, group):
    """Every slot this rank's object: as if every rank had passed it."""
    pg = _group(op, group, {})
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have world_size ({pg.size()}) items, "
                         f"got {len(object_list)}")
    object_list[:] = [obj] * pg.size()


def _gather_object(op, obj, object_gather_list, dst, group, group_dst):
    """On the destination rank: this rank's slot its object, the others None (unknowable)."""
    pg = _group(op, group, {})
    if pg is None:
        return
    root = _root(pg, dst, group_dst, op)
    if pg.rank() != root:
        return
    if object_gather_list is None or len(object_gather_list) != pg.size():
        raise ValueError(f"gather_object: object_gather_list must be a list of world_size ({pg.size()}) items "
                         "on the destination rank")
    object_gather_list[:] = [obj if r == pg.rank() else None for r in range(pg.size())]


def _scatter_object_list(op, scatter_object_output_list, scatter_object_input_list, src, group, group_src):
    """Item r of the input list into rank r's output list, on every rank, the source or not."""
    pg = _group(op, group, {})
    if pg is None:
        return
    root = _root(pg, src, group_src, op)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    if pg.rank() == root and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: scatter_object_input_list must have world_size ({pg.size()}) items "
                         "on the source rank")
    if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
        raise ValueError(f"scatter_object_list: with the 'fake' backend, rank {pg.ranks[pg.rank()]} cannot receive "
                         f"the objects of the source rank {pg.ranks[root]}; pass the scatter_object_input_list of "
                         f"world_size ({pg.size()}) items the source passes on this rank too (a real job ignores it "
                         "there), or size the source rank")
    scatter_object_output_list[0] = scatter_object_input_list[pg.rank()]


#: the stand-in of each call that `fake_aware` wraps, called with the call's name and bound arguments
_STAND_INS = {"send": _send, "isend": _send, "recv": _recv, "irecv": _recv,
              "broadcast_object_list": _broadcast_object_list, "all_gather_object": _all_gather_object,
              "gather_object": _gather_object, "scatter_object_list": _scatter_object_list}
