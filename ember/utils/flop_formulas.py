"""FLOP formulas, as data: registry op name -> function of the call's shapes.

`FlopCounterMode` (ember/utils/flop_counter.py) looks every op it sees up in `FLOP_FORMULAS`.
The formulas are torch.utils.flop_counter's (same conventions: a multiply-add is 2 FLOPs,
only the matrix products are counted, bias additions and softmax are not), keyed by
ember's registry names:

* `mm`, `addmm`, `bmm`: 2*m*k*n per matrix product (`addmm` counts its product only);
* `convolution`, `convolution_backward`: torch's conv_flop_count (per output point, for a
  transposed convolution per input point, filter size x in-channels-per-group x out-channels);
  the backward counts the input gradient and the weight gradient it computes (output_mask);
* `scaled_dot_product_attention`: the two products q@k^T and attn@v, for any leading batch
  dims (torch's formula for its fused kernels; causal masking is not taken off). Without a mask or
  dropout its backward is `_scaled_dot_product_attention_fused_backward`, counted as the five
  products it computes (the scores recomputed, then four gradient products: torch's formula for
  its fused kernels' backward); otherwise it is differentiated through the decomposition and
  counted as the `bmm`s that runs.

`ZERO_FLOP_OPS` lists the ops that do no arithmetic at all (views, copies, allocation, data
movement, gathers): they have the formula 0. Every other op without an entry is *unknown*:
the counter reports it (op and call count), never adds it as 0. Composite ops without a
formula (linear, matmul, einsum, conv2d, ...) are not looked up at all when the device runs
their decomposition: the counter follows them into it, as torch's FlopCounterMode
decomposes ops it has no formula for, so their products are counted as `mm`/`bmm`/....

A formula is called as `f(*args, out_shape=...)` with every tensor argument replaced by its
shape (a tuple; lists of tensors by lists of shapes) and `out_shape` the output's shape (a
tuple of shapes for several outputs, None for an absent one). `register_flop_formula`
adds one (torch's decorator, keyed by op names instead of OpOverloadPackets).
"""
from __future__ import annotations

from math import prod
from typing import Callable, Iterable

__all__ = ["FLOP_FORMULAS", "ZERO_FLOP_OPS", "register_flop_formula", "mm_flop", "bmm_flop", "conv_flop_count",
           "sdpa_flop_count"]

FLOP_FORMULAS: dict[str, Callable[..., int]] = {}


def register_flop_formula(targets: str | Iterable[str], get_raw: bool = False) -> Callable:
    """Decorator registering a formula for one op name or several (a duplicate is an error).

    With `get_raw=True` the formula receives the tensors themselves instead of their shapes
    (and `out_val=` the output), as torch's.
    """
    names = [targets] if isinstance(targets, str) else list(targets)

    def register(fn: Callable) -> Callable:
        fn._get_raw = get_raw
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"register_flop_formula(targets): expected op names (str), got {type(name).__name__}")
            if name in FLOP_FORMULAS:
                raise RuntimeError(f"register_flop_formula: duplicate registrations for {name!r}")
            FLOP_FORMULAS[name] = fn
        return fn
    return register


# --------------------------------------------------------------------------- matrix products
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """(m, k) @ (k, n): 2*m*k*n."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise ValueError(f"mm flop formula: inner dimensions differ, {k} and {k2}")
    return m * n * 2 * k


def bmm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """(b, m, k) @ (b, k, n): 2*b*m*k*n."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2 or k != k2:
        raise ValueError(f"bmm flop formula: shapes {tuple(a_shape)} and {tuple(b_shape)} do not chain")
    return b * m * n * 2 * k


register_flop_formula("mm")(mm_flop)
register_flop_formula("bmm")(bmm_flop)


