"""The cross-rank consistency check of EMBER_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG=DETAIL).

Before each collective every rank shares a fingerprint of it (sequence number, operation, tensor
shapes and dtypes); a mismatch, which would otherwise hang or corrupt the transfer, raises
RuntimeError on every rank naming the first two ranks that disagree and what each was running.
It costs one extra small collective per call, so it is off unless asked for.
"""
from __future__ import annotations

from . import engine

__all__ = ["fingerprint"]


def fingerprint(pg, op: str, tensors=()) -> None:
    """Count the collective on `pg` (in the shared progress table, see health.py), and under DETAIL
    check that every rank runs the same one."""
    pg.sequence += 1
    pg.peers.entered(pg.index, pg.sequence)
    if not pg.debug_detail:
        return
    mine = (f"CollectiveFingerPrint(SequenceNumber={pg.sequence}, OpType={op}, "
            f"TensorShape={[list(t.shape) for t in tensors]}, TensorDtypes=[{', '.join(t.dtype.name for t in tensors)}])")
    with engine.mpi_errors(op, pg.ranks[pg.rank()]):
        every = pg.comm.allgather(mine)
    for i, theirs in enumerate(every):
        if theirs != every[0]:
            raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank {pg.ranks[0]} is running "
                               f"collective: {every[0]}, but Rank {pg.ranks[i]} is running collective: {theirs}")
