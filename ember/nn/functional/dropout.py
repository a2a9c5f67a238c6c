"""torch.nn.functional.dropout."""
from __future__ import annotations

from ember._generated import functions as _F
from ember.errors import ArgumentListError

__all__ = ["dropout"]


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) while training."""
    if p < 0.0 or p > 1.0:
        raise ArgumentListError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _F.dropout(input, p, training)
    return _F.copy_(input, out) if inplace else out
