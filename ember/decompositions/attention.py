"""Decompositions of linear, cosine_similarity and scaled_dot_product_attention (the math path)."""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.type_promotion import result_type

from . import as_opmath, decomposition, explicit_kernel


@explicit_kernel("linear")
def linear(input, weight, bias=None):
    if weight.dim() == 2:
        if input.dim() == 2 and bias is not None:
            return F.addmm(bias, input, F.t(weight))
        out = F.matmul(input, F.t(weight))
    else:
        out = F.matmul(input, weight)
    return out if bias is None else F.add(out, bias)


@decomposition("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    # as torch's: an integer operand goes to the common dtype, each is normalised in its own dtype, and the
    # product of the two broadcast operands promotes (float16 with a float32 0-d: float32)
    common = result_type(x1, x2)
    a = x1 if x1.dtype.is_floating_point else F._to_copy(x1, dtype=common)
    b = x2 if x2.dtype.is_floating_point else F._to_copy(x2, dtype=common)
    a, b = _broadcast(a, b)
    return F.sum(F.mul(F.div(a, _norm(a, dim, eps)), F.div(b, _norm(b, dim, eps))), dim)


def _norm(x, dim, eps):
    """The 2-norm over `dim` (kept), at least `eps`: computed in float32 for float16/bfloat16 and rounded once, as
    torch's vector_norm."""
    wide = as_opmath(x)
    norm = F.sqrt(F.sum(F.mul(wide, wide), dim, True))
    return F.clamp(norm if wide is x else F._to_copy(norm, dtype=x.dtype), min=eps)


def _broadcast(a, b):
    n = max(a.dim(), b.dim())
    sa = (1,) * (n - a.dim()) + tuple(a.shape)
    sb = (1,) * (n - b.dim()) + tuple(b.shape)
    shape = tuple(x if y == 1 else y for x, y in zip(sa, sb))
    return F.expand(a, shape), F.expand(b, shape)


def _broadcast_shape(*shapes):
    n = max(len(sh) for sh in shapes)
    out = [1] * n
    for sh in shapes:
        for i, d in enumerate((1,) * (n - len(sh)) + tuple(sh)):
            out[i] = d if out[i] == 1 else out[i]
    return tuple(out)


def _repeat_heads(t, groups: int):
    """repeat_interleave of the head dim (-3) `groups` times, by expand + reshape."""
    shape = tuple(t.shape)
    expanded = F.expand(F.unsqueeze(t, -3), shape[:-2] + (groups,) + shape[-2:])
    return F.reshape(expanded, shape[:-3] + (shape[-3] * groups,) + shape[-2:])


@decomposition("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        key = _repeat_heads(key, query.shape[-3] // key.shape[-3])
        value = _repeat_heads(value, query.shape[-3] // value.shape[-3])
    if 0 in (L, S, E) or value.shape[-1] == 0 or 0 in tuple(query.shape[:-2]):
        batch = _broadcast_shape(tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2]))
        return F.zeros(batch + (L, value.shape[-1]), dtype=query.dtype, device=query.device)   # nothing to attend
    if (attn_mask is None and dropout_p == 0 and query.dim() >= 2 and query.dtype is key.dtype is value.dtype
            and tuple(query.shape[:-2]) == tuple(key.shape[:-2]) == tuple(value.shape[:-2])):
        # the common call (a decoder's causal self-attention): one node, one backward op
        return F._scaled_dot_product_attention_fused(query, key, value, is_causal,
                                                     1.0 / math.sqrt(E) if scale is None else scale)[0]
    factor = math.sqrt(1.0 / math.sqrt(E) if scale is None else scale) if E else 1.0
    scores = F.matmul(F.mul(query, factor), F.transpose(F.mul(key, factor), -2, -1))
    masked = None
    if is_causal:
        scores = _causal(scores, L, S)
        masked = True
    if attn_mask is not None:
        if attn_mask.dtype is _dt.bool:
            scores = F.where(attn_mask, scores, float("-inf"))
            masked = True
        else:
            scores = F.add(scores, attn_mask)
    weights = F.softmax(scores, -1)
    if masked is not None and scores.numel():
        # a row with every key masked attends to nothing (zeros), as PyTorch's _safe_softmax
        weights = F.where(F.eq(F.amax(scores, -1, True), float("-inf")), 0.0, weights)
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p, True)
    return F.matmul(weights, value)


def _causal(scores, L: int, S: int):
    """`scores` with every key after its query's position masked to -inf (rows attend to cols <= row)."""
    rows = F.reshape(F.arange(L, device=scores.device), (L, 1))
    cols = F.reshape(F.arange(S, device=scores.device), (1, S))
    return F.where(F.ge(rows, cols), scores, float("-inf"))


def _scores(query, key, is_causal: bool, scale: float):
    scores = F.mul(F.matmul(query, F.transpose(key, -2, -1)), scale)
    return _causal(scores, query.shape[-2], key.shape[-2]) if is_causal else scores


def _as(t, dtype):
    return t if t.dtype is dtype else F._to_copy(t, dtype=dtype)


@explicit_kernel("_scaled_dot_product_attention_fused")
def scaled_dot_product_attention_fused(query, key, value, is_causal=False, scale=1.0):
    scores = _scores(query, key, is_causal, scale)
    attn = F.softmax(scores, -1)
    wide = as_opmath(query)
    if wide is not query:                   # float16/bfloat16: the logsumexp of float32 scores, as the kernels keep it
        scores = _scores(wide, as_opmath(key), is_causal, scale)
    return F.matmul(attn, value), F.logsumexp(scores, -1)


@decomposition("_scaled_dot_product_attention_fused_backward")
def scaled_dot_product_attention_fused_backward(grad_out, grad_logsumexp, query, key, value, logsumexp, is_causal,
                                                scale, output_mask):
    """With A the weights, recomputed as the softmax of the scores (differentiable in query and key, for a
    double backward), G the output's gradient and GL the logsumexp's (either may be None): dV = A^T G;
    dP = G V^T; dS = A * (dP - rowsum(dP * A) + GL); dQ = dS K * scale; dK = dS^T Q * scale."""
    attn = F.softmax(_scores(query, key, is_causal, scale), -1)
    dv = None
    if output_mask[2]:
        dv = F.matmul(F.transpose(attn, -2, -1), grad_out) if grad_out is not None else F.zeros_like(value)
    dq = dk = None
    if output_mask[0] or output_mask[1]:
        if grad_out is not None:
            dp = F.matmul(grad_out, F.transpose(value, -2, -1))
            centred = F.sub(dp, F.sum(F.mul(dp, attn), -1, keepdim=True))
            if grad_logsumexp is not None:
                centred = F.add(centred, F.unsqueeze(_as(grad_logsumexp, attn.dtype), -1))
        else:
            centred = F.unsqueeze(_as(grad_logsumexp, attn.dtype), -1)
        ds = F.mul(attn, centred)
        if output_mask[0]:
            dq = F.mul(F.matmul(ds, key), scale)
        if output_mask[1]:
            dk = F.mul(F.matmul(F.transpose(ds, -2, -1), query), scale)
    return dq, dk, dv
