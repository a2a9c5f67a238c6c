"""The fused attention (scaled_dot_product_attention without mask or dropout) and its backward,
against the array-module API: a few array calls each instead of the decomposition's dispatches.
float16/bfloat16 compute in float32 and round the outputs once (the decomposition rounds each of its
ops' results, so the two differ there within float16's precision).
"""
from __future__ import annotations

from .context import ArrayModule


def sdpa_fused(am: ArrayModule, specs, q, k, v, is_causal=False, scale=1.0):
    """softmax(q k^T scale [+ causal -inf]) v, and the softmax (the node saves it)."""
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    acc = am.compute_of[dt]
    q, k, v = (t.astype(acc, copy=False) for t in (q, k, v))
    s = xp.matmul(q, xp.swapaxes(k, -1, -2))
    s *= acc.type(scale)
    if is_causal:
        L, S = s.shape[-2:]
        s += xp.where(xp.tri(L, S, dtype=bool), acc.type(0), acc.type(-xp.inf))   # keys after the query: -inf
    s -= s.max(axis=-1, keepdims=True)
    xp.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    out = xp.matmul(s, v)
    return xp.ascontiguousarray(out, dtype=dt), xp.ascontiguousarray(s, dtype=dt)


def sdpa_fused_backward(am: ArrayModule, specs, g, ga, q, k, v, attn, scale, output_mask):
    """dV = A^T G; dP = G V^T + GA; dS = A (dP - rowsum(dP A)); dQ = dS K scale; dK = dS^T Q scale."""
    xp = am.xp
    native_of = am.native_of
    acc = am.compute_of[q.dtype]
    a = attn.astype(acc, copy=False)
    g = None if g is None else g.astype(acc, copy=False)
    out = [None, None, None]
    if specs[2] is not None:
        dv = xp.matmul(xp.swapaxes(a, -1, -2), g) if g is not None else xp.zeros(v.shape, acc)
        out[2] = xp.ascontiguousarray(dv, dtype=native_of[specs[2][1]])
    if specs[0] is not None or specs[1] is not None:
        if g is not None:
            dp = xp.matmul(g, xp.swapaxes(v.astype(acc, copy=False), -1, -2))
            if ga is not None:
                dp += ga.astype(acc, copy=False)
        else:
            dp = ga.astype(acc)                  # a copy: updated in place below
        dp -= (dp * a).sum(axis=-1, keepdims=True)
        dp *= a                                  # dS
        if specs[0] is not None:
            dq = xp.matmul(dp, k.astype(acc, copy=False))
            dq *= acc.type(scale)
            out[0] = xp.ascontiguousarray(dq, dtype=native_of[specs[0][1]])
        if specs[1] is not None:
            dk = xp.matmul(xp.swapaxes(dp, -1, -2), q.astype(acc, copy=False))
            dk *= acc.type(scale)
            out[1] = xp.ascontiguousarray(dk, dtype=native_of[specs[1][1]])
    return tuple(out)


KERNELS = {"_scaled_dot_product_attention_fused": sdpa_fused,
           "_scaled_dot_product_attention_fused_backward": sdpa_fused_backward}
