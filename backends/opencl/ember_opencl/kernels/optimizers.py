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
    return dtype.name in CL_FLOAT and all(a.dtype == dtype and a.is_contiguous for a in arrays)


#: parameters updated per launch: each brings 14 kernel arguments, and a device need take no more than
#: 1024 bytes of them (OpenCL's minimum CL_DEVICE_MAX_PARAMETER_SIZE)
PER_LAUNCH = 4
CL_FLOAT = {"float32": "float", "float64": "double"}

_SLOT = string.Template("""    ${ELSE}if (gid < end$j) {
        long i = gid - start$j;
        $T x = p$j[op$j + i];
        $T gi = $GRAD;
        $DECOUPLED
        $T mi = $LERP;
        $T vi = v$j[ov$j + i] * b2 + (gi * gi) * omb2;
        m$j[om$j + i] = mi;
        v$j[ov$j + i] = vi;
        p$j[op$j + i] = x + (mi / (sqrt(vi) / bc2s$j + eps)) * nss$j;
    }
""")


def _adam_kernel(dev, k: int, dtype: str, step_dtype: str, maximize: bool, coupled: bool, decoupled: bool,
                 small: bool):
    """The one-pass Adam kernel of `k` parameters of `dtype` (their step counters' `step_dtype`) for these
    options: one work-item per element of all of them (parameter j's are [start_j, end_j)), every state
    array and the steps written in one launch, each expression the single-tensor algorithm's in its order
    (FP_CONTRACT off: the prelude's), so it rounds as the separate updates do."""
    T, S = CL_FLOAT[dtype], CL_FLOAT[step_dtype]
    params, slots = [], []
    for j in range(k):
        params.append(f"__global {T}* p{j}, long op{j}, __global const {T}* g{j}, long og{j}, __global {T}* m{j}, "
                      f"long om{j}, __global {T}* v{j}, long ov{j}, __global {S}* s{j}, long os{j}, {S} ns{j}, "
                      f"{T} bc2s{j}, {T} nss{j}, long start{j}, long end{j}")
        g = f"(-g{j}[og{j} + i])" if maximize else f"g{j}[og{j} + i]"
        slots.append(_SLOT.substitute(
            j=j, T=T, ELSE="else " if j else "", GRAD=f"({g} + x * decay)" if coupled else g,
            DECOUPLED="x = x * decay;" if decoupled else "",
            LERP=f"m{j}[om{j} + i] + (gi - m{j}[om{j} + i]) * w" if small else f"gi - (gi - m{j}[om{j} + i]) * w"))
    steps = " ".join(f"s{j}[os{j}] = ns{j};" for j in range(k))
    source = (f"__kernel void adam(long total, {', '.join(params)}, {T} decay, {T} w, {T} b2, {T} omb2, {T} eps) {{\n"
              f"    long gid = get_global_id(0);\n    if (gid == 0) {{ {steps} }}\n    if (gid >= total) return;\n"
              + "".join(slots) + "}\n")
    key = ("adam one pass", k, dtype, step_dtype, maximize, coupled, decoupled, small)
    return cg.get_kernel(dev, key, lambda: source, "adam")


def fused_adam_(backend, spec, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
                weight_decay, eps, amsgrad, maximize, decoupled_weight_decay=False):
    """One Adam step (AdamW's with `decoupled_weight_decay`) for every parameter, in place: one launch per
    PER_LAUNCH parameters (the steps read back together) where their arrays allow, else an update per
    state array."""
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
    """The update in launches of up to PER_LAUNCH parameters of one dtype (and one step dtype) each."""
    w = 1 - beta1
    small = abs(w) < 0.5
    decay = (1 - lr * weight_decay) if decoupled else weight_decay
    by_dtypes: dict = {}
    for arrays, s, before in zip(groups, steps, values):
        by_dtypes.setdefault((arrays[0].dtype.name, s.dtype.name), []).append((arrays, s, before))
    i64 = np.int64
    for (dtype, step_dtype), items in by_dtypes.items():
        dt = np.dtype(dtype).type
        for first in range(0, len(items), PER_LAUNCH):
            chunk = items[first:first + PER_LAUNCH]
            dev = chunk[0][0][0].device
            kernel = _adam_kernel(dev, len(chunk), dtype, step_dtype, maximize, weight_decay != 0 and not decoupled,
                                  weight_decay != 0 and decoupled, small)
            args, end = [], 0
            for (p, g, m, v), s, before in chunk:
                step = before + 1
                args += [p.buffer, i64(p.offset), g.buffer, i64(g.offset), m.buffer, i64(m.offset), v.buffer,
                         i64(v.offset), s.buffer, i64(s.offset), s.dtype.type(step), dt((1 - beta2 ** step) ** 0.5),
                         dt(-(lr / (1 - beta1 ** step))), i64(end), i64(end + p.size)]
                end += p.size
            args += [dt(x) for x in (decay, w if small else 1 - w, beta2, 1 - beta2, eps)]
            cg.launch(dev, kernel, max(end, 1), [i64(end)] + args)
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
