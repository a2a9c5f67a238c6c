"""Normalization: native_batch_norm/batch_norm, native_layer_norm/layer_norm, native_group_norm/group_norm.

Batch norm in training mode updates its running statistics in place: those samples create
the running tensors inside the call and return them with the outputs, so the updated
statistics are compared with torch's too (and the sample's own inputs stay untouched).
"""
from __future__ import annotations

import dataclasses

from ..tolerances import REDUCTION_TOL
from .samples import FLOAT, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32


def _a(rng, dtype):
    return lambda shape, layout="c", grad=True, domain="any": T(make(rng, shape, dtype, domain=domain), layout,  # noqa
                                                                grad=grad and is_float(dtype))


def _layer_norm_samples(rng, dtype, native):
    a = _a(rng, dtype)
    eps = [1e-5] if native else []
    # torch's meta kernel gives float32 statistics for float16/bfloat16 input, its cpu kernel the input's dtype
    # (ember follows the cpu): the statistics are checked on real devices only
    meta = not (native and dtype in ("float16", "bfloat16"))
    return [dataclasses.replace(s, meta=meta) for s in [Sample((a((2, 3, 4)), [4], a((4,)), a((4,))) + tuple(eps), desc="last dim, affine"),
            Sample((a((2, 3, 4)), (3, 4), a((3, 4)), None) + tuple(eps), desc="two dims, weight only"),
            Sample((a((3, 5)), [5], None, None) + tuple(eps), desc="no affine"),
            Sample((a((2, 4, 3), "t"), [3], a((3,)), a((3,))) + tuple(eps), desc="transposed input"),
            Sample((a((2, 6), "s"), [6], None, a((6,))) + tuple(eps), desc="strided input, bias only"),
            Sample((a((4,)), [4], a((4,)), a((4,)), 1e-3), desc="1-d, eps 1e-3")]] + [
            Sample((a((2, 3, 4)), [4], a((4,)), a((4,))) + tuple(eps), desc="output only",
                   fn=(lambda m, *args: m.native_layer_norm(*args)[0]) if native else None)]


def _ln_errors(name, native):
    eps = (1e-5,) if native else ()

    def errors(rng):
        return [E((T(f32(rng, (2, 3))), [4], None, None) + eps, RuntimeError, name, desc="normalized_shape mismatch"),
                E((T(f32(rng, (2, 3))), [3], T(f32(rng, (4,))), None) + eps, RuntimeError, name, "weight",
                  desc="weight shape"),
                E((T(make(rng, (2, 3), "int64")), [3], None, None) + eps, NotImplementedError, name,
                  desc="int input")]
    return errors


add(OpInfo("native_layer_norm", fn("native_layer_norm"), lambda rng, d: _layer_norm_samples(rng, d, True),
           dtypes=FLOAT, grad=True, tol=REDUCTION_TOL, errors=_ln_errors("native_layer_norm", True)))
add(OpInfo("layer_norm", fn("layer_norm"), lambda rng, d: _layer_norm_samples(rng, d, False), dtypes=FLOAT,
           grad=True, tol=REDUCTION_TOL, errors=_ln_errors("layer_norm", False)))


def _train_with_running(name, momentum):
    """Calls batch norm in training mode with fresh running statistics; returns them too."""
    def call(m, x, w, b):
        C = x.shape[1]
        rm = m.zeros(C, dtype=x.dtype, device=x.device) + 0.5
        rv = m.ones(C, dtype=x.dtype, device=x.device) * 2
        if name == "native_batch_norm":
            out = m.native_batch_norm(x, w, b, rm, rv, True, momentum, 1e-5)
            return tuple(out) + (rm, rv)
        return m.batch_norm(x, w, b, rm, rv, True, momentum, 1e-5, False), rm, rv
    return call


