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
from ember.frontend import dtype as _dt

from ember.shape_rules.nn_norm_pad import bn_stat_dtype

from . import decomposition, explicit_kernel

_LOWP = (_dt.float16, _dt.bfloat16)


def _opmath(x):
    return F._to_copy(x, dtype=_dt.float32) if x.dtype in _LOWP else x


def _cast(x, dtype):
    return x if x.dtype is dtype else F._to_copy(x, dtype=dtype)


def _channel_view(t, ndim):
    """A per-channel (C,) tensor as (1, C, 1, ...) for an input of `ndim` dims."""
    return F.reshape(t, (1, -1) + (1,) * (ndim - 2))


# ------------------------------------------------------------------------------ layer norm
@explicit_kernel("native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    x = _opmath(input)
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


def layer_norm_backward_input(grad, input, normalized_shape, weight, mean, rstd, eps):
    if grad is None:
        return None
    axis = input.dim() - len(normalized_shape)
    dims = list(range(axis, input.dim()))
    g, x = _opmath(grad), _opmath(input)
    mean, rstd = _differentiable_stats(x, dims, _opmath(mean), _opmath(rstd), eps)
    xhat = F.mul(F.sub(x, mean), rstd)
    if weight is not None:
        g = F.mul(g, weight)
    return _cast(_norm_input_grad(g, xhat, rstd, dims), input.dtype)


def layer_norm_backward_weight(grad, input, normalized_shape, mean, rstd, eps):
    if grad is None:
        return None
    axis = input.dim() - len(normalized_shape)
    x = _opmath(input)
    mean, rstd = _differentiable_stats(x, list(range(axis, input.dim())), _opmath(mean), _opmath(rstd), eps)
    xhat = F.mul(F.sub(x, mean), rstd)
    prod = F.mul(_opmath(grad), xhat)
    return F.sum(prod, list(range(axis))) if axis else prod


def layer_norm_backward_bias(grad, input, normalized_shape):
    if grad is None:
        return None
    axis = input.dim() - len(normalized_shape)
    return F.sum(_opmath(grad), list(range(axis))) if axis else _opmath(grad)


@decomposition("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


# ------------------------------------------------------------------------------ batch norm
def _bn_dims(input):
    return [0] + list(range(2, input.dim()))


@explicit_kernel("native_batch_norm")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    x = _opmath(input)
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
        mean = _opmath(running_mean)
        invstd = F.rsqrt(F.add(_opmath(running_var), eps))
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
        mean, invstd = _differentiable_stats(_opmath(input), _bn_dims(input), _opmath(save_mean),
                                             _opmath(save_invstd), eps, keepdim=False)
        return _channel_view(mean, nd), _channel_view(invstd, nd)
    return (_channel_view(_opmath(running_mean), nd),
            _channel_view(F.rsqrt(F.add(_opmath(running_var), eps)), nd))


def batch_norm_backward_input(grad, input, weight, running_mean, running_var, training, eps, save_mean,
                              save_invstd):
    if grad is None:
        return None
    mean, invstd = _bn_stats(input, running_mean, running_var, training, eps, save_mean, save_invstd)
    g = _opmath(grad)
    if weight is not None:
        g = F.mul(g, _channel_view(_opmath(weight), input.dim()))
    if not training:
        return _cast(F.mul(g, invstd), input.dtype)
    xhat = F.mul(F.sub(_opmath(input), mean), invstd)
    return _cast(_norm_input_grad(g, xhat, invstd, _bn_dims(input)), input.dtype)


def batch_norm_backward_weight(grad, input, running_mean, running_var, training, eps, save_mean, save_invstd):
    if grad is None:
        return None
    mean, invstd = _bn_stats(input, running_mean, running_var, training, eps, save_mean, save_invstd)
    xhat = F.mul(F.sub(_opmath(input), mean), invstd)
    return F.sum(F.mul(_opmath(grad), xhat), _bn_dims(input))


def batch_norm_backward_bias(grad):
    if grad is None:
        return None
    return F.sum(_opmath(grad), _bn_dims(grad))


@decomposition("batch_norm")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


# ------------------------------------------------------------------------------ group norm
@explicit_kernel("native_group_norm")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    x = F.reshape(_opmath(input), (N, group, -1))
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


def group_norm_backward_input(grads, input, weight, mean, rstd, group):
    """Through the output and, as in PyTorch, through the returned mean and rstd too."""
    grad, g_mean, g_rstd = (list(grads) + [None, None])[:3]
    N = input.shape[0]
    mean3, rstd3 = F.reshape(_opmath(mean), (N, group, 1)), F.reshape(_opmath(rstd), (N, group, 1))
    centered = F.sub(F.reshape(_opmath(input), (N, group, -1)), mean3)
    dx = None
    if grad is not None:
        g = _opmath(grad)
        if weight is not None:
            g = F.mul(g, _channel_view(_opmath(weight), input.dim()))
        g = F.reshape(g, (N, group, -1))
        dx = _norm_input_grad(g, F.mul(centered, rstd3), rstd3, [-1])
    M = centered.shape[-1]
    if g_mean is not None:                      # d mean / dx = 1 / M
        part = F.div(F.reshape(_opmath(g_mean), (N, group, 1)), M)
        dx = part if dx is None else F.add(dx, part)
    if g_rstd is not None:                      # d rstd / dx = -rstd**3 * (x - mean) / M
        coef = F.div(F.mul(F.reshape(_opmath(g_rstd), (N, group, 1)), F.mul(rstd3, F.mul(rstd3, rstd3))), -M)
        part = F.mul(coef, centered)
        dx = part if dx is None else F.add(dx, part)
    if dx is None:
        return None
    dx = F.expand(dx, tuple(centered.shape)) if tuple(dx.shape) != tuple(centered.shape) else dx
    return _cast(F.reshape(dx, tuple(input.shape)), input.dtype)


def group_norm_backward_weight(grad, input, mean, rstd, group):
    if grad is None:
        return None
    N = input.shape[0]
    mean3, rstd3 = F.reshape(_opmath(mean), (N, group, 1)), F.reshape(_opmath(rstd), (N, group, 1))
    xhat = F.reshape(F.mul(F.sub(F.reshape(_opmath(input), (N, group, -1)), mean3), rstd3), tuple(input.shape))
    return F.sum(F.mul(_opmath(grad), xhat), _bn_dims(input))


@decomposition("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    N, C = input.shape[0], input.shape[1]
    HxW = math.prod(input.shape[2:])
    return F.native_group_norm(input, weight, bias, N, C, HxW, num_groups, eps)[0]
