"""Pointwise ops: arithmetic, unary math, rounding, clamps, nan_to_num, logaddexp (comparisons, logical and
bitwise ops: comparisons.py)."""
from __future__ import annotations

import dataclasses

import operator as _operator
import numpy as np

from ..tolerances import POW_GRAD_TOL
from .samples import ALL, FLOAT, NP_DTYPE, NUM, SIGNED, OpInfo, Sample, T, fn, is_float, make, method
from .database import (E, add, add_pointwise, binary_samples, broadcast_error, f32, negatives,
                       unary_errors, unary_inplace_errors, unary_samples)


def _alpha_samples(base):
    def gen(rng, dtype):
        S = base(rng, dtype)
        g = is_float(dtype)
        if dtype != "bool":
            S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)),
                            {"alpha": 2 if not is_float(dtype) else 0.5}, desc="alpha"))
        return S
    return gen


def _operator_samples(op_sym):
    """Python operators: reflected with a scalar on the left."""
    import operator as _o
    ops = {"+": (_o.add, lambda x, y: y + x), "-": (_o.sub, lambda x, y: y - x), "*": (_o.mul, lambda x, y: y * x),
           "/": (_o.truediv, lambda x, y: y / x), "**": (_o.pow, lambda x, y: y ** x),
           "//": (_o.floordiv, lambda x, y: y // x)}
    fwd, rev = ops[op_sym]

    def extra(rng, dtype, domain="any"):
        g = is_float(dtype)
        a = make(rng, (2, 3), dtype, domain=domain)
        b = make(rng, (2, 3), dtype, domain=domain)
        return [Sample((T(a, grad=g), T(b, grad=g)), desc=f"operator {op_sym}", fn=lambda m, x, y: fwd(x, y)),
                Sample((T(a, grad=g), 3), desc=f"reflected operator 3 {op_sym} t", fn=lambda m, x, y: rev(x, y))]
    return extra


def _with(base, *extras):
    def gen(rng, dtype):
        S = base(rng, dtype)
        for e in extras:
            S.extend(e(rng, dtype))
        return S
    return gen


def _sub_errors(rng):
    return broadcast_error("sub")(rng) + [
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), RuntimeError, "sub", desc="bool - bool"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "int64"))), RuntimeError, "sub", desc="bool - int"),
        E((T(make(rng, (2,), "float32")), True), RuntimeError, "sub", desc="float - python bool")]


add_pointwise("add.Tensor", "add", dtypes=ALL, second_order=False, ioperator=_operator.iadd,
           samples=_with(_alpha_samples(binary_samples()), _operator_samples("+")))
add_pointwise("sub.Tensor", "sub", dtypes=NUM, errors=_sub_errors, ioperator=_operator.isub,
           samples=_with(_alpha_samples(binary_samples(scalars=(2, 2.5), no_bool=True)), _operator_samples("-")))
add_pointwise("mul.Tensor", "mul", dtypes=ALL, second_order=True, ioperator=_operator.imul,
           samples=_with(binary_samples(), _operator_samples("*")))


def _div_samples(rng, dtype):
    S = binary_samples(rhs_domain="nonzero", scalars=(2, 2.5))(rng, dtype)
    S += _operator_samples("/")(rng, dtype, "nonzero")
    for mode in ("trunc", "floor") if dtype != "bool" else ():
        a = make(rng, (2, 3), dtype, low=-5, high=5)
        b = make(rng, (2, 3), dtype, domain="nonzero")
        S.append(Sample((T(a, grad=False), T(b, grad=False)), {"rounding_mode": mode}, desc=f"rounding {mode}"))
        S.append(Sample((T(make(rng, (3, 1), dtype, low=-5, high=5)), 2), {"rounding_mode": mode},
                        desc=f"rounding {mode} by scalar"))
    if is_float(dtype):
        S.append(Sample((T(make(rng, (3,), dtype)), T(np.zeros(3, NP_DTYPE[dtype]))), desc="division by zero"))
    return S


def _div_errors(rng):
    return broadcast_error("div")(rng) + [
        E((T(f32(rng, (2,))), 2), RuntimeError, "div", "rounding_mode", kwargs={"rounding_mode": "bad"},
          desc="bad rounding mode"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "div",
          kwargs={"rounding_mode": "trunc"}, desc="bool with rounding")]


