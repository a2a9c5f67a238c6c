"""The backward ops of the nn layers (PyTorch's derivatives.yaml targets) and the helpers the
registry formulas reach through formulas.nn_backward.

`convolution_backward`, `native_layer_norm_backward`, `native_batch_norm_backward` and
`native_group_norm_backward` are registry ops (composite: double backward differentiates through them); each computes only the
gradients its `output_mask` asks for and returns None for the others, as PyTorch does. The
pooling backward ops live with their forward kernels in pooling.py.

The normalization backward ops take the saved mean and 1/std (no eps). When their own
derivative is wanted (create_graph, or a caller differentiating them), the statistics are
rebuilt from `input` with an effective eps, eps' = 1/rstd**2 - var(input) held constant, so
that they equal the saved values and carry d mean/d input and d rstd/d input to every order.
"""
from __future__ import annotations

import math

from ember._generated import functions as F

from . import as_opmath, decomposition
from .convolution import conv_backward_bias, conv_backward_input, conv_backward_weight  # noqa: F401
from .normalization import _bn_dims, _bn_stats, _cast, _channel_view, _norm_input_grad
from .padding import constant_pad_backward  # noqa: F401


def _tracked_stats(x, dims, mean, rstd):
    """(mean, rstd) as given, or (when grad mode is on and `x` requires grad) equal values
    that are differentiable functions of `x` (see the module docstring)."""
    from ember.frontend.autograd.grad_mode import is_grad_enabled

    if not (is_grad_enabled() and x.requires_grad):
        return mean, rstd
    m = F.mean(x, dims, True)
    centered = F.sub(x, m)
    var = F.mean(F.mul(centered, centered), dims, True)
    eps = F.sub(F.reciprocal(F.mul(rstd, rstd)), var).detach()
    return m, F.rsqrt(F.add(var, eps))


# ----------------------------------------------------------------------------- convolution
@decomposition("convolution_backward")
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """(grad input, grad weight, grad bias), each only where `output_mask` asks for it."""
    args = (stride, padding, dilation, transposed, output_padding, groups)
    gi = conv_backward_input(grad_output, tuple(input.shape), weight, *args) if output_mask[0] else None
    gw = conv_backward_weight(grad_output, input, tuple(weight.shape), *args) if output_mask[1] else None
    gb = conv_backward_bias(grad_output) if output_mask[2] else None
    return gi, gw, gb


# ----------------------------------------------------------------------------------- linear
@decomposition("linear_backward")
def linear_backward(self, grad_output, weight, output_mask):
    """(grad input, grad weight, grad bias) of linear, each only where `output_mask` asks for it. The
    bias's is summed to the output's feature shape; the engine reduces it further for a broadcast bias."""
    if weight is not None:
        weight_1d = weight.dim() == 1
    elif self is not None:                      # a 1-D weight drops the output's feature dim
        weight_1d = grad_output.dim() == self.dim() - 1
    else:
        weight_1d = grad_output.dim() == 0
    gi = _linear_grad_input(grad_output, weight) if output_mask[0] else None
    gw = _linear_grad_weight(grad_output, self, weight_1d) if output_mask[1] else None
    gb = None
    if output_mask[2]:
        lead = grad_output.dim() - (0 if weight_1d else 1)
        gb = F.sum(grad_output, list(range(lead))) if lead > 0 else F.clone(grad_output)
    return gi, gw, gb


def _linear_grad_input(grad, weight):
    """d(input @ weight.T + bias)/d input: grad @ weight (a 1-D weight: grad[..., None] * weight)."""
    if weight.dim() == 1:
        return F.mul(F.unsqueeze(grad, -1), weight)
    return F.mm(grad, weight) if grad.dim() == 2 else F.matmul(grad, weight)


def _linear_grad_weight(grad, input, weight_1d: bool):
    """grad.T @ input over the flattened leading dimensions (an outer product for a 1-D input)."""
    if weight_1d:
        if input.dim() == 1:
            return F.mul(grad, input)
        return F.matmul(F.reshape(grad, (grad.numel(),)), _fold_leading(input))
    if input.dim() == 1:
        return F.mul(F.unsqueeze(grad, -1), F.unsqueeze(input, 0))
    if input.dim() > 2:
        grad, input = _fold_leading(grad), _fold_leading(input)
    return F.mm(F.transpose(grad, 0, 1), input)


def _fold_leading(t):
    """`t` as 2-D, its leading dims folded (an explicit count: -1 is ambiguous beside a zero-size dim)."""
    return F.reshape(t, (math.prod(t.shape[:-1]), t.shape[-1]))


