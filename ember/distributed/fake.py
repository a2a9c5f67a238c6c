"""The "fake" backend: one process standing for one rank of a job that is not running.

    dist.init_process_group("fake", rank=0, world_size=64)
    with ember.device("meta"):
        model = build_model()
    model = DistributedDataParallel(model)        # or fully_shard(...)
    with ember.memory.track(model=model, optimizer=opt) as mem:
        ...one training step...                    # rank 0's memory in a 64-rank job

It exists to size distributed training (ember.memory on the meta device) before owning the
machines, as torch's fake process group serves tracing. Every collective accepts its arguments
as the real one does, moves no data (outputs keep what they held; on meta there is nothing to
move) and completes at once; the object collectives act as if every rank had passed this rank's
object. No MPI is started.
"""
from __future__ import annotations

import functools
import inspect

from ember.frontend.tensor import Tensor

__all__ = ["ACTIVE", "FakeComm", "CompletedWork", "fake_aware"]

#: whether a fake default group exists: the collectives' one test on their fast path
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

    def __init__(self, op: str, outputs=()) -> None:
        self._op = op
        self._outputs = list(outputs)

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


_TENSOR_ARGS = ("tensor", "output", "input", "output_tensor", "input_tensor")
_LIST_ARGS = ("tensor_list", "gather_list", "scatter_list", "input_list", "output_tensor_list", "input_tensor_list")


def fake_aware(fn):
    """Wrap a public collective so that on a fake group it runs `_fake` instead (one list lookup per
    call otherwise)."""
    from .process_group import resolve

    signature = inspect.signature(fn)
    op = fn.__name__

    @functools.wraps(fn)
    def collective(*args, **kwargs):
        if ACTIVE[0]:
            bound = signature.bind(*args, **kwargs)
            pg = resolve(bound.arguments.get("group"), op)
            if pg is None:
                return fn(*args, **kwargs)          # not a member: the real function says so
            if getattr(pg, "fake", False):
                return _fake(op, bound.arguments, pg)
        return fn(*args, **kwargs)

    return collective


def _fake(op: str, args: dict, pg):
    """What a collective does on a fake group: check its tensors, act out the object collectives."""
    for name in _TENSOR_ARGS:
        if name in args and not isinstance(args[name], Tensor):
            raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type Tensor but got "
                            f"{type(args[name])} instead.")
    for name in _LIST_ARGS:
        value = args.get(name)
        if value is not None and not all(isinstance(t, Tensor) for t in value):
            raise TypeError(f"{op}: `{name}` must be a list of Tensors")
    rank, size = pg.rank(), pg.size()
    if op == "all_gather_object":
        args["object_list"][:] = [args["obj"]] * size
    elif op == "gather_object" and args.get("object_gather_list") is not None:
        args["object_gather_list"][:] = [args["obj"]] * size
    elif op == "scatter_object_list" and args.get("scatter_object_input_list") is not None:
        args["scatter_object_output_list"][0] = args["scatter_object_input_list"][rank]
    elif op == "recv":
        return args.get("src") if args.get("src") is not None else (1 if rank == 0 else 0)
    if op in ("isend", "irecv") or args.get("async_op"):
        return CompletedWork(op, [args[n] for n in _TENSOR_ARGS if n in args])
    return None
