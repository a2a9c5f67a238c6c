"""torch.nn.functional.scaled_dot_product_attention."""
from __future__ import annotations

from ember._generated import functions as _F

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale=None, enable_gqa: bool = False):
    """softmax(query @ key.T * scale + mask) @ value (the math path), with dropout on the weights."""
    return _F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                           enable_gqa=enable_gqa)
