"""Pointwise comparisons (eq ... ge, isclose), logical and bitwise ops, and the classification ops (isnan,
isinf, isfinite, signbit, isposinf, isneginf)."""
from __future__ import annotations

import operator as _operator

import numpy as np

from .samples import ALL, NP_DTYPE, OpInfo, Sample, T, fn, is_float, make, method
from .database import (E, add, add_pointwise, binary_samples, broadcast_error, f32, inplace_only, unary_errors,
                       unary_inplace_errors, unary_samples)


# ---- comparisons
for _nm in ("eq", "ne", "lt", "le", "gt", "ge"):
    _pyop = getattr(_operator, _nm)

    def _cmp_samples(rng, dtype, _pyop=_pyop, _nm=_nm):
        S = binary_samples(grad=False)(rng, dtype)
        x = make(rng, (2, 3), dtype)
        S.append(Sample((T(x), T(x.copy())), desc="equal values"))
        S.append(Sample((T(x), T(make(rng, (2, 3), dtype))), desc=f"operator {_nm}", fn=lambda m, a, b: _pyop(a, b)))
        if is_float(dtype):
            S.append(Sample((T(np.array([np.nan, 1.0, np.inf], NP_DTYPE[dtype])),
                             T(np.array([np.nan, np.nan, np.inf], NP_DTYPE[dtype]))), desc="nan and inf"))
        return S

    def _cmp_inplace(rng, dtype, _nm=_nm):
        return [s for s in inplace_only(binary_samples(grad=False), f"{_nm}_")(rng, dtype)]

    add(OpInfo(f"{_nm}.Tensor", fn(_nm), _cmp_samples, dtypes=ALL, errors=broadcast_error(_nm)))
    add(OpInfo(f"{_nm}_.Tensor", method(f"{_nm}_"), _cmp_inplace, dtypes=ALL, inplace=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, f"{_nm}_", desc="output shape")]))


# ---- isclose: tolerances in the operands' dtype (bfloat16 left out: torch rounds a Python tolerance to
# bfloat16 before adding it, ember adds it in float32 and rounds the sum, so a result on the boundary
# can differ; float16 rounds alike)
def _isclose_samples(rng, dtype):
    x = make(rng, (3, 4), dtype)
    near = x.astype(np.float64) * (1 + rng.standard_normal(x.shape) * 1e-3) if is_float(dtype) else x
    S = [Sample((T(x), T(np.asarray(near, NP_DTYPE[dtype]))), desc="near values"),
         Sample((T(x), T(make(rng, (3, 4), dtype))), {"rtol": 0.5, "atol": 0.25}, desc="loose tolerances"),
         Sample((T(x), T(make(rng, (4,), dtype))), {"rtol": 0.0, "atol": 0.0}, desc="broadcast, exact"),
         Sample((T(make(rng, (), dtype)), T(make(rng, (), dtype))), desc="0-d"),
         Sample((T(make(rng, (0, 4), dtype)), T(make(rng, (4,), dtype))), desc="empty"),
         Sample((T(x, "t"), T(np.asarray(near, NP_DTYPE[dtype]), "s")), desc="non-contiguous")]
    if is_float(dtype):
        special = np.array([np.nan, np.inf, np.inf, 1.0, -0.0], NP_DTYPE[dtype])
        other = np.array([np.nan, np.inf, -np.inf, np.nan, 0.0], NP_DTYPE[dtype])
        S += [Sample((T(special), T(other)), desc="nan and inf"),
              Sample((T(special), T(other)), {"equal_nan": True}, desc="equal_nan")]
    else:
        S.append(Sample((T(x), T(make(rng, (3, 4), dtype))), {"rtol": 0.4, "atol": 1.0},
                        desc="integers compared in float"))
    S.append(Sample((T(x), T(x.copy())), desc="method", fn=lambda m, a, b: a.isclose(b)))
    return S