add_pointwise("div.Tensor_mode", "div", dtypes=ALL, samples=_div_samples, errors=_div_errors, ioperator=_operator.itruediv,
           inplace_dtypes=FLOAT)


def _floor_divide_samples(rng, dtype):
    S = binary_samples(rhs_domain="nonzero", scalars=(2,), grad=False)(rng, dtype)
    S += [s for s in _operator_samples("//")(rng, dtype, "nonzero")]
    a = make(rng, (2, 3), dtype, low=-6, high=6)
    S.append(Sample((T(a), T(make(rng, (2, 3), dtype, domain="nonzero"))), desc="negative quotients"))
    return S


add(OpInfo("floor_divide", fn("floor_divide"), _floor_divide_samples, dtypes=NUM,
           errors=lambda rng: broadcast_error("floor_divide")(rng) + [
               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "floor_divide",
                 desc="bool")]))


def _rsub_samples(rng, dtype):
    S = binary_samples(scalars=(2, 2.5), no_bool=True)(rng, dtype)
    g = is_float(dtype)
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)),
                    {"alpha": 2}, desc="alpha"))
    return S


add(OpInfo("rsub.Tensor", fn("rsub"), _rsub_samples, dtypes=NUM, grad=True,
           errors=lambda rng: broadcast_error("rsub")(rng) + [
               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), RuntimeError, "sub", desc="bool")]))


def _neg_errors(rng):
    return unary_errors("neg")(rng) + [E((T(make(rng, (2,), "bool")),), RuntimeError, "neg", desc="bool")]


def _unary_op_samples(op_sym):
    import operator as _o
    f = {"-": _o.neg, "abs": _o.abs}[op_sym]

    def extra(rng, dtype):
        return [Sample((T(make(rng, (2, 3), dtype), grad=is_float(dtype)),), desc=f"operator {op_sym}",
                       fn=lambda m, x: f(x))]
    return extra


add_pointwise("neg", "neg", dtypes=SIGNED, samples=unary_samples(extra=_unary_op_samples("-")), errors=_neg_errors,
           inplace_errors=lambda rng: unary_inplace_errors("neg_")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "neg", desc="bool")],
           inplace_samples=unary_samples())
add_pointwise("abs", "abs", dtypes=SIGNED, samples=unary_samples(extra=_unary_op_samples("abs")),
           errors=lambda rng: unary_errors("abs")(rng) + [
               E((T(make(rng, (2,), "bool")),), NotImplementedError, "abs", desc="bool")],
           inplace_errors=unary_inplace_errors("abs_"), inplace_samples=unary_samples())


def _sign_extra(rng, dtype):
    if not is_float(dtype):
        return [Sample((T(np.array([-2, 0, 3], NP_DTYPE[dtype]) if dtype != "uint8" else np.array([0, 3], np.uint8)),),
                       desc="with zero")]
    return [Sample((T(np.array([-1.5, 0.0, 2.0, np.nan], NP_DTYPE[dtype])),), desc="zero and nan")]


add_pointwise("sign", "sign", dtypes=ALL, samples=unary_samples(extra=_sign_extra), errors=unary_errors("sign"),
           inplace_errors=unary_inplace_errors("sign_"))


def _pow_samples(rng, dtype):
    if is_float(dtype):
        S = binary_samples(domain="positive", rhs_domain="any", scalars=(2, 0.5, 3, -1))(rng, dtype)
        S += _operator_samples("**")(rng, dtype, "positive")
        S.append(Sample((T(make(rng, (2, 3), dtype, domain="positive"), grad=True), 0), desc="exponent 0"))
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=False), T(make(rng, (2, 3), dtype), grad=False)),
                        desc="negative base (nan)", gradcheck=False))
        S.append(Sample((2.0, T(make(rng, (2, 3), dtype), grad=True)), desc="python scalar base",
                        fn=lambda m, x, y: m.pow(x, y)))
        S.append(Sample((T(np.array([0.0, 0.0, 2.0], NP_DTYPE[dtype]), grad=True),
                         T(np.array([0.0, 2.0, 0.0], NP_DTYPE[dtype]), grad=True)), desc="zeros", gradcheck=False))
        return S
    if dtype == "bool":
        return []
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)          # noqa: E731
    e = lambda shape: make(rng, shape, dtype, low=0, high=0).clip(0, 3)  # noqa: E731
    return [Sample((T(a((2, 3))), T(e((2, 3)))), desc="int"), Sample((T(a((2, 1))), T(e((3,)))), desc="broadcast"),
            Sample((T(a((2, 3))), T(make(rng, (2, 3), dtype, low=-1, high=-1).clip(-3, 3))),
                   desc="negative tensor exponents"),
            Sample((T(a(())), T(e((2, 3)))), desc="0-d"), Sample((T(a((2, 3))), 2), desc="scalar exponent"),
            Sample((T(a((2, 3))), 0.5), desc="float scalar exponent"),
            Sample((T(a((2, 3))), T(e((2, 3)))), desc="operator **", fn=lambda m, x, y: x ** y)]


def _pow_errors(rng):
    return broadcast_error("pow", "exponent")(rng) + [
        E((T(make(rng, (2,), "int64")), -1), RuntimeError, "pow", "exponent", desc="int to negative int power"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "pow", desc="bool")]


add_pointwise("pow.Tensor_Tensor", "pow", dtypes=NUM, samples=_pow_samples, errors=_pow_errors, second_order=True,
           ioperator=_operator.ipow,
           inplace_dtypes=FLOAT, grad_tol=POW_GRAD_TOL)

for _nm in ("maximum", "minimum"):
    add(OpInfo(_nm, fn(_nm), binary_samples(scalars=(), ties=True), dtypes=ALL, grad=True,
               errors=broadcast_error(_nm)))


def _where_samples(rng, dtype):
    g = is_float(dtype)
    c = lambda shape: make(rng, shape, "bool")       # noqa: E731
    a = lambda shape: make(rng, shape, dtype)        # noqa: E731
    S = [Sample((T(c((2, 3))), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="same shape"),
         Sample((T(c((2, 1, 3))), T(a((4, 1)), grad=g), T(a((3,)), grad=g)), desc="broadcast"),
         Sample((T(c(())), T(a((2, 3)), grad=g), T(a(()), grad=g)), desc="0-d"),
         Sample((T(c((0, 3))), T(a((3,)), grad=g), T(a((0, 3)), grad=g)), desc="empty"),
         Sample((T(c((3, 2)), "t"), T(a((3, 2)), "t", grad=g), T(a((3, 2)), "s", grad=g)), desc="non-contiguous"),
         Sample((T(c((2, 3))), T(a((2, 3)), grad=g), 0), desc="python int other"),
         Sample((T(c((2, 3))), 1.5, T(a((2, 3)), grad=g)), desc="python float self"),
         Sample((T(c((2, 3))), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="method",
                fn=lambda m, cond, x, y: x.where(cond, y))]
    if dtype == "float32":
        S.append(Sample((T(c((2, 3))), T(make(rng, (2, 3), "int64")), T(a((2, 3)), grad=True)),
                        desc="mixed int64/float32"))
        S.append(Sample((T(c((2, 3))), T(make(rng, (2, 3), "float16"), grad=True), T(a(()), grad=True)),
                        desc="mixed float16/0-d float32"))
    return S


add(OpInfo("where.self", fn("where"), _where_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2,))), T(f32(rng, (2,))), T(f32(rng, (2,)))), RuntimeError, "where", "condition",
                 desc="float condition"),
               E((T(make(rng, (2,), "bool")), T(f32(rng, (2,))), T(f32(rng, (3,)))), RuntimeError, "where",
                 desc="shapes")]))


def _clamp_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-3, high=3)   # noqa: E731
    lo = lambda shape: make(rng, shape, dtype, low=-1, high=-0.5)  # noqa: E731
    hi = lambda shape: make(rng, shape, dtype, low=0.5, high=1)   # noqa: E731
    if not is_float(dtype):
        lo = lambda shape: np.full(shape, -1 if dtype != "uint8" else 1, NP_DTYPE[dtype])  # noqa: E731
        hi = lambda shape: np.full(shape, 2, NP_DTYPE[dtype])  # noqa: E731
    S = [Sample((T(a((2, 3)), grad=g), T(lo((2, 3)), grad=g), T(hi((2, 3)), grad=g)), desc="tensor bounds"),
         Sample((T(a((2, 3)), grad=g), T(lo((3,)), grad=g), None), desc="min only, broadcast"),
         Sample((T(a((2, 3)), grad=g), None, T(hi(()), grad=g)), desc="max only, 0-d"),
         Sample((T(a((2, 3)), grad=g), -1, 2), desc="python int bounds"),
         Sample((T(a((0, 3)), grad=g), T(lo((3,)), grad=g), T(hi((3,)), grad=g)), desc="empty"),
         Sample((T(a((3, 2)), "t", grad=g), T(lo((3, 2)), "s", grad=g), T(hi((3, 2)), grad=g)), desc="non-contiguous"),
         Sample((T(a(()), grad=g), T(lo(()), grad=g), T(hi(()), grad=g)), desc="0-d")]
    if g:
        S.append(Sample((T(a((2, 3)), grad=g), 0.5, -0.5), desc="min > max"))
        S.append(Sample((T(a((2, 3)), grad=g), T(hi((2, 3)), grad=g), T(lo((2, 3)), grad=g)), desc="min > max tensors"))
        S.append(Sample((T(a((2, 3)), grad=g), -0.25, 0.75), desc="python float bounds"))
    if dtype == "float32":
        S.append(Sample((T(make(rng, (2, 3), "int64")), 0.5, None), desc="int self float bound"))
        S.append(Sample((T(a((2, 3)), grad=True), T(make(rng, (3,), "float64", low=-1, high=-0.5), grad=True), None),
                        desc="mixed float32 self, float64 min"))
    return S


add_pointwise("clamp.Tensor", "clamp", dtypes=NUM, samples=_clamp_samples,
           errors=lambda rng: [E((T(f32(rng, (2,))), None, None), RuntimeError, "clamp", desc="no bounds"),
                               E((T(f32(rng, (2,))), "x", None), TypeError, "clamp", "min", desc="str bound"),
                               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))),
                                 NotImplementedError, "clamp", desc="bool, both bounds"),
                               E((T(make(rng, (2,), "bool")), True, None), NotImplementedError, "clamp",
                                 desc="bool, python bool bound")],
           inplace_dtypes=NUM)


def _one_bound_samples(side: int):
    """clamp_min's (side 1) or clamp_max's (side 2) samples: clamp's, with the one bound each takes (that
    side's, else the other's, so broadcast, mixed-dtype and scalar bounds all appear)."""
    def gen(rng, dtype):
        out = []
        for sample in _clamp_samples(rng, dtype):
            bound = sample.args[side] if sample.args[side] is not None else sample.args[3 - side]
            out.append(dataclasses.replace(sample, args=(sample.args[0], bound)))
        return out
    return gen


for _side, _nm in ((1, "clamp_min"), (2, "clamp_max")):
    add_pointwise(_nm, _nm, dtypes=NUM, samples=_one_bound_samples(_side), inplace_dtypes=NUM,
                  errors=lambda rng, _nm=_nm: [
                      E((T(f32(rng, (2,))), None), TypeError, _nm, desc="None bound"),
                      E((T(f32(rng, (2,))), "x"), TypeError, _nm, desc="str bound"),
                      E((T(make(rng, (2,), "bool")), True), NotImplementedError, _nm, desc="bool")])

# ---- nan_to_num: the unary samples, plus NaN and infinities with and without replacement values
def _nan_to_num_extra(rng, dtype):
    if not is_float(dtype):
        return []
    special = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], NP_DTYPE[dtype])
    return [Sample((T(special),), desc="nan and infinities"),
            Sample((T(special), 2.0, 100.0, -100.0), desc="replacement values"),
            Sample((T(special),), {"posinf": 1e6}, desc="posinf only")]


add_pointwise("nan_to_num", "nan_to_num", dtypes=ALL, samples=unary_samples(extra=_nan_to_num_extra),
              errors=lambda rng: [E((T(f32(rng, (2,))), "a"), TypeError, "nan_to_num", "nan", desc="str nan"),
                                  E((3.0,), TypeError, "nan_to_num", desc="number input")],
              inplace_errors=unary_inplace_errors("nan_to_num_"))

# ---- unary floating
_UNARY_FLOAT = {"exp": "any", "log": "positive", "sqrt": "positive", "rsqrt": "positive", "tanh": "any",
                "sigmoid": "any", "sin": "any", "cos": "any"}
for _nm, _dom in _UNARY_FLOAT.items():
    _extra = negatives if _dom == "positive" else None
    add_pointwise(_nm, _nm, dtypes=FLOAT + ("int64", "bool") if _dom == "any" else FLOAT + ("int64",),
               samples=unary_samples(domain=_dom, extra=_extra), errors=unary_errors(_nm),
               inplace_errors=unary_inplace_errors(_nm + "_", float_only=True), inplace_dtypes=FLOAT,
               second_order=_nm in ("tanh", "exp", "sigmoid"),
               inplace_samples=unary_samples(domain=_dom))

# more unary floating ops: name -> domain of the float samples
_UNARY_FLOAT_MORE = {"reciprocal": "nonzero", "log1p": "unit", "expm1": "any", "log2": "positive",
                     "log10": "positive", "exp2": "any", "sinh": "any", "cosh": "any", "asin": "unit",
                     "acos": "unit", "atan": "any", "asinh": "any", "acosh": "above1", "atanh": "unit",
                     "tan": "unit"}
for _nm, _dom in _UNARY_FLOAT_MORE.items():
    add_pointwise(_nm, _nm, dtypes=ALL, samples=unary_samples(domain=_dom, extra=negatives),
               errors=unary_errors(_nm), inplace_errors=unary_inplace_errors(_nm + "_", float_only=True),
               inplace_dtypes=FLOAT, second_order=_nm in ("reciprocal", "asin", "tan"),
               inplace_samples=unary_samples(domain=_dom),
               # torch 2.13 has no derivative for these in-place twins ("not implemented")
               inplace_xfail={("grad", None): f"torch 2.13 has no derivative for {_nm}_ (not implemented)"}
               if _nm in ("asinh", "acosh", "atanh") else None)


# deg2rad / rad2deg: a product with a constant, every dtype (integers and bools as the default float)
for _nm in ("deg2rad", "rad2deg"):
    add_pointwise(_nm, _nm, dtypes=ALL, samples=unary_samples(), errors=unary_errors(_nm),
                  inplace_errors=unary_inplace_errors(_nm + "_", float_only=True), inplace_dtypes=FLOAT,
                  inplace_samples=unary_samples())

# logaddexp / logaddexp2: floating only; equal infinities and -inf beside a finite value
def _log_add_extra(rng, dtype):
    a = np.array([np.inf, -np.inf, -np.inf, 3.0], NP_DTYPE[dtype])
    b = np.array([np.inf, -np.inf, 1.0, np.nan], NP_DTYPE[dtype])
    return [Sample((T(a), T(b)), desc="infinities and nan")]


def _log_add_samples(rng, dtype):
    other = "float64" if dtype != "float64" else "float32"
    mixed = Sample((T(make(rng, (2, 3), dtype), grad=True), T(make(rng, (3,), other), grad=True)), desc="mixed dtypes")
    return binary_samples(scalars=(), mixed=False)(rng, dtype) + _log_add_extra(rng, dtype) + [mixed]


for _nm in ("logaddexp", "logaddexp2"):
    add(OpInfo(_nm, fn(_nm), _log_add_samples, dtypes=FLOAT, grad=True,
               errors=lambda rng, _nm=_nm: broadcast_error(_nm)(rng)[:1] + [
                   E((T(make(rng, (2,), "int64")), T(make(rng, (2,), "int64"))), NotImplementedError, _nm,
                     desc="int64 operands")]))

def _square_extra(rng, dtype):
    return [Sample((T(make(rng, (2, 3), dtype), grad=is_float(dtype)),), desc="method",
                   fn=lambda m, x: x.square())]


add_pointwise("square", "square", dtypes=ALL, samples=unary_samples(extra=_square_extra), errors=unary_errors("square"),
           inplace_errors=lambda rng: unary_inplace_errors("square_")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "square_", desc="bool (int64 result)")],
           inplace_dtypes=NUM, second_order=True)

# ---- rounding
def _round_extra(rng, dtype):
    if not is_float(dtype):
        return [Sample((T(make(rng, (2, 3), dtype, low=-6, high=6)),), desc="wide ints")]
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan], NP_DTYPE[dtype])
    return [Sample((T(ties),), desc="halves, signed zeros, inf and nan"),
            Sample((T(make(rng, (2, 3), dtype, low=-40, high=40), grad=True),), desc="wide values")]


for _nm in ("floor", "ceil", "round", "trunc"):
    add_pointwise(_nm, _nm, dtypes=NUM, samples=unary_samples(extra=_round_extra),
               errors=lambda rng, _nm=_nm: unary_errors(_nm)(rng) + [
                   E((T(make(rng, (2,), "bool")),), NotImplementedError, _nm, desc="bool")],
               inplace_errors=lambda rng, _nm=_nm: unary_inplace_errors(_nm + "_")(rng) + [
                   E((T(make(rng, (2,), "bool")),), NotImplementedError, _nm, desc="bool")],
               inplace_samples=unary_samples())

add_pointwise("frac", "frac", dtypes=FLOAT, samples=unary_samples(extra=_round_extra),
           errors=lambda rng: unary_errors("frac")(rng) + [
               E((T(make(rng, (2,), "int64")),), NotImplementedError, "frac", desc="int64")],
           inplace_errors=lambda rng: unary_inplace_errors("frac_")(rng) + [
               E((T(make(rng, (2,), "int64")),), NotImplementedError, "frac", desc="int64")],
           inplace_samples=unary_samples())

# ---- binary math
add_pointwise("atan2", "atan2", dtypes=ALL, samples=binary_samples(scalars=()), inplace_dtypes=FLOAT)
def _hypot_samples(rng, dtype):
    S = binary_samples(scalars=(), mixed=False)(rng, dtype)
    if dtype == "float32":
        S.append(Sample((T(make(rng, (2, 3), "float16"), grad=True), T(make(rng, (2, 3), "float32"), grad=True)),
                        desc="mixed float16 x float32"))
    return S


add_pointwise("hypot", "hypot", dtypes=FLOAT, samples=_hypot_samples,
           errors=lambda rng: broadcast_error("hypot")(rng) + [
               E((T(make(rng, (2,), "int64")), T(make(rng, (2,), "int64"))), NotImplementedError, "hypot",
                 desc="int64")])


def _mod_samples(op_sym):
    def gen(rng, dtype):
        S = binary_samples(rhs_domain="nonzero", scalars=(2, 2.5, -3))(rng, dtype)
        g = is_float(dtype)
        a = make(rng, (2, 3), dtype, low=-6, high=6)
        b = make(rng, (2, 3), dtype, domain="nonzero")
        S.append(Sample((T(a, grad=g), T(b, grad=g)), desc="mixed signs"))
        if op_sym:
            S.append(Sample((T(a, grad=g), T(b, grad=g)), desc="operator %", fn=lambda m, x, y: x % y))
            # torch 2.13 has no derivative for remainder.Scalar_Tensor: values only
            S.append(Sample((T(b), 7), desc="reflected operator 7 % t", fn=lambda m, x, y: y % x))
        return S
    return gen


def _mod_errors(name):
    def errors(rng):
        return broadcast_error(name)(rng) + [
            # (an integer division by zero raises too, but only on a device with data: tests/test_errors.py)
            E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, name, desc="bool")]
    return errors


add_pointwise("fmod.Tensor", "fmod", dtypes=NUM, samples=_mod_samples(None), errors=_mod_errors("fmod"),
           inplace_dtypes=NUM)
add_pointwise("remainder.Tensor", "remainder", dtypes=NUM, samples=_mod_samples("%"), errors=_mod_errors("remainder"),
           inplace_dtypes=NUM, ioperator=_operator.imod)

add_pointwise("relu", "relu", dtypes=NUM, samples=unary_samples(
               extra=lambda rng, d: [Sample((T(np.array([-1, 0, 2], NP_DTYPE[d])),), desc="zero")]
               if d != "uint8" else []),
           errors=lambda rng: unary_errors("relu")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "relu", desc="bool")],
           inplace_errors=unary_inplace_errors("relu_"))

