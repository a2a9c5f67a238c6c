"""The tensors inside a nested value (tuples, lists and dict values), as hooks and trackers see
module inputs, outputs and optimizer state."""
from __future__ import annotations

from ember.frontend.tensor import Tensor

__all__ = ["tensors_in"]


def tensors_in(value) -> list:
    """Every Tensor in `value`, looking into lists, tuples and dict values (any depth)."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out
