"""`ReduceOp`: the reductions of all_reduce, reduce and reduce_scatter, as torch.distributed spells them.

`ReduceOp.SUM` and friends are members of the `ReduceOp.RedOpType` enum, so `op == ReduceOp.SUM`,
`op.name` and `ReduceOp.RedOpType.__members__` read as in torch.
"""
from __future__ import annotations

import enum

__all__ = ["ReduceOp"]


class RedOpType(enum.Enum):
    """The reduction kinds (torch's numbering)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class ReduceOp:
    """The reduction a collective applies across ranks: SUM, AVG, PRODUCT, MIN, MAX and the bitwise
    BAND, BOR, BXOR (integer and bool tensors). PREMUL_SUM is named but not served (NCCL only in torch)."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM
