"""The fused attention (scaled_dot_product_attention without mask or dropout) and its backward,
against the array-module API: a few array calls each instead of the decomposition's dispatches.

The forward keeps one logsumexp per query, not the weights (batch x heads x L x S, the largest
activation of a transformer block at long context): the backward recomputes the weights from q, k
and that logsumexp, as a flash attention's does. float16/bfloat16 compute in float32 and round the
output once (the decomposition rounds each of its ops' results, so the two differ there within
float16's precision); their logsumexp stays float32.
"""
from __future__ import annotations

from .context import ArrayModule


def _scores(am: ArrayModule, q, k, is_causal, scale):
    """q k^T scale, with -inf at the keys after each query's position when causal (acc dtype)."""
    xp = am.xp
    s = xp.matmul(q, xp.swapaxes(k, -1, -2))
    s *= s.dtype.type(scale)
    if is_causal:
        L, S = s.shape[-2:]
        s += xp.where(xp.tri(L, S, dtype=bool), s.dtype.type(0), s.dtype.type(-xp.inf))   # keys after the query
    return s


def sdpa_fused(am: ArrayModule, specs, q, k, v, is_causal=False, scale=1.0):
    """softmax(q k^T scale [+ causal -inf]) v, and the logsumexp of each row of the scores."""
    xp = am.xp
    dt = am.native_of[specs[0][1]]
    acc = am.compute_of[dt]
    q, k, v = (t.astype(acc, copy=False) for t in (q, k, v))
    s = _scores(am, q, k, is_causal, scale)
    top = s.max(axis=-1, keepdims=True)
    s -= top
    xp.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    s /= total
    out = xp.matmul(s, v)
    lse = xp.log(total, out=total)
    lse += top
    return xp.ascontiguousarray(out, dtype=dt), lse.reshape(lse.shape[:-1])


def sdpa_fused_backward(am: ArrayModule, specs, g, gl, q, k, v, lse, is_causal, scale, output_mask):
    """A = exp(q k^T scale - lse); dV = A^T G; dP = G V^T; dS = A dP - A (rowsum(A dP) - GL), computed in
    dP's buffer and A's; dQ = dS K scale; dK = dS^T Q scale."""
    xp = am.xp
    native_of = am.native_of
    acc = am.compute_of[q.dtype]
    q, k = q.astype(acc, copy=False), k.astype(acc, copy=False)
    a = _scores(am, q, k, is_causal, scale)
    a -= lse.astype(acc, copy=False)[..., None]
    xp.exp(a, out=a)
    g = None if g is None else g.astype(acc, copy=False)
    out = [None, None, None]
    if specs[2] is not None:
        dv = xp.matmul(xp.swapaxes(a, -1, -2), g) if g is not None else xp.zeros(v.shape, acc)
        out[2] = xp.ascontiguousarray(dv, dtype=native_of[specs[2][1]])
    if specs[0] is not None or specs[1] is not None:
        if g is not None:
            ds = xp.matmul(g, xp.swapaxes(v.astype(acc, copy=False), -1, -2))
            ds *= a                                          # A dP
            centre = ds.sum(axis=-1, keepdims=True)          # rowsum(A dP)
        else:
            ds, centre = None, xp.zeros(a.shape[:-1] + (1,), acc)
        if gl is not None:
            centre -= gl.astype(acc, copy=False)[..., None]
        a *= centre
        ds = xp.negative(a, out=a) if ds is None else xp.subtract(ds, a, out=ds)
        if specs[0] is not None:
            dq = xp.matmul(ds, k)
            dq *= acc.type(scale)
            out[0] = xp.ascontiguousarray(dq, dtype=native_of[specs[0][1]])
        if specs[1] is not None:
            dk = xp.matmul(xp.swapaxes(ds, -1, -2), q)
            dk *= acc.type(scale)
            out[1] = xp.ascontiguousarray(dk, dtype=native_of[specs[1][1]])
    return tuple(out)


KERNELS = {"_scaled_dot_product_attention_fused": sdpa_fused,
           "_scaled_dot_product_attention_fused_backward": sdpa_fused_backward}
