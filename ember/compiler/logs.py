"""`EMBER_LOGS`: which compiler events to print as they happen (torch's TORCH_LOGS, for ember.compile).

`EMBER_LOGS=recompiles,graph_breaks,graph,kernels,output_code` (comma-separated; `all` for every
kind) prints each recompile with the guard that failed, each graph break with its reason and line,
each captured graph, each fused kernel generated (the ops it fuses, its inputs and outputs) and
each generated kernel's source code. Read when the compiler loads; `set_logs(spec)` changes it, and
`with logging(spec):` for a block.
"""
from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["enabled", "log", "set_logs", "logging", "KINDS"]

KINDS = ("recompiles", "graph_breaks", "graph", "kernels", "output_code")
_ENABLED: set[str] = set()


def set_logs(spec: str) -> None:
    """Enable the kinds named in `spec` ("recompiles,graph_breaks"; "all"; "" for none)."""
    names = {n.strip() for n in spec.split(",") if n.strip()}
    unknown = names - set(KINDS) - {"all"}
    if unknown:
        raise ValueError(f"EMBER_LOGS: unknown kinds {sorted(unknown)}; the kinds are {', '.join(KINDS)} or all")
    _ENABLED.clear()
    _ENABLED.update(KINDS if "all" in names else names)


@contextlib.contextmanager
def logging(spec: str):
    """The kinds in `spec` enabled while the block runs, the previous ones after it."""
    previous = set(_ENABLED)
    set_logs(spec)
    try:
        yield
    finally:
        _ENABLED.clear()
        _ENABLED.update(previous)


def enabled(kind: str) -> bool:
    return kind in _ENABLED


def log(kind: str, message: str) -> None:
    if kind in _ENABLED:
        print(f"[ember.compile {kind}] {message}", file=sys.stderr)


set_logs(os.environ.get("EMBER_LOGS", ""))
