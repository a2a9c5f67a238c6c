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
            if rec.key in op.kernels:
                row[dt] = "native"
            elif op.explicit is not None:
                row[dt] = "explicit"
            elif op.decomposition is not None:
                row[dt] = "decomposed"
            elif rec.backend.fallback_device:
                row[dt] = "fallback"
            else:
                row[dt] = "missing"
        out[name] = row
    return out