# ------------------------------------------------------------------------------ layer norm
@decomposition("native_layer_norm_backward")
def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    axis = input.dim() - len(normalized_shape)
    dims = list(range(axis, input.dim()))
    outer = list(range(axis))
    g, x = as_opmath(grad_out), as_opmath(input)
    mean, rstd = _tracked_stats(x, dims, as_opmath(mean), as_opmath(rstd))
    xhat = F.mul(F.sub(x, mean), rstd)
    gi = gw = gb = None
    if output_mask[0]:
        gw_in = F.mul(g, as_opmath(weight)) if weight is not None else g
        gi = _cast(_norm_input_grad(gw_in, xhat, rstd, dims), input.dtype)
    if output_mask[1]:
        prod = F.mul(g, xhat)
        gw = _cast(F.sum(prod, outer) if outer else prod, (weight if weight is not None else input).dtype)
    if output_mask[2]:
        gb = _cast(F.sum(g, outer) if outer else g, (bias if bias is not None else input).dtype)
    return gi, gw, gb


# ------------------------------------------------------------------------------ batch norm
@decomposition("native_batch_norm_backward")
def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train, eps,
                               output_mask):
    """The three gradients from one normalised input (the statistics differentiable in `input` where a
    derivative of this op is wanted, see the module docstring)."""
    mean, invstd = _bn_stats(input, running_mean, running_var, train, eps, save_mean, save_invstd)
    dims = _bn_dims(input)
    g = as_opmath(grad_out)
    xhat = F.mul(F.sub(as_opmath(input), mean), invstd) if train or output_mask[1] else None
    param = (weight if weight is not None else input).dtype
    gi = gw = gb = None
    if output_mask[0]:
        gw_in = F.mul(g, _channel_view(as_opmath(weight), input.dim())) if weight is not None else g
        gi = _norm_input_grad(gw_in, xhat, invstd, dims) if train else F.mul(gw_in, invstd)
        gi = _cast(gi, input.dtype)
    if output_mask[1]:
        gw = _cast(F.sum(F.mul(g, xhat), dims), param)
    if output_mask[2]:
        gb = _cast(F.sum(g, dims), param)
    return gi, gw, gb


# ------------------------------------------------------------------------------ group norm
@decomposition("native_group_norm_backward")
def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    x = F.reshape(as_opmath(input), (N, group, -1))
    mean3, rstd3 = _tracked_stats(x, [-1], F.reshape(as_opmath(mean), (N, group, 1)),
                                  F.reshape(as_opmath(rstd), (N, group, 1)))
    xhat = F.mul(F.sub(x, mean3), rstd3)
    g = as_opmath(grad_out)
    gi = gw = gb = None
    if output_mask[0]:
        gw_in = F.mul(g, _channel_view(as_opmath(weight), input.dim())) if weight is not None else g
        gi = _norm_input_grad(F.reshape(gw_in, (N, group, -1)), xhat, rstd3, [-1])
        gi = _cast(F.reshape(gi, tuple(input.shape)), input.dtype)
    if output_mask[1]:
        prod = F.mul(g, F.reshape(xhat, tuple(input.shape)))
        gw = _cast(F.sum(prod, _bn_dims(input)), (weight if weight is not None else input).dtype)
    if output_mask[2]:
        gb = _cast(F.sum(g, _bn_dims(input)), input.dtype)
    return gi, gw, gb


def group_norm_backward_input(grads, input, weight, mean, rstd, N, C, HxW, group):
    """Through the output (native_group_norm_backward) and, as in PyTorch, through the
    returned mean and rstd too."""
    grad, g_mean, g_rstd = (list(grads) + [None, None])[:3]
    dx = None
    if grad is not None:
        dx = as_opmath(F.native_group_norm_backward(grad, input, mean, rstd, weight, N, C, HxW, group,
                                                  [True, False, False])[0])
    if g_mean is None and g_rstd is None:
        return dx
    mean3, rstd3 = F.reshape(as_opmath(mean), (N, group, 1)), F.reshape(as_opmath(rstd), (N, group, 1))
    centered = F.sub(F.reshape(as_opmath(input), (N, group, -1)), mean3)
    M = centered.shape[-1]
    extra = None
    if g_mean is not None:                      # d mean / dx = 1 / M
        extra = F.expand(F.div(F.reshape(as_opmath(g_mean), (N, group, 1)), M), tuple(centered.shape))
    if g_rstd is not None:                      # d rstd / dx = -rstd**3 * (x - mean) / M
        coef = F.div(F.mul(F.reshape(as_opmath(g_rstd), (N, group, 1)), F.mul(rstd3, F.mul(rstd3, rstd3))), -M)
        part = F.mul(coef, centered)
        extra = part if extra is None else F.add(extra, part)
    extra = F.reshape(extra, tuple(input.shape))
    return _cast(extra if dx is None else F.add(dx, extra), input.dtype)


def group_norm_backward_param(grad, input, weight, mean, rstd, N, C, HxW, group, which):
    """grad weight (which=1) or grad bias (which=2) of native_group_norm (None without `grad`)."""
    if grad is None:
        return None
    mask = [False, which == 1, which == 2]
    return F.native_group_norm_backward(grad, input, mean, rstd, weight, N, C, HxW, group, mask)[which]
