"""The fused optimizer updates (_fused_adam_, _fused_sgd_) as in-place elementwise kernels.

Each state tensor is rewritten by one expression over the current values (no temporaries, so
the device allocates during a step what the cpu's fused kernel and the meta prediction do:
nothing). The expressions are the single-tensor algorithm's ops in order, evaluated in the
opmath type with FP_CONTRACT off, so float32/float64 round as the separate ops do; float16 and
bfloat16 round once per expression instead of once per op.

Each kernel is `fn(backend, spec, *op_args)` (kernels/table.py); the table `KERNELS` ends the module.
"""
from __future__ import annotations

import string

import numpy as np

from .. import codegen as cg
from . import elementwise


def update(out, operands, expr, extra=()):
    """out[...] = `expr` over `operands` in out's opmath type; `extra` are (name, value) scalars."""
    ct = cg.opmath(out.dtype)
    elementwise.run(out, list(operands), [ct] * len(operands), expr, ct,
                    [(name, ct, value) for name, value in extra], tag="optim")


def grad_expr(maximize, weight_decay):
    """The gradient as an expression over x1 (grad) and x2 (param): negated, decayed."""
    g = "(-x1)" if maximize else "x1"
    return f"({g} + x2 * wd)" if weight_decay != 0 else g


def next_step(backend, s) -> float:
    """Increment the step tensor `s` on the device and return its new value (read back)."""
    update(s, (s,), "x0 + 1")
    return float(backend.to_host(s).reshape(()))


def read_steps(backend, steps) -> list[float]:
    """The values of the 0-d step tensors `steps`, read back with one wait for the device (not one each)."""
    import pyopencl as cl

    if not steps:
        return []
    values = [np.empty(1, dtype=s.dtype) for s in steps]
    for host, s in zip(values, steps):
        cl.enqueue_copy(s.device.queue, host, s.buffer, src_offset=s.offset * s.dtype.itemsize, is_blocking=False)
    steps[0].device.queue.finish()
    return [float(v[0]) for v in values]


def _one_pass(arrays) -> bool:
    """Whether a parameter's arrays take the one-kernel update: C-contiguous float32/float64 of one dtype."""
    dtype = arrays[0].dtype
    return dtype.name in CL_FLOAT and all(a.dtype == dtype and a.elem_strides == _contiguous(a.shape) for a in arrays)


