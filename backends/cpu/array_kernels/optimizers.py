"""Kernels of the fused optimizer updates (_fused_adam_, _fused_adadelta_, _fused_sgd_) against the array-module API.

One call updates every parameter of a group in place, instead of a dozen dispatched ops per
parameter. The arithmetic is the single-tensor algorithm's (ember/decompositions/optimizers.py),
op for op and in the same order, each step computed in the opmath type and rounded to the
tensor's dtype as the separate ops round, so the fused and per-tensor paths give the same
numbers (float16/bfloat16 included).

The per-parameter updates run once per parameter per step: the kernel reads what they need
from the array module once and passes it in (`xp`, `f32`), and picks the float32/float64
in-place update or the float16/bfloat16 rounding one by the parameter's dtype.
"""
from __future__ import annotations

from .context import ArrayModule, flat_blocks


def rounding(f32, dt):
    """(c, r) for a float16/bfloat16 storage dtype `dt`: read an operand in the opmath type
    (float32), round a result to the storage dtype."""
    def c(x):
        return x.astype(f32)

    def r(x):
        return x.astype(dt)
    return c, r


def lerp_(m, g, w, c, r):
    """m.lerp_(g, w) for a Python-number weight: PyTorch's two-sided formula."""
    diff = r(c(g) - c(m))
    if abs(w) < 0.5:
        m[...] = r(c(m) + c(r(c(diff) * w)))
    else:
        m[...] = r(c(g) - c(r(c(diff) * (1 - w))))


def adam_one_inplace(xp, p, g, m, v, vmax, step, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled):
    """float32/float64: the same ops, in place where the single-tensor algorithm's result is
    written anyway (each `a op= b` rounds as `a op b`), so a step allocates three temporaries the
    size of what it is given (`fused_adam_` gives it blocks of a big parameter). `step` is the
    step number after this step's increment."""
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:
            g = g + p * weight_decay
    w = 1 - beta1
    diff = g - m
    if abs(w) < 0.5:
        diff *= w
        m += diff
    else:
        diff *= 1 - w
        xp.subtract(g, diff, out=m)
    v *= beta2
    sq = g * g
    sq *= 1 - beta2
    v += sq
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if amsgrad:
        xp.maximum(vmax, v, out=vmax)
        v = vmax
    denom = xp.sqrt(v)
    denom /= bias_correction2_sqrt
    denom += eps
    xp.divide(m, denom, out=denom)
    denom *= -step_size
    p += denom


def adam_one(xp, f32, p, g, m, v, vmax, s, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled):
    """float16/bfloat16: each op computed in float32 (`f32`) and rounded to the parameter's dtype."""
    c, r = rounding(f32, p.dtype)
    if maximize:
        g = -g
    s += 1
    if weight_decay != 0:
        if decoupled:
            p[...] = r(c(p) * (1 - lr * weight_decay))
        else:
            g = r(c(g) + c(p) * weight_decay)
    lerp_(m, g, 1 - beta1, c, r)
    v[...] = r(c(v) * beta2)
    v[...] = r(c(v) + c(r(c(r(c(g) * c(g))) * (1 - beta2))))   # addcmul_: the product, then scaled
    step = float(s)
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if amsgrad:
        vmax[...] = xp.maximum(vmax, v)
        v = vmax
    denom = r(c(r(c(r(xp.sqrt(c(v)))) / bias_correction2_sqrt)) + eps)
    quot = r(c(m) / c(denom))                                  # addcdiv_: the quotient, then scaled
    p[...] = r(c(p) + c(r(c(quot) * -step_size)))


