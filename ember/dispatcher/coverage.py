"""How each op runs on each backend: native, explicit, decomposed, fallback or missing."""
from __future__ import annotations

from .operator import ALL_OPS
from .plugins import REGISTRY


def coverage_matrix(device_types) -> dict[str, dict[str, str]]:
    """{op name: {device type: how}} for the given (loadable) device types."""
    backends = {}
    for dt in device_types:
        rec = REGISTRY.load(dt)
        if rec.state == "available":
            backends[dt] = rec
    out: dict[str, dict[str, str]] = {}
    for name, op in ALL_OPS.items():
        row = {}
        for dt, rec in backends.items():
            row[dt] = how_op_runs(op, rec.key in op.kernels, bool(rec.backend.fallback_device))
        out[name] = row
    return out


def how_op_runs(op, native: bool, has_fallback: bool) -> str:
    """How `op` runs on a backend that has (`native`) or lacks its own kernel for it."""
    if native:
        return "native"
    if op.explicit is not None:
        return "explicit"
    if op.decomposition is not None:
        return "decomposed"
    return "fallback" if has_fallback else "missing"