def _contiguous(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


ADAM_SOURCE = """
__kernel void adam(long n, __global $T* p, long op, __global const $T* g, long og, __global $T* m, long om,
                   __global $T* v, long ov, __global $S* s, long os, $S new_step, $T decay, $T w, $T b2, $T omb2,
                   $T bc2s, $T eps, $T nss) {
    long i = get_global_id(0);
    if (i == 0) s[os] = new_step;
    if (i >= n) return;
    $T x = p[op + i];
    $T gi = $GRAD;
    $DECOUPLED
    $T mi = $LERP;
    $T vi = v[ov + i] * b2 + (gi * gi) * omb2;
    m[om + i] = mi;
    v[ov + i] = vi;
    p[op + i] = x + (mi / (sqrt(vi) / bc2s + eps)) * nss;
}
"""
CL_FLOAT = {"float32": "float", "float64": "double"}


def _adam_kernel(dev, dtype: str, step_dtype: str, maximize: bool, coupled: bool, decoupled: bool, small: bool):
    """The one-pass Adam kernel of `dtype` (its step counter's `step_dtype`) for these options: every state
    array and the step written in one launch, each expression the single-tensor algorithm's, in its order
    (FP_CONTRACT off: the prelude's), so it rounds as the separate updates do."""
    g = "(-g[og + i])" if maximize else "g[og + i]"
    source = string.Template(ADAM_SOURCE).substitute(
        T=CL_FLOAT[dtype], S=CL_FLOAT[step_dtype], GRAD=f"({g} + x * decay)" if coupled else g,
        DECOUPLED="x = x * decay;" if decoupled else "",
        LERP="m[om + i] + (gi - m[om + i]) * w" if small else "gi - (gi - m[om + i]) * w")
    key = ("adam one pass", dtype, step_dtype, maximize, coupled, decoupled, small)
    return cg.get_kernel(dev, key, lambda: source, "adam")


def fused_adam_(backend, spec, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
                weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    """One Adam step (AdamW's with `decoupled_weight_decay`) for every parameter, in place: one launch per
    parameter (the steps read back together) where its arrays allow, else an update per state array."""
    groups = list(zip(params, grads, exp_avgs, exp_avg_sqs))
    if not amsgrad and all(_one_pass(a) for a in groups) and all(s.dtype.name in CL_FLOAT for s in state_steps):
        return _adam_one_pass(groups, state_steps, lr, beta1, beta2, weight_decay, eps, maximize,
                              decoupled_weight_decay, read_steps(backend, state_steps))
    coupled_wd = 0 if decoupled_weight_decay else weight_decay
    g = grad_expr(maximize, coupled_wd)
    w = 1 - beta1
    lerp = f"x0 + ({g} - x0) * w" if abs(w) < 0.5 else f"{g} - ({g} - x0) * omw"
    for i, p in enumerate(params):
        step = next_step(backend, state_steps[i])
        if weight_decay != 0 and decoupled_weight_decay:
            update(p, (p,), "x0 * f", [("f", 1 - lr * weight_decay)])
        m, v = exp_avgs[i], exp_avg_sqs[i]
        update(m, (m, grads[i], p), lerp, [("wd", coupled_wd), ("w", w), ("omw", 1 - w)])
        update(v, (v, grads[i], p), f"x0 * b2 + ({g} * {g}) * omb2",
               [("wd", coupled_wd), ("b2", beta2), ("omb2", 1 - beta2)])
        if amsgrad:
            vmax = max_exp_avg_sqs[i]
            update(vmax, (vmax, v), "((x0 > x1 || isnan(x0)) ? x0 : x1)")
            v = vmax
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        update(p, (p, m, v), "x0 + (x1 / (sqrt(x2) / bc2s + eps)) * nss",
               [("bc2s", bias_correction2_sqrt), ("eps", eps), ("nss", -step_size)])
    return ()


def _adam_one_pass(groups, steps, lr, beta1, beta2, weight_decay, eps, maximize, decoupled, values) -> tuple:
    w = 1 - beta1
    small = abs(w) < 0.5
    decay = (1 - lr * weight_decay) if decoupled else weight_decay
    for (p, g, m, v), s, before in zip(groups, steps, values):
        step = before + 1
        dt = p.dtype.type
        kernel = _adam_kernel(p.device, p.dtype.name, s.dtype.name, maximize, weight_decay != 0 and not decoupled,
                              weight_decay != 0 and decoupled, small)
        i64 = np.int64
        scalars = (decay, w if small else 1 - w, beta2, 1 - beta2, (1 - beta2 ** step) ** 0.5, eps,
                   -(lr / (1 - beta1 ** step)))
        cg.launch(p.device, kernel, max(p.size, 1),
                  [i64(p.size), p.buffer, i64(p.offset), g.buffer, i64(g.offset), m.buffer, i64(m.offset),
                   v.buffer, i64(v.offset), s.buffer, i64(s.offset), s.dtype.type(step)] + [dt(x) for x in scalars])
    return ()


def fused_sgd_(backend, spec, params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov,
               maximize, is_first_step):
    """One SGD step (momentum, dampening, Nesterov, weight decay) for every parameter, in place."""
    g = grad_expr(maximize, weight_decay)
    alpha = 1 - dampening
    for i, p in enumerate(params):
        extra = [("wd", weight_decay)]
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if is_first_step:
                update(buf, (buf, grads[i], p), g, extra)
            else:
                scaled = f"{g} * alpha" if alpha != 1 else g
                update(buf, (buf, grads[i], p), f"x0 * mom + {scaled}", extra + [("mom", momentum), ("alpha", alpha)])
            d = f"{g} + x0 * mom" if nesterov else "x0"
            update(p, (buf, grads[i], p), f"x2 + ({d}) * nlr", extra + [("mom", momentum), ("nlr", -lr)])
        else:
            update(p, (p, grads[i], p), f"x2 + {g} * nlr", extra + [("nlr", -lr)])
    return ()


KERNELS = {"_fused_adam_": fused_adam_, "_fused_sgd_": fused_sgd_}