def fused_adam_(am: ArrayModule, spec, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
                beta2, weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    """Adam (AdamW with `decoupled_weight_decay`) over a group's parameters, in place."""
    xp, lowp = am.xp, am.lowp
    for i, p in enumerate(params):
        vmax = max_exp_avg_sqs[i] if amsgrad else None
        if p.dtype not in lowp:
            s = state_steps[i]
            s += 1
            step = float(s)
            for arrays in flat_blocks(am, (p, grads[i], exp_avgs[i], exp_avg_sqs[i]) + ((vmax,) if amsgrad else ())):
                adam_one_inplace(xp, *arrays[:4], arrays[4] if amsgrad else None, step, lr, beta1, beta2,
                                 weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
        else:
            adam_one(xp, am.f32, p, grads[i], exp_avgs[i], exp_avg_sqs[i], vmax, state_steps[i], lr, beta1, beta2,
                     weight_decay, eps, amsgrad, maximize, decoupled_weight_decay)
    return ()


def adadelta_one_inplace(xp, p, g, sq, acc, s, lr, rho, eps, weight_decay, maximize):
    """float32/float64: adadelta_one's ops, in place where a result is written anyway (each `a op= b`
    rounds as `a op b`): two temporaries per parameter."""
    s += 1
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    sq *= rho
    t = g * g
    t *= 1 - rho
    sq += t                                                     # addcmul_: the product, then scaled
    std = sq + eps
    xp.sqrt(std, out=std)
    delta = acc + eps
    xp.sqrt(delta, out=delta)
    delta /= std
    delta *= g
    acc *= rho
    xp.multiply(delta, delta, out=std)
    std *= 1 - rho
    acc += std
    delta *= -lr
    p += delta


def adadelta_one(xp, f32, p, g, sq, acc, s, lr, rho, eps, weight_decay, maximize):
    """float16/bfloat16: each op computed in float32 (`f32`) and rounded to the parameter's dtype."""
    c, r = rounding(f32, p.dtype)
    s += 1
    if maximize:
        g = -g
    if weight_decay != 0:
        g = r(c(g) + c(p) * weight_decay)
    sq[...] = r(c(sq) * rho)
    sq[...] = r(c(sq) + c(r(c(r(c(g) * c(g))) * (1 - rho))))
    std = r(xp.sqrt(c(r(c(sq) + eps))))
    delta = r(xp.sqrt(c(r(c(acc) + eps))))
    delta = r(c(r(c(delta) / c(std))) * c(g))
    acc[...] = r(c(acc) * rho)
    acc[...] = r(c(acc) + c(r(c(r(c(delta) * c(delta))) * (1 - rho))))
    p[...] = r(c(p) + c(r(c(delta) * -lr)))


def fused_adadelta_(am: ArrayModule, spec, params, grads, square_avgs, acc_deltas, state_steps, lr, rho, eps,
                    weight_decay, maximize):
    """Adadelta over a group's parameters, in place."""
    xp, lowp = am.xp, am.lowp
    for i, p in enumerate(params):
        if p.dtype not in lowp:
            adadelta_one_inplace(xp, p, grads[i], square_avgs[i], acc_deltas[i], state_steps[i], lr, rho, eps,
                                 weight_decay, maximize)
        else:
            adadelta_one(xp, am.f32, p, grads[i], square_avgs[i], acc_deltas[i], state_steps[i], lr, rho, eps,
                         weight_decay, maximize)
    return ()


def sgd_one_inplace(p, g, buf, weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step):
    """float32/float64: sgd_one's ops, in place where its result is written anyway (each `a op= b`
    rounds as `a op b`): plain SGD is two array calls per parameter."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + p * weight_decay
    if momentum != 0:
        if is_first_step:
            buf[...] = g
        else:
            buf *= momentum
            alpha = 1 - dampening
            buf += g * alpha if alpha != 1 else g
        g = g + buf * momentum if nesterov else buf
    p += g * -lr


def sgd_one(f32, p, g, buf, weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step):
    """float16/bfloat16: each op computed in float32 (`f32`) and rounded to the parameter's dtype."""
    c, r = rounding(f32, p.dtype)
    if maximize:
        g = -g
    if weight_decay != 0:
        g = r(c(g) + c(p) * weight_decay)
    if momentum != 0:
        if is_first_step:
            buf[...] = g
        else:
            buf[...] = r(c(buf) * momentum)
            alpha = 1 - dampening
            buf[...] = r(c(buf) + (c(g) * alpha if alpha != 1 else c(g)))
        g = r(c(g) + c(buf) * momentum) if nesterov else buf
    p[...] = r(c(p) + c(g) * -lr)


def fused_sgd_(am: ArrayModule, spec, params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening,
               nesterov, maximize, is_first_step):
    """SGD (momentum, dampening, Nesterov, weight decay) over a group's parameters, in place."""
    lowp = am.lowp
    for i, p in enumerate(params):
        buf = momentum_buffer_list[i] if momentum != 0 else None
        if p.dtype not in lowp:
            sgd_one_inplace(p, grads[i], buf, weight_decay, momentum, lr, dampening, nesterov, maximize,
                            is_first_step)
        else:
            sgd_one(am.f32, p, grads[i], buf, weight_decay, momentum, lr, dampening, nesterov, maximize,
                    is_first_step)
    return ()


KERNELS = {"_fused_adam_": fused_adam_, "_fused_adadelta_": fused_adadelta_, "_fused_sgd_": fused_sgd_}
