"""Matrix products against the array-module API (float16/bfloat16 accumulate in float32)."""
from __future__ import annotations

from typing import Callable

from ember.frontend import dtype as _dt


def make(xp, native: Callable) -> dict[str, Callable]:
    f32 = xp.dtype("float32")
    lowp = {native(_dt.float16), native(_dt.bfloat16)}

    def matmul(spec, a, b):
        dt = native(spec[1])
        if dt in lowp:
            return xp.matmul(a.astype(f32), b.astype(f32)).astype(dt)
        r = xp.matmul(a, b)
        return r if r.dtype == dt else r.astype(dt)

    return {"mm": matmul, "bmm": matmul}
