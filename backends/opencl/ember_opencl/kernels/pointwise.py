"""Pointwise primitives as OpenCL C expressions over the elementwise engine.

Each kernel gets the output spec from the shared shape rule (shape and result dtype),
allocates the result and evaluates one expression per element in the opmath type: the
result's (float for float16/bfloat16, int for bool); comparisons compute in the operands'
common dtype, as the cpu backend does. Integer division and fmod by zero raise like the cpu's.

Each kernel is `fn(backend, spec, *op_args)`; ops that differ only in their expression share one
generic kernel (`binary`, `unary`, `rounding`, `compare`), bound per op by a `Family` entry of
the table `KERNELS` at the end (kernels/table.py).
"""
from __future__ import annotations

import numpy as np

from ember.core import dtype as _dt
from ember.core.numpy_interop import from_numpy_dtype, to_numpy_dtype
from ember.core.type_promotion import promote_types

from .. import codegen as cg
from ..array import CLArray
from . import elementwise
from .table import Family

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


def new(backend, spec, operands) -> CLArray:
    """The result array the spec describes, on the operands' device."""
    return backend.new_array(spec[0], to_numpy_dtype(spec[1]), _device_of(operands))


def compute(backend, spec, operands, expr, extra=(), tag="pw"):
    """A new result = `expr` over `operands`, every operand and the expression in the result's opmath type."""
    out = new(backend, spec, operands)
    ct = cg.opmath(out.dtype)
    return elementwise.run(out, list(operands), [ct] * len(operands), expr, ct, extra, tag)


def any_zero(backend, b) -> bool:
    """Whether the divisor `b` (an array, read back, or a scalar) has a zero."""
    if isinstance(b, CLArray):
        return bool(np.any(backend.to_host(b) == 0))
    return b == 0


def binary(backend, expr, spec, a, b):
    """The binary op whose OpenCL C expression over x0, x1 is `expr`."""
    return compute(backend, spec, (a, b), expr)


def unary(backend, expr, spec, a):
    """The unary op whose OpenCL C expression over x0 is `expr`."""
    return compute(backend, spec, (a,), expr)


def add(backend, spec, a, b, alpha=1):
    if alpha == 1:
        return compute(backend, spec, (a, b), "x0 + x1")
    ct = cg.opmath(to_numpy_dtype(spec[1]))
    return compute(backend, spec, (a, b), "x0 + alpha * x1", [("alpha", ct, alpha)])


def div(backend, spec, a, b, rounding_mode=None):
    dt = to_numpy_dtype(spec[1])
    is_float = cg.opmath(dt) in cg.FLOAT_CL
    if rounding_mode is None:
        return compute(backend, spec, (a, b), "x0 / x1")
    if not is_float and any_zero(backend, b):
        from ember.core.errors import ArgumentValueError

        raise ArgumentValueError(f"div(rounding_mode={rounding_mode!r}): ZeroDivisionError (an integer "
                                 "division by zero)")
    if rounding_mode == "floor":
        ct = cg.opmath(dt)
        return compute(backend, spec, (a, b), f"ember_floordiv_{ct}(x0, x1)" if is_float else "ember_ifloordiv(x0, x1)")
    return compute(backend, spec, (a, b), "trunc(x0 / x1)" if is_float else "x0 / x1")


def fmod(backend, spec, a, b):
    dt = to_numpy_dtype(spec[1])
    if cg.opmath(dt) in cg.FLOAT_CL:
        return compute(backend, spec, (a, b), "fmod(x0, x1)")
    if any_zero(backend, b):
        from ember.core.errors import ArgumentValueError

        raise ArgumentValueError("fmod(): ZeroDivisionError (an integer division by zero)")
    return compute(backend, spec, (a, b), "x0 % x1")


def pow_(backend, spec, a, b):
    dt = to_numpy_dtype(spec[1])
    if cg.opmath(dt) in cg.FLOAT_CL:
        return compute(backend, spec, (a, b), "pow(x0, x1)")
    return compute(backend, spec, (a, b), "ember_ipow((long)x0, (long)x1)")


def abs_(backend, spec, a):
    if cg.opmath(a.dtype) in cg.FLOAT_CL:
        return compute(backend, spec, (a,), "fabs(x0)")
    return compute(backend, spec, (a,), "(x0 < 0 ? -x0 : x0)")


def rounding(backend, fn, spec, a):
    """floor / round: the OpenCL C function `fn` on floating types; integers are already integral."""
    if cg.opmath(to_numpy_dtype(spec[1])) in cg.FLOAT_CL:
        return compute(backend, spec, (a,), f"{fn}(x0)")
    return compute(backend, spec, (a,), "x0")


def signbit(backend, spec, a):
    ct = cg.opmath(a.dtype)
    out = new(backend, spec, (a,))
    expr = "signbit(x0)" if ct in cg.FLOAT_CL else "(x0 < 0)"
    return elementwise.run(out, [a], [ct], expr, "int")


def compare(backend, op, spec, a, b):
    """a `op` b (the OpenCL C operator), computed in the operands' common dtype."""
    common = to_numpy_dtype(common_dtype(a, b))
    ct = cg.opmath(common)
    out = new(backend, spec, (a, b))
    # float16/bfloat16: operands of other dtypes are rounded to the common dtype first
    r = {"float16": "ember_round_f16", "bfloat16": "ember_round_bf16"}.get(common.name, "")
    return elementwise.run(out, [a, b], [ct, ct], f"({r}(x0) {op} {r}(x1))", "int")


def where(backend, spec, c, a, b):
    out = new(backend, spec, (c, a, b))
    ct = cg.opmath(out.dtype)
    return elementwise.run(out, [c, a, b], ["int", ct, ct], "(x0 ? x1 : x2)", ct)


KERNELS = {
    "add.Tensor": add, "mul.Tensor": Family(binary, "x0 * x1"), "div.Tensor_mode": div,
    "neg": Family(unary, "-x0"), "abs": abs_, "pow.Tensor_Tensor": pow_, "fmod.Tensor": fmod,
    "atan2": Family(binary, "atan2(x0, x1)"), "floor": Family(rounding, "floor"), "round": Family(rounding, "rint"),
    "signbit": signbit, "eq.Tensor": Family(compare, "=="), "lt.Tensor": Family(compare, "<"),
    "le.Tensor": Family(compare, "<="), "where.self": where,
    "bitwise_and.Tensor": Family(binary, "x0 & x1"), "bitwise_or.Tensor": Family(binary, "x0 | x1"),
    "bitwise_xor.Tensor": Family(binary, "x0 ^ x1"),
    **{name: Family(unary, expr) for name, expr in UNARY_FLOAT.items()},
}