def _batch_norm_samples(rng, dtype, name):
    """(Some native_batch_norm samples skip meta: torch's meta kernel returns (C,) statistics in eval mode and
    float32 ones for float16/bfloat16 input, its cpu kernel the (0,) / input-dtype ones ember gives.)"""
    a = _a(rng, dtype)
    call = (lambda m, *args: m.native_batch_norm(*args)) if name == "native_batch_norm" else \
        (lambda m, *args: m.batch_norm(*args, False))
    lowp_native = name == "native_batch_norm" and dtype in ("float16", "bfloat16")
    return [
        Sample((a((2, 3, 4)), a((3,)), a((3,))), desc="training, running stats updated",
               fn=_train_with_running(name, 0.1), meta=not lowp_native),
        Sample((a((2, 3, 4)), a((3,)), a((3,)), None, None, True, 0.1, 1e-5), desc="training, output only",
               fn=lambda m, *args: call(m, *args)[0] if name == "native_batch_norm" else call(m, *args)),
        Sample((a((4, 2, 2, 2)), None, None), desc="training 4-d, no affine, momentum 0.3",
               fn=_train_with_running(name, 0.3), meta=not lowp_native),
        Sample((a((3, 2)), a((2,)), None, None, None, True, 0.1, 1e-5), desc="training, no running stats", fn=call,
               meta=not lowp_native),
        Sample((a((2, 3, 4)), a((3,)), a((3,)), a((3,), grad=False), a((3,), grad=False, domain="positive"), False,
                0.1, 1e-5), desc="eval", fn=call, meta=name != "native_batch_norm"),
        Sample((a((2, 4, 3), "t"), a((4,)), a((4,)), None, None, True, 0.1, 1e-5), desc="transposed input, training",
               fn=call, meta=not lowp_native),
        Sample((a((2, 2, 3, 2)), None, a((2,)), a((2,), grad=False), a((2,), grad=False, domain="positive"), False,
                0.1, 1e-3), desc="eval 4-d, bias only", fn=call, meta=name != "native_batch_norm"),
    ]


def _bn_errors(name):
    extra = () if name == "native_batch_norm" else (False,)

    def errors(rng):
        if name == "native_batch_norm":     # the size checks live in batch_norm
            return [E((T(make(rng, (2, 3), "int64")), None, None, None, None, True, 0.1, 1e-5), NotImplementedError,
                      name, desc="int input")]
        return [E((T(f32(rng, (2, 3, 4))), None, None, T(f32(rng, (4,))), T(f32(rng, (3,))), True, 0.1, 1e-5) + extra,
                  RuntimeError, name, "running_mean", desc="running_mean size"),
                E((T(f32(rng, (2, 3, 4))), T(f32(rng, (2,))), None, None, None, True, 0.1, 1e-5) + extra,
                  RuntimeError, name, "weight", desc="weight size")]
    return errors


for _nm in ("native_batch_norm", "batch_norm"):
    add(OpInfo(_nm, fn(_nm), lambda rng, d, _nm=_nm: _batch_norm_samples(rng, d, _nm), dtypes=FLOAT, grad=True,
               tol=REDUCTION_TOL, errors=_bn_errors(_nm)))


def _group_norm_samples(rng, dtype, native):
    a = _a(rng, dtype)

    def args(x, shape, groups, w, b, eps=1e-5):
        if native:
            hw = 1
            for n in shape[2:]:
                hw *= n
            return (x, w, b, shape[0], shape[1], hw, groups, eps)
        return (x, groups, w, b, eps)
    return [
            Sample(args(a((2, 4, 3)), (2, 4, 3), 2, a((4,)), a((4,))), desc="2 groups, affine"),
            Sample(args(a((1, 6, 2, 2)), (1, 6, 2, 2), 3, None, None), desc="4-d, 3 groups, no affine"),
            Sample(args(a((2, 3, 2)), (2, 3, 2), 1, a((3,)), None), desc="1 group (layer norm)"),
            Sample(args(a((2, 2, 3)), (2, 2, 3), 2, a((2,)), None, 1e-3), desc="instance norm"),
        ] + ([] if native else [  # torch's native_group_norm requires a contiguous input
            Sample(args(a((2, 4, 3), "t"), (2, 4, 3), 2, a((4,)), a((4,))), desc="transposed input")])


def _gn_errors(name, native):
    def errors(rng):
        x = T(f32(rng, (2, 3, 4)))
        if native:
            return [E((x, None, None, 2, 3, 4, 2, 1e-5), RuntimeError, name, desc="channels not divisible")]
        return [E((x, 2), RuntimeError, name, desc="channels not divisible"),
                E((x, 3, T(f32(rng, (2,)))), RuntimeError, name, "weight", desc="weight size")]
    return errors


add(OpInfo("native_group_norm", fn("native_group_norm"), lambda rng, d: _group_norm_samples(rng, d, True),
           dtypes=FLOAT, grad=True, tol=REDUCTION_TOL, errors=_gn_errors("native_group_norm", True)))
add(OpInfo("group_norm", fn("group_norm"), lambda rng, d: _group_norm_samples(rng, d, False), dtypes=FLOAT,
           grad=True, tol=REDUCTION_TOL, errors=_gn_errors("group_norm", False)))
