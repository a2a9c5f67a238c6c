"""Batch, layer and group normalization on ember ops, with their backward helpers.

Statistics are computed in float32 for float16/bfloat16 inputs (PyTorch's opmath) and the
variance is the biased one; batch norm in training mode updates `running_mean` and
`running_var` in place (momentum, unbiased variance), as PyTorch does. The backward
helpers are the usual closed forms: with x_hat = (x - mean) * rstd and g = grad * weight,
dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) over the normalized elements.
"""
from __future__ import annotations

import math

from ember._generated import functions as F

from ember.shape_rules.nn_norm_pad import bn_stat_dtype

from . import as_opmath, decomposition, explicit_kernel



def _cast(x, dtype):
    return x if x.dtype is dtype else F._to_copy(x, dtype=dtype)


def _channel_view(t, ndim):
    """A per-channel (C,) tensor as (1, C, 1, ...) for an input of `ndim` dims."""
    return F.reshape(t, (1, -1) + (1,) * (ndim - 2))


# ------------------------------------------------------------------------------ layer norm
@explicit_kernel("native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    x = as_opmath(input)
    axis = input.dim() - len(normalized_shape)
    dims = list(range(axis, input.dim()))
    if input.numel() == 0:
        stat_shape = tuple(input.shape[:axis]) + (1,) * len(dims)
        empty = F.zeros(stat_shape, dtype=input.dtype, device=input.device)
        return F.clone(input), empty, F.clone(empty)
    mean = F.mean(x, dims, True)
    centered = F.sub(x, mean)
    var = F.mean(F.mul(centered, centered), dims, True)
    rstd = F.rsqrt(F.add(var, eps))
    out = F.mul(centered, rstd)
    if weight is not None:
        out = F.mul(out, weight)
    if bias is not None:
        out = F.add(out, bias)
    return _cast(out, input.dtype), _cast(mean, input.dtype), _cast(rstd, input.dtype)


def _differentiable_stats(x, dims, mean, rstd, eps, keepdim=True):
    """The saved (mean, rstd) as they are, or, when the backward pass is itself recorded
    (create_graph) and `x` requires grad, recomputed from `x` so that second derivatives flow
    through them (the saved ones are non-differentiable outputs)."""
    from ember.frontend.autograd.grad_mode import is_grad_enabled

    if not (is_grad_enabled() and x.requires_grad):
        return mean, rstd
    mean = F.mean(x, dims, keepdim)
    centered = F.sub(x, mean if keepdim else F.reshape(mean, (1, -1) + (1,) * (x.dim() - 2)))
    var = F.mean(F.mul(centered, centered), dims, keepdim)
    return mean, F.rsqrt(F.add(var, eps))


def _norm_input_grad(g, xhat, rstd, dims):
    """rstd * (g - mean(g) - xhat * mean(g * xhat)) over `dims`."""
    return F.mul(rstd, F.sub(F.sub(g, F.mean(g, dims, True)), F.mul(xhat, F.mean(F.mul(g, xhat), dims, True))))


@decomposition("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


# ------------------------------------------------------------------------------ batch norm
def _bn_dims(input):
    return [0] + list(range(2, input.dim()))


@explicit_kernel("native_batch_norm")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    x = as_opmath(input)
    dims = _bn_dims(input)
    nd = input.dim()
    if training:
        mean = F.mean(x, dims)
        centered = F.sub(x, _channel_view(mean, nd))
        var = F.mean(F.mul(centered, centered), dims)
        invstd = F.rsqrt(F.add(var, eps))
        if running_mean is not None or running_var is not None:
            n = input.numel() // max(input.shape[1], 1)
            with_grad_off = F.mul(mean, momentum)
            if running_mean is not None:
                F.copy_(running_mean, F.add(F.mul(running_mean, 1 - momentum), with_grad_off))
            if running_var is not None:
                unbiased = F.mul(var, n / (n - 1)) if n > 1 else F.mul(var, float("inf"))
                F.copy_(running_var, F.add(F.mul(running_var, 1 - momentum), F.mul(unbiased, momentum)))
        save_mean, save_invstd = mean, invstd
    else:
        mean = as_opmath(running_mean)
        invstd = F.rsqrt(F.add(as_opmath(running_var), eps))
        centered = F.sub(x, _channel_view(mean, nd))
        save_mean = F.zeros((0,), dtype=input.dtype, device=input.device)
        save_invstd = F.zeros((0,), dtype=input.dtype, device=input.device)
    stat_dtype = bn_stat_dtype(input, weight, bias, running_mean, running_var)
    out = F.mul(centered, _channel_view(invstd, nd))
    if weight is not None:
        out = F.mul(out, _channel_view(weight, nd))
    if bias is not None:
        out = F.add(out, _channel_view(bias, nd))
    return _cast(out, input.dtype), _cast(save_mean, stat_dtype), _cast(save_invstd, stat_dtype)


def _bn_stats(input, running_mean, running_var, training, eps, save_mean, save_invstd):
    nd = input.dim()
    if training:
        mean, invstd = _differentiable_stats(as_opmath(input), _bn_dims(input), as_opmath(save_mean),
                                             as_opmath(save_invstd), eps, keepdim=False)
        return _channel_view(mean, nd), _channel_view(invstd, nd)
    return (_channel_view(as_opmath(running_mean), nd),
            _channel_view(F.rsqrt(F.add(as_opmath(running_var), eps)), nd))


@decomposition("batch_norm")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    if input.numel() == 0:
        # torch's empty batch: no statistics to normalise by or to update the running ones with; a copy of
        # the input (not a view, not a fresh empty tensor) scaled and shifted by the first channel's
        # parameters, so that the graph still reaches them
        out = F.clone(input)
        if weight is not None:
            out = F.mul(out, F.select(weight, 0, 0))
        if bias is not None:
            out = F.add(out, F.select(bias, 0, 0))
        return out
    return F.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


@decomposition("_native_batch_norm_legit")
def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """native_batch_norm with running statistics (updated in place when training)."""
    return tuple(F.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps))


@decomposition("_native_batch_norm_legit.no_stats")
def _native_batch_norm_legit_no_stats(input, weight, bias, training, momentum, eps):
    """native_batch_norm without running statistics (batch statistics only)."""
    return tuple(F.native_batch_norm(input, weight, bias, None, None, training, momentum, eps))


@decomposition("_native_batch_norm_legit_no_training")
def _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    """native_batch_norm in evaluation mode (normalized by the running statistics)."""
    return tuple(F.native_batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps))


# ------------------------------------------------------------------------------ group norm
@explicit_kernel("native_group_norm")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    x = F.reshape(as_opmath(input), (N, group, -1))
    if input.numel() == 0:
        empty = F.zeros((N, group), dtype=input.dtype, device=input.device)
        return F.clone(input), empty, F.clone(empty)
    mean = F.mean(x, [-1], True)
    centered = F.sub(x, mean)
    rstd = F.rsqrt(F.add(F.mean(F.mul(centered, centered), [-1], True), eps))
    out = F.reshape(F.mul(centered, rstd), tuple(input.shape))
    if weight is not None:
        out = F.mul(out, _channel_view(weight, input.dim()))
    if bias is not None:
        out = F.add(out, _channel_view(bias, input.dim()))
    return (_cast(out, input.dtype), _cast(F.reshape(mean, (N, group)), input.dtype),
            _cast(F.reshape(rstd, (N, group)), input.dtype))


@decomposition("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    N, C = input.shape[0], input.shape[1]
    HxW = math.prod(input.shape[2:])
    return F.native_group_norm(input, weight, bias, N, C, HxW, num_groups, eps)[0]
