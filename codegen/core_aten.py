"""PyTorch's core ATen operator set (codegen/core_aten.yaml) checked against the registry.

The issue-3 contract: every core ATen base op that applies to Ember is covered by a registry
op, or listed as excluded with the reason. `coverage(registry)` decides each op's status from
the registry itself, so docs/ops.md cannot claim an op that is not registered.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

CORE_ATEN = Path(__file__).with_name("core_aten.yaml")


@dataclasses.dataclass(frozen=True)
class CoreOp:
    name: str                  # ATen base name
    ember: tuple[str, ...]     # registry base names that cover it
    excluded: str | None       # reason, when not applicable
    status: str                # "covered" | "frontend" | "excluded" | "missing"
    frontend: str | None = None   # how the Tensor frontend covers it, when not a registry op


def load() -> dict[str, dict]:
    return yaml.safe_load(CORE_ATEN.read_text())["ops"]


def coverage(registry) -> list[CoreOp]:
    bases = {op.schema.name for op in registry.ops}
    rows = []
    for name, entry in load().items():
        entry = entry or {}
        names = tuple(entry.get("ember", [name]))
        if entry.get("excluded"):
            status = "excluded"
        elif entry.get("frontend"):
            status = "frontend"
        elif any(n in bases for n in names):
            status = "covered"
        else:
            status = "missing"
        rows.append(CoreOp(name, names, entry.get("excluded"), status, entry.get("frontend")))
    return rows


def summary(rows: list[CoreOp]) -> tuple[int, int, int]:
    """(covered, applicable, excluded)."""
    covered = sum(r.status in ("covered", "frontend") for r in rows)
    excluded = sum(r.status == "excluded" for r in rows)
    return covered, len(rows) - excluded, excluded