add(OpInfo("isclose", fn("isclose"), _isclose_samples, dtypes=tuple(d for d in ALL if d != "bfloat16"),
           errors=lambda rng: [E((T(f32(rng, (2,))), T(make(rng, (2,), "float64"))), RuntimeError, "isclose",
                                 "did not match", desc="dtypes differ"),
                               E((T(f32(rng, (2,))), 1.0), TypeError, "isclose", "other", desc="number other"),
                               E((T(f32(rng, (2,))), T(f32(rng, (2,)))), RuntimeError, "isclose", "atol",
                                 kwargs={"atol": -1.0}, desc="negative atol"),
                               E((T(f32(rng, (2,))), T(f32(rng, (2,)))), RuntimeError, "isclose", "rtol",
                                 kwargs={"rtol": float("nan")}, desc="nan rtol"),
                               E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "isclose",
                                 desc="shapes do not broadcast")]))


# ---- logical, bitwise and classification ops
INTS_BOOL = ("int64", "int32", "uint8", "bool")


def _special_values(rng, dtype):
    """Zeros (False), and for floats signed zeros, infinities and NaN."""
    if is_float(dtype):
        v = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], NP_DTYPE[dtype])
    elif dtype == "bool":
        v = np.array([False, True, False])
    else:
        v = np.array([0, 1, 3, 0] if dtype == "uint8" else [0, -1, 3, 0], NP_DTYPE[dtype])
    return [Sample((T(v),), desc="zeros and special values")]


def _no_nan(rng, dtype):
    """The special values but NaN, whose sign bit depends on how each framework converts it."""
    (s,) = _special_values(rng, dtype)
    v = s.args[0].values
    return [Sample((T(v[~np.isnan(v.astype(np.float64))] if is_float(dtype) else v),), desc="special values but NaN")]


for _nm in ("isnan", "isinf", "isfinite", "signbit"):
    add(OpInfo(_nm, fn(_nm), unary_samples(grad=False, extra=_no_nan if _nm == "signbit" else _special_values),
               dtypes=ALL,
               errors=unary_errors(_nm)))

add_pointwise("logical_not", "logical_not", dtypes=ALL, grad=False, samples=unary_samples(grad=False, extra=_special_values),
           errors=unary_errors("logical_not"), inplace_errors=unary_inplace_errors("logical_not_"),
           inplace_samples=unary_samples(grad=False))


def _logical_samples(rng, dtype):
    S = binary_samples(grad=False, scalars=())(rng, dtype)
    a = _special_values(rng, dtype)[0].args[0]
    S.append(Sample((a, T(a.values[::-1].copy())), desc="zeros and special values"))
    return S


for _nm in ("logical_and", "logical_or", "logical_xor"):
    add_pointwise(_nm, _nm, dtypes=ALL, grad=False, samples=_logical_samples,
               inplace_samples=binary_samples(grad=False, scalars=()),
               inplace_errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, f"{_nm}_", desc="output shape")])


def _bitwise_samples(sym):
    import operator as _o
    fwd = {"&": _o.and_, "|": _o.or_, "^": _o.xor}[sym]

    def gen(rng, dtype):
        S = binary_samples(grad=False, scalars=(2, True), mixed=False)(rng, dtype)
        x, y = make(rng, (2, 3), dtype), make(rng, (2, 3), dtype)
        S.append(Sample((T(x), T(y)), desc=f"operator {sym}", fn=lambda m, a, b: fwd(a, b)))
        S.append(Sample((T(x), 3), desc=f"reflected operator 3 {sym} t", fn=lambda m, a, b: fwd(b, a)))
        if dtype in ("int64", "float32"):       # float32: the dtype the coverage test inspects
            for lt, rt, zero_d in (("int64", "int32", False), ("uint8", "int64", True), ("bool", "int64", False),
                                   ("int32", "uint8", False)):
                S.append(Sample((T(make(rng, (2, 3), lt)), T(make(rng, () if zero_d else (2, 3), rt))),
                                desc=f"mixed {lt} x {rt}{' 0-d' if zero_d else ''}"))
        return S
    return gen


def _bitwise_errors(name):
    def errors(rng):
        i64 = lambda shape: make(rng, shape, "int64")     # noqa: E731
        return [E((T(i64((2, 3))), T(i64((4,)))), RuntimeError, name, desc="shapes do not broadcast"),
                E((T(i64((2, 3))), "x"), TypeError, name, "other", desc="str operand"),
            E((T(f32(rng, (2,))), T(f32(rng, (2,)))), NotImplementedError, name, desc="float32"),
            E((T(make(rng, (2,), "int64")), 2.5), NotImplementedError, name, desc="python float operand")]
    return errors


for _nm, _sym, _iop in (("and", "&", _operator.iand), ("or", "|", _operator.ior), ("xor", "^", _operator.ixor)):
    add_pointwise(f"bitwise_{_nm}.Tensor", f"bitwise_{_nm}", dtypes=INTS_BOOL, grad=False,
               samples=_bitwise_samples(_sym), errors=_bitwise_errors(f"bitwise_{_nm}"), ioperator=_iop,
               inplace_errors=lambda rng, _nm=_nm: [
                   E((T(make(rng, (3,), "int64")), T(make(rng, (2, 3), "int64"))), RuntimeError, f"bitwise_{_nm}_",
                     desc="output shape != broadcast shape"),
                   E((T(make(rng, (2, 3), "bool")), T(make(rng, (2, 3), "int64"))), RuntimeError, f"bitwise_{_nm}_",
                     desc="int64 result into bool self"),
                   E((T(f32(rng, (2,))), T(f32(rng, (2,)))), NotImplementedError, f"bitwise_{_nm}", desc="float32")])

add_pointwise("bitwise_not", "bitwise_not", dtypes=INTS_BOOL, grad=False,
           samples=unary_samples(grad=False, extra=lambda rng, d: _special_values(rng, d) + [
               Sample((T(make(rng, (2, 3), d)),), desc="operator ~", fn=lambda m, x: ~x)]),
           errors=lambda rng: unary_errors("bitwise_not")(rng) + [
               E((T(f32(rng, (2,))),), NotImplementedError, "bitwise_not", desc="float32")],
           inplace_errors=lambda rng: unary_inplace_errors("bitwise_not_")(rng) + [
               E((T(f32(rng, (2,))),), NotImplementedError, "bitwise_not", desc="float32")],
           inplace_samples=unary_samples(grad=False))
def _signed_infinities(rng, dtype):
    return [Sample((T(np.array([np.inf, -np.inf, np.nan, 1.0], NP_DTYPE[dtype])),), desc="infinities")] \
        if is_float(dtype) else []


for _nm in ("isposinf", "isneginf"):
    add(OpInfo(_nm, fn(_nm), unary_samples(grad=False, extra=_signed_infinities), dtypes=ALL,
               errors=unary_errors(_nm)))


# ---- isin: a sort and a search
def _isin_samples(rng, dtype):
    pool = make(rng, (5,), dtype)
    S = [Sample((T(make(rng, (3, 4), dtype)), T(pool)), desc="2-d elements"),
         Sample((T(np.concatenate([pool[:2], make(rng, (2,), dtype)])), T(pool)), {"invert": True}, desc="invert"),
         Sample((T(make(rng, (3,), dtype)), T(np.zeros(0, NP_DTYPE[dtype]))), desc="no test element"),
         Sample((T(make(rng, (), dtype)), T(pool)), desc="0-d element"),
         Sample((T(pool[:3].copy()), T(make(rng, (2, 2), "float64"))), desc="mixed dtypes"),
         Sample((T(make(rng, (4, 3), dtype), "t"), T(pool[::2].copy())), desc="non-contiguous"),
         Sample((T(make(rng, (0, 2), dtype)), T(pool)), desc="empty elements"),
         Sample((T(pool), 1), desc="a number to look for")]
    if is_float(dtype):
        S.append(Sample((T(np.array([1.0, np.nan], NP_DTYPE[dtype])), T(np.array([np.nan, 1.0], NP_DTYPE[dtype]))),
                        desc="NaN occurs nowhere"))
    return S


add(OpInfo("isin", fn("isin"), _isin_samples, dtypes=("float32", "float64", "int64", "int32"),
           errors=lambda rng: [E((1, 2), TypeError, "isin", desc="two numbers"),
                               E((T(f32(rng, (2,))), "a"), TypeError, "isin", "test_elements", desc="str test")]))
