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

    def linear(spec, x, w, b=None):
        """x @ w.T (+ b): the product rounded to the result dtype, then the bias added, as mm + add."""
        dt = native(spec[1])
        wt = w.T if w.ndim == 2 else w
        if dt in lowp:
            r = xp.matmul(x.astype(f32), wt.astype(f32)).astype(dt)
            return r if b is None else (r.astype(f32) + b.astype(f32)).astype(dt)
        if x.ndim > 2 and wt.ndim == 2 and x.flags.c_contiguous:
            # the leading dims folded into one GEMM's rows (matmul would loop over them)
            r = xp.matmul(x.reshape(-1, x.shape[-1]), wt).reshape(x.shape[:-1] + (wt.shape[-1],))
        else:
            r = xp.matmul(x, wt)
        if b is not None:
            if r.dtype == xp.result_type(r, b):
                r += b                                     # the product is fresh (or a view of it): in place
            else:
                r = r + b
        return r if r.dtype == dt else r.astype(dt)

    return {"mm": matmul, "bmm": matmul, "linear": linear}