@register_flop_formula("addmm")
def addmm_flop(self_shape, a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """beta*self + alpha*(a @ b): the product only."""
    return mm_flop(a_shape, b_shape)


# --------------------------------------------------------------------------- convolution
def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """torch's count: batch x spatial points (output's, or input's when transposed) x filter x c_out x c_in."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@register_flop_formula("convolution")
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args, out_shape=None,
              **kwargs) -> int:
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@register_flop_formula("convolution_backward")
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                       _output_padding, _groups, output_mask, out_shape=None, **kwargs) -> int:
    """grad_input as the transposed convolution of grad_out; grad_weight as a convolution of the input."""
    def t(shape):
        return [shape[1], shape[0]] + list(shape[2:])

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            flops += conv_flop_count(t(grad_out_shape), t(x_shape), t(out_shape[1]), transposed=False)
        else:
            flops += conv_flop_count(t(x_shape), t(grad_out_shape), t(out_shape[1]), transposed=False)
    return flops


# --------------------------------------------------------------------------- attention
def sdpa_flop_count(query_shape, key_shape, value_shape, out_shape) -> int:
    """q@k^T and attn@v over every (batch, head) pair of the output; grouped kv heads are broadcast."""
    batch_heads = prod(out_shape[:-2])
    s_q, d_q = query_shape[-2], query_shape[-1]
    s_k, d_v = key_shape[-2], value_shape[-1]
    return bmm_flop((batch_heads, s_q, d_q), (batch_heads, d_q, s_k)) + \
        bmm_flop((batch_heads, s_q, s_k), (batch_heads, s_k, d_v))


@register_flop_formula("scaled_dot_product_attention")
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape, out_shape)


@register_flop_formula("_scaled_dot_product_attention_fused")
def sdpa_fused_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape, out_shape[0])


@register_flop_formula("_scaled_dot_product_attention_fused_backward")
def sdpa_fused_backward_flop(grad_out_shape, grad_lse_shape, query_shape, key_shape, value_shape, lse_shape,
                             is_causal, scale, output_mask, out_shape=None) -> int:
    """The products the fused backward computes: the scores recomputed (S = Q K^T), then dV = A^T G,
    dP = G V^T, dQ = dS K, dK = dS^T Q, each as output_mask and the given gradients need (with every
    gradient asked for and the output's given, torch's sdpa_backward_flop_count)."""
    bh = prod(query_shape[:-2])
    s_q, d_q = query_shape[-2], query_shape[-1]
    s_k, d_v = key_shape[-2], value_shape[-1]
    flops = bmm_flop((bh, s_q, d_q), (bh, d_q, s_k))
    if output_mask[2] and grad_out_shape is not None:
        flops += bmm_flop((bh, s_k, s_q), (bh, s_q, d_v))
    if output_mask[0] or output_mask[1]:
        if grad_out_shape is not None:
            flops += bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
        if output_mask[0]:
            flops += bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
        if output_mask[1]:
            flops += bmm_flop((bh, s_k, s_q), (bh, s_q, d_q))
    return flops


# --------------------------------------------------------------------------- no arithmetic
ZERO_FLOP_OPS: frozenset[str] = frozenset({
    # views
    "alias", "as_strided", "diagonal", "expand", "permute", "select.int", "slice.Tensor", "squeeze.dims",
    "transpose.int", "unsqueeze", "view", "t",
    # copies, casts, fills and allocation
    "_to_copy", "clone", "copy", "copy_", "fill.Scalar", "fill_.Scalar", "contiguous",
    "empty.memory_format", "empty_like", "empty_strided", "eye", "eye.m", "full", "full_like", "ones", "ones_like",
    "scalar_tensor", "zeros", "zeros_like", "arange", "arange.start_step",
    # data movement and gathers
    "reshape", "cat", "stack", "split.Tensor", "split_with_sizes", "chunk", "unbind.int", "narrow", "flip", "roll",
    "repeat", "tile", "index.Tensor", "index_select", "gather", "take_along_dim", "masked_select", "nonzero",
    "nonzero_numpy", "argwhere", "tril", "triu", "tril_", "triu_", "select_scatter", "slice_scatter",
    "as_strided_scatter", "masked_fill.Scalar", "masked_fill.Tensor", "masked_fill_.Scalar", "masked_fill_.Tensor",
    "constant_pad_nd", "embedding",
})
