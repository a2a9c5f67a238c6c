"""The fused optimizer updates (_fused_adam_, _fused_adadelta_, _fused_sgd_) as numba loops.

The eager kernels (array_kernels/optimizers.py) run about a dozen numpy calls per parameter; these run
one compiled loop per parameter, which is most of a small model's optimizer time. `ember.compile` takes
them (the fused-kernel generator's `kernels`), and so does eager code once a process has made a few
updates with the numpy kernels (plugin.py's NUMBA_KERNELS): a short script starts without numba's import.

Each element computes the eager kernel's ops in its order, every one in the parameter's dtype (float32
or float64; the scalars cast to it, as numpy casts a Python float), with no fused multiply-add
(numba's default: no fast-math), so both paths give bit-identical results. A call the loops do not
take (float16/bfloat16, amsgrad, arrays not C-contiguous) returns NotImplemented, and the eager kernel
runs it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["KERNELS"]

_JIT = dict(cache=True, nogil=True, error_model="numpy")


# The loops take their scalars in one array `c` of the parameter's dtype (flags as 0 or 1): numba's call
# costs about 0.13 us per argument, which a dozen scalars per parameter would make most of the update.
ADAM_SCALARS = ("maximize", "weight_decay", "decoupled", "lerp_small", "decay", "w", "beta2", "one_minus_beta2",
                "bias_correction2_sqrt", "eps", "neg_step_size")
ADADELTA_SCALARS = ("maximize", "weight_decay_on", "weight_decay", "rho", "one_minus_rho", "eps", "neg_lr")
SGD_SCALARS = ("maximize", "weight_decay", "momentum_on", "first", "nesterov", "dampen", "decay", "momentum",
               "alpha", "neg_lr")


@njit(**_JIT)
def _adam(p, g, m, v, c):
    p, g, m, v = p.ravel(), g.ravel(), m.ravel(), v.ravel()        # views: the caller checked C-contiguity
    maximize, weight_decay, decoupled, lerp_small = c[0] != 0, c[1] != 0, c[2] != 0, c[3] != 0
    decay, w, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size = c[4], c[5], c[6], c[7], c[8], c[9], c[10]
    for i in range(p.shape[0]):
        gi = -g[i] if maximize else g[i]
        if weight_decay:
            if decoupled:
                p[i] = p[i] * decay
            else:
                gi = gi + p[i] * decay
        if lerp_small:
            m[i] = m[i] + (gi - m[i]) * w
        else:
            m[i] = gi - (gi - m[i]) * w
        v[i] = v[i] * beta2 + (gi * gi) * one_minus_beta2
        denom = np.sqrt(v[i]) / bias_correction2_sqrt + eps
        p[i] = p[i] + (m[i] / denom) * neg_step_size


@njit(**_JIT)
def _adadelta(p, g, square_avg, acc_delta, c):
    p, g, square_avg, acc_delta = p.ravel(), g.ravel(), square_avg.ravel(), acc_delta.ravel()
    maximize, weight_decay_on = c[0] != 0, c[1] != 0
    weight_decay, rho, one_minus_rho, eps, neg_lr = c[2], c[3], c[4], c[5], c[6]
    for i in range(p.shape[0]):
        gi = -g[i] if maximize else g[i]
        if weight_decay_on:
            gi = gi + p[i] * weight_decay
        square_avg[i] = square_avg[i] * rho + (gi * gi) * one_minus_rho
        std = np.sqrt(square_avg[i] + eps)
        delta = (np.sqrt(acc_delta[i] + eps) / std) * gi
        acc_delta[i] = acc_delta[i] * rho + (delta * delta) * one_minus_rho
        p[i] = p[i] + delta * neg_lr


@njit(**_JIT)
def _sgd(p, g, buf, c):
    p, g, buf = p.ravel(), g.ravel(), buf.ravel()
    maximize, weight_decay, momentum_on, first, nesterov, dampen = c[0] != 0, c[1] != 0, c[2] != 0, c[3] != 0, \
        c[4] != 0, c[5] != 0
    decay, momentum, alpha, neg_lr = c[6], c[7], c[8], c[9]
    for i in range(p.shape[0]):
        gi = -g[i] if maximize else g[i]
        if weight_decay:
            gi = gi + p[i] * decay
        if momentum_on:
            if first:
                buf[i] = gi
            elif dampen:
                buf[i] = buf[i] * momentum + gi * alpha
            else:
                buf[i] = buf[i] * momentum + gi
            gi = gi + buf[i] * momentum if nesterov else buf[i]
        p[i] = p[i] + gi * neg_lr


def _takes(groups) -> bool:
    """Whether every array of every parameter's group is a C-contiguous numpy array of the parameter's dtype,
    float32 or float64 (numba would ravel any other into a copy, and the writes would be lost)."""
    for arrays in groups:
        dtype = arrays[0].dtype
        if dtype.type not in FLOATS:
            return False
        for a in arrays:
            if a.dtype != dtype or not a.flags.c_contiguous:
                return False
    return True


FLOATS = (np.float32, np.float64)


def fused_adam_(spec, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
                weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    """Adam/AdamW over a group's parameters, in place (the eager kernel's numbers); NotImplemented for a
    call the loops do not take."""
    groups = list(zip(params, grads, exp_avgs, exp_avg_sqs))
    if amsgrad or not _takes(groups):
        return NotImplemented
    w = 1 - beta1
    small = abs(w) < 0.5
    decay = (1 - lr * weight_decay) if decoupled_weight_decay else weight_decay
    scalars: dict = {}                      # (dtype, step) -> the loop's scalars
    for arrays, s in zip(groups, state_steps):
        step = s.item() + 1.0           # exact in float64; the store rounds it as s += 1 would
        s[()] = step
        dtype = arrays[0].dtype
        c = scalars.get((dtype, step))
        if c is None:
            c = scalars[(dtype, step)] = np.array(
                [maximize, weight_decay != 0, decoupled_weight_decay, small, decay, w if small else 1 - w, beta2,
                 1 - beta2, (1 - beta2 ** step) ** 0.5, eps, -(lr / (1 - beta1 ** step))], dtype=dtype)
        _adam(*arrays, c)
    return ()


def fused_adadelta_(spec, params, grads, square_avgs, acc_deltas, state_steps, lr, rho, eps, weight_decay, maximize):
    """Adadelta over a group's parameters, in place (the eager kernel's numbers); NotImplemented for a call
    the loops do not take."""
    groups = list(zip(params, grads, square_avgs, acc_deltas))
    if not _takes(groups):
        return NotImplemented
    scalars: dict = {}
    for arrays, s in zip(groups, state_steps):
        s += 1
        dtype = arrays[0].dtype
        c = scalars.get(dtype)
        if c is None:
            c = scalars[dtype] = np.array([maximize, weight_decay != 0, weight_decay, rho, 1 - rho, eps, -lr],
                                          dtype=dtype)
        _adadelta(*arrays, c)
    return ()


def fused_sgd_(spec, params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
               is_first_step):
    """SGD over a group's parameters, in place (the eager kernel's numbers); NotImplemented for a call the
    loops do not take."""
    bufs = momentum_buffer_list if momentum != 0 else params        # (unused without momentum)
    groups = list(zip(params, grads, bufs))
    if not _takes(groups):
        return NotImplemented
    alpha = 1 - dampening
    scalars: dict = {}
    for arrays in groups:
        dtype = arrays[0].dtype
        c = scalars.get(dtype)
        if c is None:
            c = scalars[dtype] = np.array([maximize, weight_decay != 0, momentum != 0, is_first_step, nesterov,
                                           alpha != 1, weight_decay, momentum, alpha, -lr], dtype=dtype)
        _sgd(*arrays, c)
    return ()


#: op name -> kernel(spec, *args), as the backend's kernels are called (NotImplemented: use the eager one)
KERNELS = {"_fused_adam_": fused_adam_, "_fused_adadelta_": fused_adadelta_, "_fused_sgd_": fused_sgd_}
