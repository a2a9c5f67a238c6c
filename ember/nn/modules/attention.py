"""MultiheadAttention (torch.nn.MultiheadAttention) and its functional form.

The computation follows torch.nn.functional.multi_head_attention_forward's math path:
packed in-projection, boolean masks turned into -inf additive masks, key_padding_mask
merged into attn_mask, softmax(q k^T / sqrt(d) + mask) v, out-projection; the weights are
returned averaged over heads unless `average_attn_weights=False`.
"""
from __future__ import annotations

import math

import ember
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention", "multi_head_attention_forward"]


def _float_mask(mask, name: str, dtype):
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
                   k_proj_weight, v_proj_weight):
    """(q, k, v): the inputs projected by the packed `in_proj_weight`'s three chunks (or the separate
    q/k/v weights when the key and value dims differ from the embedding's), with `in_proj_bias`'s."""
    if not use_separate_proj_weight:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)


def _checked_attn_mask(attn_mask, tgt_len: int, src_len: int, bsz: int, num_heads: int):
    """A float attn_mask as 3-D (1 or bsz * num_heads, L, S), its shape checked (torch's messages)."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(bsz * num_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _masks_for_one_more_key(attn_mask, key_padding_mask):
    """Both masks (where given) padded with one unmasked column, for a key appended to every
    sequence (bias_k/bias_v, or add_zero_attn's zero key)."""
    if attn_mask is not None:
        attn_mask = F.pad(attn_mask, (0, 1))
    if key_padding_mask is not None:
        key_padding_mask = F.pad(key_padding_mask, (0, 1))
    return attn_mask, key_padding_mask


def _merged_key_padding_mask(attn_mask, key_padding_mask, bsz: int, num_heads: int, src_len: int):
    """attn_mask plus the float (N, S) key_padding_mask repeated for every head, (bsz * num_heads, 1, S)."""
    if tuple(key_padding_mask.shape) != (bsz, src_len):
        raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                             f"{tuple(key_padding_mask.shape)}")
    key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
    key_padding_mask = key_padding_mask.reshape(bsz * num_heads, 1, src_len)
    return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """Sequence-first (L, N, E) multi-head attention (torch.nn.functional.multi_head_attention_forward)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not supported")
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        attn_mask = ember.ones(tgt_len, src_len, dtype=ember.bool, device=query.device).triu(1)
    key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", query.dtype)
    attn_mask = _float_mask(attn_mask, "attn_mask", query.dtype)

    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                             q_proj_weight, k_proj_weight, v_proj_weight)
    if attn_mask is not None:
        attn_mask = _checked_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads)
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _masks_for_one_more_key(attn_mask, key_padding_mask)

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = ember.cat([k, ember.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = ember.cat([v, ember.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        attn_mask, key_padding_mask = _masks_for_one_more_key(attn_mask, key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        attn_mask = _merged_key_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0

    scores = ember.bmm(q * (1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    attn = F.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        attn = F.dropout(attn, p=dropout_p)
    out = ember.bmm(attn, v)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    weights = None
    if need_weights:
        weights = attn.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            weights = weights.squeeze(0)
    if not is_batched:
        out = out.squeeze(1)
    return out, weights


class MultiheadAttention(Module):
    """Multi-head attention, torch's parameters and state_dict layout (in_proj_weight, out_proj, ...)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(ember.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(ember.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(ember.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """(attn_output, attn_weights or None); inputs (N, L, E) with batch_first, else (L, N, E)."""
        is_batched = query.dim() == 3
        if self.batch_first and is_batched:
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        common = dict(training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                      attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight, **common)
        else:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, **common)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights
