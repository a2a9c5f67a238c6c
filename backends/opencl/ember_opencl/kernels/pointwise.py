"""Pointwise primitives as OpenCL C expressions over the elementwise engine.

Each kernel gets the output spec from the shared shape rule (shape and result dtype),
allocates the result and evaluates one expression per element in the opmath type: the
result's (float for float16/bfloat16, int for bool); comparisons compute in the operands'
common dtype, as the cpu backend does. Integer division and fmod by zero raise like the cpu's.
"""
from __future__ import annotations

import numpy as np

from ember.core import dtype as _dt
from ember.core.numpy_interop import from_numpy_dtype, to_numpy_dtype
from ember.core.type_promotion import promote_types

from .. import codegen as cg
from ..array import CLArray
from . import elementwise

UNARY_FLOAT = {"exp": "exp(x0)", "expm1": "expm1(x0)", "log": "log(x0)", "log1p": "log1p(x0)",
               "sqrt": "sqrt(x0)", "sin": "sin(x0)", "cos": "cos(x0)", "tanh": "tanh(x0)", "erf": "erf(x0)"}


def _device_of(operands):
    for x in operands:
        if isinstance(x, CLArray):
            return x.device
    raise TypeError("an opencl kernel needs at least one opencl array operand")


def common_dtype(a, b):
    """PyTorch's common dtype of two operands (arrays with dims > 0-d arrays > Python scalars)."""
    tiers = []
    for x in (a, b):
        if isinstance(x, CLArray):
            d = from_numpy_dtype(x.dtype)
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
        return promote_types(da, db)
    return db if cb > ca else da


def make(backend) -> dict:
    def new(spec, operands) -> CLArray:
        return backend.new_array(spec[0], to_numpy_dtype(spec[1]), _device_of(operands))

    def compute(spec, operands, expr, extra=(), tag="pw"):
        out = new(spec, operands)
        ct = cg.opmath(out.dtype)
        return elementwise.run(out, list(operands), [ct] * len(operands), expr, ct, extra, tag)

    def any_zero(b) -> bool:
        if isinstance(b, CLArray):
            return bool(np.any(backend.to_host(b) == 0))
        return b == 0

    def binary(expr):
        return lambda spec, a, b: compute(spec, (a, b), expr)

    def unary(expr):
        return lambda spec, a: compute(spec, (a,), expr)

    def add(spec, a, b, alpha=1):
        if alpha == 1:
            return compute(spec, (a, b), "x0 + x1")
        ct = cg.opmath(to_numpy_dtype(spec[1]))
        return compute(spec, (a, b), "x0 + alpha * x1", [("alpha", ct, alpha)])

    def div(spec, a, b, rounding_mode=None):
        dt = to_numpy_dtype(spec[1])
        is_float = cg.opmath(dt) in cg.FLOAT_CL
        if rounding_mode is None:
            return compute(spec, (a, b), "x0 / x1")
        if not is_float and any_zero(b):
            from ember.core.errors import ArgumentValueError

            raise ArgumentValueError(f"div(rounding_mode={rounding_mode!r}): ZeroDivisionError (an integer "
                                     "division by zero)")
        if rounding_mode == "floor":
            ct = cg.opmath(dt)
            return compute(spec, (a, b), f"ember_floordiv_{ct}(x0, x1)" if is_float else "ember_ifloordiv(x0, x1)")
        return compute(spec, (a, b), "trunc(x0 / x1)" if is_float else "x0 / x1")

    def fmod(spec, a, b):
        dt = to_numpy_dtype(spec[1])
        if cg.opmath(dt) in cg.FLOAT_CL:
            return compute(spec, (a, b), "fmod(x0, x1)")
        if any_zero(b):
            from ember.core.errors import ArgumentValueError

            raise ArgumentValueError("fmod(): ZeroDivisionError (an integer division by zero)")
        return compute(spec, (a, b), "x0 % x1")

    def pow_(spec, a, b):
        dt = to_numpy_dtype(spec[1])
        if cg.opmath(dt) in cg.FLOAT_CL:
            return compute(spec, (a, b), "pow(x0, x1)")
        return compute(spec, (a, b), "ember_ipow((long)x0, (long)x1)")

    def abs_(spec, a):
        if cg.opmath(a.dtype) in cg.FLOAT_CL:
            return compute(spec, (a,), "fabs(x0)")
        return compute(spec, (a,), "(x0 < 0 ? -x0 : x0)")

    def rounding(fn):
        def kernel(spec, a):
            if cg.opmath(to_numpy_dtype(spec[1])) in cg.FLOAT_CL:
                return compute(spec, (a,), f"{fn}(x0)")
            return compute(spec, (a,), "x0")
        return kernel

    def signbit(spec, a):
        ct = cg.opmath(a.dtype)
        out = new(spec, (a,))
        expr = "signbit(x0)" if ct in cg.FLOAT_CL else "(x0 < 0)"
        return elementwise.run(out, [a], [ct], expr, "int")

    def compare(op):
        def kernel(spec, a, b):
            common = to_numpy_dtype(common_dtype(a, b))
            ct = cg.opmath(common)
            out = new(spec, (a, b))
            # float16/bfloat16: operands of other dtypes are rounded to the common dtype first
            r = {"float16": "ember_round_f16", "bfloat16": "ember_round_bf16"}.get(common.name, "")
            return elementwise.run(out, [a, b], [ct, ct], f"({r}(x0) {op} {r}(x1))", "int")
        return kernel

    def where(spec, c, a, b):
        out = new(spec, (c, a, b))
        ct = cg.opmath(out.dtype)
        return elementwise.run(out, [c, a, b], ["int", ct, ct], "(x0 ? x1 : x2)", ct)

    kernels = {
        "add.Tensor": add, "mul.Tensor": binary("x0 * x1"), "div.Tensor_mode": div, "neg": unary("-x0"),
        "abs": abs_, "pow.Tensor_Tensor": pow_, "fmod.Tensor": fmod, "atan2": binary("atan2(x0, x1)"),
        "floor": rounding("floor"), "round": rounding("rint"), "signbit": signbit,
        "eq.Tensor": compare("=="), "lt.Tensor": compare("<"), "le.Tensor": compare("<="), "where.self": where,
        "bitwise_and.Tensor": binary("x0 & x1"), "bitwise_or.Tensor": binary("x0 | x1"),
        "bitwise_xor.Tensor": binary("x0 ^ x1"),
    }
    kernels.update({name: unary(expr) for name, expr in UNARY_FLOAT.items()})
    return kernels
