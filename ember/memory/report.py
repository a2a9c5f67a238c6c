"""Presentation of a MemoryTracker's record: a text table, JSON, and a timeline plot."""
from __future__ import annotations

import json
from typing import Any


def _fmt(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def report(tracker, top: int | None = 25) -> str:
    """A table: the peak, the breakdown by category (at the peak and each category's maximum, also in
    exact bytes), and the `top` modules holding the most bytes at the peak (None: all of them)."""
    b = tracker.breakdown
    lines = [f"peak: {_fmt(tracker.peak_bytes)} ({tracker.peak_bytes} bytes)   "
             f"current: {_fmt(tracker.current_bytes)}   events: {len(tracker.events)}",
             "",
             f"{'category':<18}{'at peak':>14}{'max':>14}{'max (bytes)':>22}"]
    for cat, d in b.items():
        lines.append(f"{cat:<18}{_fmt(d['at_peak']):>14}{_fmt(d['max']):>14}{d['max']:>22,}")
    lines += ["", f"{'module':<40}{'forward':>14}{'backward':>14}{'at peak':>14}"]
    mods = sorted(tracker.by_module.items(), key=lambda kv: -kv[1]["at_peak"])
    for name, d in mods[:top]:
        lines.append(f"{name:<40}{_fmt(d['forward']):>14}{_fmt(d['backward']):>14}{_fmt(d['at_peak']):>14}")
    if top is not None and len(mods) > top:
        lines.append(f"... {len(mods) - top} more modules (to_json() has them all)")
    return "\n".join(lines)


def as_dict(tracker) -> dict[str, Any]:
    return {"peak_bytes": tracker.peak_bytes, "current_bytes": tracker.current_bytes,
            "breakdown": tracker.breakdown, "by_module": tracker.by_module, "timeline": tracker.timeline}


def to_json(tracker, path: str | None = None) -> str:
    """The record as JSON text (peak, breakdown, by_module, timeline); also written to `path` if given."""
    text = json.dumps(as_dict(tracker), indent=1)
    if path is not None:
        with open(path, "w") as f:
            f.write(text)
    return text


def plot(tracker, path: str) -> None:
    """A PNG of live bytes over the event index, stacked by category (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("ember.memory: plot() needs matplotlib, which is not installed; "
                          "install it (pip install matplotlib) or use to_json()/report()") from e
    from .tracker import CATEGORIES

    cur = dict.fromkeys(CATEGORIES, 0)
    series = {c: [] for c in CATEGORIES}
    for sign, r in tracker.events:
        cur[r.category] += sign * r.nbytes
        for c in CATEGORIES:
            series[c].append(cur[c] / (1 << 20))
    fig, ax = plt.subplots(figsize=(10, 4))
    xs = list(range(len(tracker.events)))
    ax.stackplot(xs, *[series[c] for c in CATEGORIES], labels=CATEGORIES)
    ax.set_xlabel("event")
    ax.set_ylabel("MiB live")
    ax.set_title(f"peak {_fmt(tracker.peak_bytes)}")
    ax.legend(loc="upper left", fontsize="small")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
