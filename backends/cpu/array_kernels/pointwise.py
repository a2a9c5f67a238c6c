"""Pointwise kernels against the array-module API (numpy on cpu, cupy on cuda).

Each kernel receives the output spec `(shape, dtype)` computed by the shared shape rule
and computes in the "opmath" type: float16/bfloat16 in float32, then rounds once to the
result dtype, as PyTorch does. Operands may be Python scalars (wrapped numbers).
"""
from __future__ import annotations

import platform

from typing import Callable

from ember.core import dtype as _dt
from ember.core.type_promotion import promote_types

from .reductions import result_of


class _NativeDtypes(dict):
    """{ember dtype: native dtype}, filled on first use: a dict lookup per kernel call, no
    Python call (kernels run on every op; `native` may not know every dtype, e.g. cupy's
    bfloat16, so entries are made only when asked for)."""

    def __init__(self, native: Callable) -> None:
        super().__init__()
        self.native = native

    def __missing__(self, dtype):
        value = self[dtype] = self.native(dtype)
        return value


def make(xp, native: Callable) -> dict[str, Callable]:
    ndarray = xp.ndarray
    f32 = xp.dtype("float32")
    bool_ = xp.dtype(bool)
    lowp = {native(_dt.float16), native(_dt.bfloat16)}
    lowp_dtypes = {_dt.float16, _dt.bfloat16}      # the same, as ember dtypes (a cheaper hash)
    native_of = _NativeDtypes(native)

    def cast_in(x, dt):
        if isinstance(x, ndarray):
            return x if x.dtype == dt else x.astype(dt)
        if dt.kind in "iu" and type(x) is int:
            # a Python int wraps to the integer dtype as in PyTorch (uint8 + -1 is 255), where
            # numpy would raise OverflowError
            return xp.asarray((x + 2**63) % 2**64 - 2**63, dtype=xp.int64).astype(dt)
        return x

    to_ember = {native(d): d for d in _dt.ALL_DTYPES}

    def common_dtype(a, b):
        """PyTorch's common dtype of two operands (comparisons compute in it).

        Tiers: arrays with dimensions > 0-d arrays > Python scalars; a lower tier counts
        only when its category (bool < int < float) is higher.
        """
        tiers = []
        for x in (a, b):
            if isinstance(x, ndarray):
                d = to_ember[x.dtype]
                tiers.append((0 if x.ndim else 1, d.category, d))
            elif isinstance(x, bool):
                tiers.append((2, 0, _dt.bool))
            elif isinstance(x, int):
                tiers.append((2, 1, _dt.int64))
            else:
                tiers.append((2, 2, _dt.get_default_dtype()))
        tiers.sort(key=lambda t: t[0])
        (ta, ca, da), (tb, cb, db) = tiers
        if ta == tb:
            return native(promote_types(da, db))
        return native(db if cb > ca else da)

    out = result_of(xp)

    # maximum(0, a) keeps -0.0 and NaN as torch's relu does on numpy's x86 float32/64 and integer loops
    # (checked for sizes 1..1025 and strided views); float16, other machines (ARM's max orders -0 below
    # +0) and other array modules take the select
    exact_maximum = {xp.dtype(d) for d in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8")} \
        if xp.__name__ == "numpy" and platform.machine().lower() in ("x86_64", "amd64") else set()

    def relu(spec, a):
        dt = native_of[spec[1]]
        if a.dtype in exact_maximum:
            return out(xp.maximum(a.dtype.type(0), a), dt)
        return out(xp.where(a < 0, xp.zeros((), a.dtype), a), dt)

    def binary(ufunc):
        def kernel(spec, a, b, *rest):
            dt = native_of[spec[1]]
            if a.__class__ is ndarray and b.__class__ is ndarray and a.dtype is dt and b.dtype is dt \
                    and spec[1] not in lowp_dtypes:
                # the common case: operands already in the result dtype, which is also the
                # compute dtype; what follows would cast nothing
                r = ufunc(a, b)
                if r.__class__ is ndarray:      # 0-d operands give a numpy scalar
                    return r
            cdt = f32 if dt in lowp else dt
            return out(ufunc(cast_in(a, cdt), cast_in(b, cdt)), dt)
        return kernel

    def unary_float(ufunc):
        def kernel(spec, a):
            dt = native_of[spec[1]]
            cdt = f32 if dt in lowp else dt
            return out(ufunc(cast_in(a, cdt)), dt)
        return kernel

    def compare(ufunc):
        def kernel(spec, a, b):
            dt = common_dtype(a, b)
            return out(ufunc(cast_in(a, dt), cast_in(b, dt)), bool_)
        return kernel

    def add(spec, a, b, alpha=1):
        dt = native_of[spec[1]]
        if alpha == 1 and a.__class__ is ndarray and b.__class__ is ndarray and a.dtype is dt and b.dtype is dt \
                and spec[1] not in lowp_dtypes:
            r = xp.add(a, b)                    # the common case, as in `binary`
            if r.__class__ is ndarray:
                return r
        cdt = f32 if dt in lowp else dt
        b = cast_in(b, cdt)
        if alpha != 1:
            b = xp.multiply(b, cast_in(alpha, cdt))
        return out(xp.add(cast_in(a, cdt), b), dt)

    def sub(spec, a, b, alpha=1):
        dt = native_of[spec[1]]
        cdt = f32 if dt in lowp else dt
        b = cast_in(b, cdt)
        if alpha != 1:
            b = xp.multiply(b, alpha)
        return out(xp.subtract(cast_in(a, cdt), b), dt)

    def div(spec, a, b, rounding_mode=None):
        dt = native_of[spec[1]]
        cdt = f32 if dt in lowp else dt
        a, b = cast_in(a, cdt), cast_in(b, cdt)
        if rounding_mode is None:
            return out(xp.true_divide(a, b), dt)
        if xp.dtype(cdt).kind in "iub" and bool(xp.any(xp.asarray(b) == 0)):
            from ember.core.errors import ArgumentValueError

            raise ArgumentValueError(f"div(rounding_mode={rounding_mode!r}): ZeroDivisionError (an integer "
                                     "division by zero)")
        if rounding_mode == "floor":
            return out(xp.floor_divide(a, b), dt)
        if xp.dtype(cdt).kind == "f":
            return out(xp.trunc(xp.true_divide(a, b)), dt)
        q = xp.floor_divide(a, b)
        fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
        return out(q + fix, dt)

    def neg(spec, a):
        return out(xp.negative(a), native_of[spec[1]])

    def abs_(spec, a):
        return out(xp.abs(a), native_of[spec[1]])

    def pow_(spec, a, b):
        dt = native_of[spec[1]]
        cdt = f32 if dt in lowp else dt
        a, b = cast_in(a, cdt), cast_in(b, cdt)
        if xp.dtype(cdt).kind in "iu" and isinstance(b, ndarray):
            negative = b < 0
            if bool(xp.any(negative)):
                # PyTorch's integer pow: a ** -n is 1 for a == 1, +-1 for a == -1, else 0
                # (a negative Python-int exponent is rejected by the shape rule)
                r = xp.power(a, xp.where(negative, 0, b))
                a_b = xp.broadcast_to(a, r.shape)
                odd = (xp.broadcast_to(b, r.shape) % 2) != 0
                fix = xp.where(a_b == 1, 1, xp.where(a_b == -1, xp.where(odd, -1, 1), 0)).astype(r.dtype)
                return out(xp.where(negative, fix, r), dt)
        return out(xp.power(a, b), dt)

    def rounding(ufunc):
        def kernel(spec, a):
            dt = native_of[spec[1]]
            if xp.dtype(dt).kind in "iub":
                return out(xp.copy(a), dt)            # integers are already rounded
            cdt = f32 if dt in lowp else dt
            return out(ufunc(cast_in(a, cdt)), dt)
        return kernel

    def int_checked(ufunc, name):
        """fmod/remainder: an integer division by zero raises, as in PyTorch."""
        def kernel(spec, a, b):
            dt = native_of[spec[1]]
            cdt = f32 if dt in lowp else dt
            a, b = cast_in(a, cdt), cast_in(b, cdt)
            if xp.dtype(cdt).kind in "iu" and bool(xp.any(xp.asarray(b) == 0)):
                from ember.core.errors import ArgumentValueError

                raise ArgumentValueError(f"{name}(): ZeroDivisionError (an integer division by zero)")
            return out(ufunc(a, b), dt)
        return kernel

    def classify(ufunc):
        """isnan/isinf/isfinite/signbit: a bool result of one input, computed in its own dtype."""
        def kernel(spec, a):
            if a.dtype in lowp:
                a = a.astype(f32)
            elif a.dtype == bool_:
                a = a.astype(xp.uint8)
            return out(ufunc(a), bool_)
        return kernel

    def where(spec, c, a, b):
        dt = native_of[spec[1]]
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
        "reciprocal": unary_float(xp.reciprocal), "log1p": unary_float(xp.log1p),
        "expm1": unary_float(xp.expm1), "log2": unary_float(xp.log2), "log10": unary_float(xp.log10),
        "exp2": unary_float(xp.exp2), "sinh": unary_float(xp.sinh), "cosh": unary_float(xp.cosh),
        "asin": unary_float(xp.arcsin), "acos": unary_float(xp.arccos), "atan": unary_float(xp.arctan),
        "asinh": unary_float(xp.arcsinh), "acosh": unary_float(xp.arccosh), "atanh": unary_float(xp.arctanh),
        "tan": unary_float(xp.tan),
        "floor": rounding(xp.floor), "ceil": rounding(xp.ceil), "round": rounding(xp.round),
        "trunc": rounding(xp.trunc), "frac": unary_float(lambda x: xp.subtract(x, xp.trunc(x))),
        "atan2": binary(xp.arctan2), "hypot": binary(xp.hypot),
        "fmod.Tensor": int_checked(xp.fmod, "fmod"), "remainder.Tensor": int_checked(xp.remainder, "remainder"),
        "logical_not": lambda spec, a: out(xp.logical_not(a), bool_),
        "logical_and": compare(xp.logical_and), "logical_or": compare(xp.logical_or),
        "logical_xor": compare(xp.logical_xor),
        "bitwise_and.Tensor": binary(xp.bitwise_and), "bitwise_or.Tensor": binary(xp.bitwise_or),
        "bitwise_xor.Tensor": binary(xp.bitwise_xor), "bitwise_not": lambda spec, a: out(xp.invert(a), native_of[spec[1]]),
        "isnan": classify(xp.isnan), "isinf": classify(xp.isinf), "isfinite": classify(xp.isfinite),
        "signbit": classify(xp.signbit),
        # not primitives, but one array call each on cpu/cuda
        "rsqrt": unary_float(lambda x: 1.0 / xp.sqrt(x)),
        "sigmoid": unary_float(lambda x: 1.0 / (1.0 + xp.exp(-x))),
        "relu": relu,
    }
