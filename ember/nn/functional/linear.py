"""torch.nn.functional.linear."""
from __future__ import annotations

from ember._generated import functions as _F

__all__ = ["linear"]


def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    return _F.linear(input, weight, bias)
