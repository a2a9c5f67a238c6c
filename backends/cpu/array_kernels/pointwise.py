"""Pointwise kernels against the array-module API (numpy on cpu, cupy on cuda).

Each kernel receives the output spec `(shape, dtype)` computed by the shared shape rule
and computes in the "opmath" type: float16/bfloat16 in float32, then rounds once to the
result dtype, as PyTorch does. Operands may be Python scalars (wrapped numbers).
"""
from __future__ import annotations

from typing import Callable

from ember.frontend import dtype as _dt


def make(xp, native: Callable) -> dict[str, Callable]:
    ndarray = xp.ndarray
    f32 = xp.dtype("float32")
    lowp = {native(_dt.float16), native(_dt.bfloat16)}

    def cast_in(x, dt):
        if isinstance(x, ndarray):
            return x if x.dtype == dt else x.astype(dt)
        return x

    def out(r, dt):
        if not isinstance(r, ndarray):
            r = xp.asarray(r)
        return r if r.dtype == dt else r.astype(dt)

    def binary(ufunc):
        def kernel(spec, a, b, *rest):
            dt = native(spec[1])
            cdt = f32 if dt in lowp else dt
            return out(ufunc(cast_in(a, cdt), cast_in(b, cdt)), dt)
        return kernel

    def unary_float(ufunc):
        def kernel(spec, a):
            dt = native(spec[1])
            cdt = f32 if dt in lowp else dt
            return out(ufunc(cast_in(a, cdt)), dt)
        return kernel

    def compare(ufunc):
        def kernel(spec, a, b):
            return out(ufunc(a, b), xp.dtype(bool))
        return kernel

    def add(spec, a, b, alpha=1):
        dt = native(spec[1])
        cdt = f32 if dt in lowp else dt
        b = cast_in(b, cdt)
        if alpha != 1:
            b = xp.multiply(b, alpha)
        return out(xp.add(cast_in(a, cdt), b), dt)

    def sub(spec, a, b, alpha=1):
        dt = native(spec[1])
        cdt = f32 if dt in lowp else dt
        b = cast_in(b, cdt)
        if alpha != 1:
            b = xp.multiply(b, alpha)
        return out(xp.subtract(cast_in(a, cdt), b), dt)

    def div(spec, a, b, rounding_mode=None):
        dt = native(spec[1])
        cdt = f32 if dt in lowp else dt
        a, b = cast_in(a, cdt), cast_in(b, cdt)
        if rounding_mode is None:
            return out(xp.true_divide(a, b), dt)
        if rounding_mode == "floor":
            return out(xp.floor_divide(a, b), dt)
        if xp.dtype(cdt).kind == "f":
            return out(xp.trunc(xp.true_divide(a, b)), dt)
        q = xp.floor_divide(a, b)
        fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
        return out(q + fix, dt)

    def neg(spec, a):
        return out(xp.negative(a), native(spec[1]))

    def abs_(spec, a):
        return out(xp.abs(a), native(spec[1]))

    def pow_(spec, a, b):
        dt = native(spec[1])
        cdt = f32 if dt in lowp else dt
        a, b = cast_in(a, cdt), cast_in(b, cdt)
        if xp.dtype(cdt).kind in "iu":
            if bool(xp.any(xp.asarray(b) < 0)):
                from ember.errors import ArgumentValueError

                raise ArgumentValueError("pow(): Integers to negative integer powers are not allowed.")
        return out(xp.power(a, b), dt)

    def where(spec, c, a, b):
        dt = native(spec[1])
        return out(xp.where(c, cast_in(a, dt), cast_in(b, dt)), dt)

    return {
        "add.Tensor": add, "sub.Tensor": sub, "mul.Tensor": binary(xp.multiply),
        "div.Tensor_mode": div, "neg": neg, "abs": abs_, "pow.Tensor_Tensor": pow_,
        "maximum": binary(xp.maximum), "minimum": binary(xp.minimum), "where.self": where,
        "eq.Tensor": compare(xp.equal), "ne.Tensor": compare(xp.not_equal), "lt.Tensor": compare(xp.less),
        "le.Tensor": compare(xp.less_equal), "gt.Tensor": compare(xp.greater),
        "ge.Tensor": compare(xp.greater_equal),
        "exp": unary_float(xp.exp), "log": unary_float(xp.log), "sqrt": unary_float(xp.sqrt),
        "tanh": unary_float(xp.tanh), "sin": unary_float(xp.sin), "cos": unary_float(xp.cos),
        # not primitives, but one array call each on cpu/cuda
        "rsqrt": unary_float(lambda x: 1.0 / xp.sqrt(x)),
        "sigmoid": unary_float(lambda x: 1.0 / (1.0 + xp.exp(-x))),
        "relu": lambda spec, a: out(xp.where(a < 0, xp.zeros((), a.dtype), a), native(spec[1])),
    }
