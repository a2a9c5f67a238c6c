"""A dispatch mode that records, in order, the name of every op ember dispatches while it is active:
for tests that assert which ops a call makes (as torch's tests do with a TorchDispatchMode)."""
from __future__ import annotations

import ember


class OpNames(ember.DispatchMode):
    """`with OpNames() as seen: ...`, then `seen.names`: the ops' names ("cat", "ones_like", ...)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __ember_dispatch__(self, op, args):
        self.names.append(op.name)
        return op(*args)
