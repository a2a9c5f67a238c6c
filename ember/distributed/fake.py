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

Every call is written once (collectives.py, gather_scatter.py, p2p.py, objects.py): after its
checks it branches on a fake group, to `completed(...)` or to the object outcomes here.
"""
from __future__ import annotations

__all__ = ["FakeComm", "CompletedWork", "completed", "broadcast_object_list", "scattered_object"]


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


def broadcast_object_list(pg, root: int, object_list: list) -> None:
    """A non-source rank keeps its own list (see the module docstring); one of None placeholders raises."""
    if pg.rank() != root and object_list and all(o is None for o in object_list):
        raise ValueError(f"broadcast_object_list: with the 'fake' backend, rank {pg.ranks[pg.rank()]} cannot receive "
                         f"the objects of the source rank {pg.ranks[root]}, and its own object_list holds only None; "
                         "build the objects on every rank (then each keeps its own), or size the source rank")


def scattered_object(pg, root: int, scatter_object_input_list):
    """Item r of the input list for rank r, on every rank, the source or not (a non-source rank must pass it)."""
    if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
        raise ValueError(f"scatter_object_list: with the 'fake' backend, rank {pg.ranks[pg.rank()]} cannot receive "
                         f"the objects of the source rank {pg.ranks[root]}; pass the scatter_object_input_list of "
                         f"world_size ({pg.size()}) items the source passes on this rank too (a real job ignores it "
                         "there), or size the source rank")
    return scatter_object_input_list[pg.rank()]
