"""`Shard`: one rank's rows of a tensor split along its first dimension, as a sharded state dict holds it."""
from __future__ import annotations

from dataclasses import dataclass

from ember.frontend.tensor import Tensor

__all__ = ["Shard"]


@dataclass
class Shard:
    """Rows [row_offset, row_offset + local.shape[0]) of a tensor of `global_shape` (a 0-d tensor
    is one row, held by one rank; the others hold an empty local part). What a sharded state dict
    (`get_model_state_dict` of a fully_shard model) maps names to, and what `checkpoint.save`
    writes and `checkpoint.load` fills in place."""

    local: Tensor
    global_shape: tuple
    row_offset: int

    @property
    def rows(self) -> int:
        return self.local.shape[0] if self.local.dim() else (1 if self.local.numel() else 0)