def _round_decimals_samples(rng, dtype):
    wide = make(rng, (2, 5), dtype, low=-40, high=40)
    return [Sample((T(wide),), {"decimals": 2}, desc="two decimals"),
            Sample((T(wide),), {"decimals": -1}, desc="tens"),
            Sample((T(wide),), {"decimals": 0}, desc="no decimals"),
            Sample((T(np.array([0.125, 0.375, -2.5, 12.345], NP_DTYPE[dtype])),), {"decimals": 2}, desc="ties"),
            Sample((T(make(rng, (), dtype, low=-40, high=40)),), {"decimals": 1}, desc="0-d"),
            Sample((T(make(rng, (0, 3), dtype)),), {"decimals": 1}, desc="empty"),
            Sample((T(make(rng, (3, 4), dtype, low=-40, high=40), "t"),), {"decimals": 1}, desc="transposed")]


add(OpInfo("round.decimals", fn("round"), _round_decimals_samples, dtypes=FLOAT,
           errors=lambda rng: [E((T(make(rng, (2,), "int64")),), NotImplementedError, "round", kwargs={"decimals": 1},
                                 desc="int64")]))
add(OpInfo("round_.decimals", method("round_"), _round_decimals_samples, dtypes=FLOAT, inplace=True,
           errors=lambda rng: [E((T(make(rng, (2,), "int64")),), NotImplementedError, "round", kwargs={"decimals": 1},
                                 desc="int64")]))


# ---- logit, sinc (composites of unary math), copysign, fmax/fmin
def _logit_samples(rng, dtype):
    """Probabilities inside (0, 1) (finite differences need them); the ends and values outside, not
    gradchecked; an eps that clamps."""
    g = is_float(dtype)
    p = lambda shape: make(rng, shape, dtype, low=0.05, high=0.95) if g else make(rng, shape, dtype)  # noqa: E731
    S = [Sample((T(p((2, 3)), grad=g),), desc="2-d"), Sample((T(p(()), grad=g),), desc="0-d"),
         Sample((T(p((0, 3)), grad=g),), desc="empty"), Sample((T(p((3, 2)), "t", grad=g),), desc="transposed")]
    if g:
        S += [Sample((T(np.array([0.0, 0.3, 1.0, 1.5, -0.5], NP_DTYPE[dtype])),), desc="ends and outside",
                     gradcheck=False),
              Sample((T(p((2, 3)), grad=True), 0.2), desc="eps clamps", gradcheck=False)]
    return S


add_pointwise("logit", "logit", dtypes=FLOAT + ("int64",), samples=_logit_samples,
              errors=unary_errors("logit"), inplace_errors=unary_inplace_errors("logit_", float_only=True),
              inplace_dtypes=FLOAT, inplace_samples=lambda rng, d: _logit_samples(rng, d)[:4])
add_pointwise("sinc", "sinc", dtypes=ALL, samples=unary_samples(
                  extra=lambda rng, d: [Sample((T(np.array([0.0, 1.0, -2.5], NP_DTYPE[d])),), desc="zero, integers")]
                  if is_float(d) else []),
              errors=unary_errors("sinc"), inplace_errors=unary_inplace_errors("sinc_", float_only=True),
              inplace_dtypes=FLOAT, inplace_samples=unary_samples())


def _copysign_extra(rng, dtype):
    if not is_float(dtype):
        return []
    signs = np.array([1.0, -0.0, 0.0, -3.0], NP_DTYPE[dtype])
    return [Sample((T(np.array([2.0, 2.0, -2.0, np.nan], NP_DTYPE[dtype])), T(signs)), desc="signed zeros, NaN",
                   gradcheck=False)]


def _copysign_samples(rng, dtype):
    return binary_samples(scalars=(-2, 2.5), ties=True)(rng, dtype) + _copysign_extra(rng, dtype)


add_pointwise("copysign", "copysign", dtypes=ALL, samples=_copysign_samples,
              inplace_dtypes=FLOAT)
for _nm in ("fmax", "fmin"):
    add(OpInfo(_nm, fn(_nm), lambda rng, dtype: binary_samples(scalars=(), ties=True)(rng, dtype) + (
        [Sample((T(np.array([1.0, np.nan, np.nan], NP_DTYPE[dtype])), T(np.array([np.nan, 2.0, np.nan],
                                                                                NP_DTYPE[dtype]))),
                desc="NaNs", gradcheck=False)] if is_float(dtype) else []), dtypes=ALL, grad=True,
               errors=broadcast_error(_nm)))
