"""The fused optimizer updates (_fused_adam_, _fused_sgd_) as in-place elementwise kernels.

Each state tensor is rewritten by one expression over the current values (no temporaries, so
the device allocates during a step what the cpu's fused kernel and the meta prediction do:
nothing). The expressions are the single-tensor algorithm's ops in order, evaluated in the
opmath type with FP_CONTRACT off, so float32/float64 round as the separate ops do; float16 and
bfloat16 round once per expression instead of once per op.

Each kernel is `fn(backend, spec, *op_args)` (kernels/table.py); the table `KERNELS` ends the module.
"""
from __future__ import annotations

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


def fused_adam_(backend, spec, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
                weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    """One Adam step (AdamW's with `decoupled_weight_decay`) for every parameter, in place."""
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
