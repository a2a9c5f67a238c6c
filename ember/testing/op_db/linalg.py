"""Linear algebra: mm, bmm, matmul, addmm, mv, addmv, addr, baddbmm, addbmm, inner, kron, trace, outer;
pairwise distances cdist, pdist."""
from __future__ import annotations

import numpy as np

from ..tolerances import LINALG_TOL
from .samples import NP_DTYPE, OpInfo, Sample, T, aten, fn, is_float, make
from .database import E, add, f32


def _mm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="2x3 @ 3x4"),
            Sample((T(a((2, 3)), "t", grad=g), T(a((3, 4)), "s", grad=g)), desc="non-contiguous"),
            Sample((T(a((0, 3)), grad=g), T(a((3, 2)), grad=g)), desc="empty rows"),
            Sample((T(a((2, 0)), grad=g), T(a((0, 3)), grad=g)), desc="empty inner: zeros"),
            Sample((T(a((1, 1)), grad=g), T(a((1, 1)), grad=g)), desc="1x1")]


_LINALG_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64")
add(OpInfo("mm", fn("mm"), _mm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))), RuntimeError, "mm", desc="inner sizes"),
               E((T(f32(rng, (3,))), T(f32(rng, (3, 2)))), RuntimeError, "mm", desc="1-d"),
               E((T(f32(rng, (2, 3))), T(make(rng, (3, 2), "float64"))), RuntimeError, "mm", desc="dtypes differ"),
               E((T(make(rng, (2, 3), "bool")), T(make(rng, (3, 2), "bool"))), NotImplementedError, "mm",
                 desc="bool")]))


def _bmm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((2, 2, 3)), grad=g), T(a((2, 3, 2)), grad=g)), desc="batch 2"),
            Sample((T(a((2, 2, 3)), "t", grad=g), T(a((2, 3, 1)), grad=g)), desc="transposed"),
            Sample((T(a((0, 2, 3)), grad=g), T(a((0, 3, 2)), grad=g)), desc="empty batch")]


add(OpInfo("bmm", fn("bmm"), _bmm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 2, 3))), T(f32(rng, (3, 3, 2)))), RuntimeError, "bmm", desc="batch sizes"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (3, 2)))), RuntimeError, "bmm", desc="2-d"),
               E((T(make(rng, (1, 2, 2), "bool")), T(make(rng, (1, 2, 2), "bool"))), NotImplementedError, "bmm",
                 desc="bool")]))


def _matmul_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((3,)), grad=g), T(a((3,)), grad=g)), desc="1-d . 1-d"),
            Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g)), desc="2-d @ 1-d"),
            Sample((T(a((3,)), grad=g), T(a((3, 2)), grad=g)), desc="1-d @ 2-d"),
            Sample((T(a((2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="2-d @ 2-d"),
            Sample((T(a((2, 2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="3-d @ 2-d"),
            Sample((T(a((2, 2, 3)), grad=g), T(a((3,)), grad=g)), desc="3-d @ 1-d"),
            Sample((T(a((3,)), grad=g), T(a((2, 3, 2)), grad=g)), desc="1-d @ 3-d"),
            Sample((T(a((2, 3)), grad=g), T(a((2, 3, 2)), grad=g)), desc="2-d @ 3-d"),
            Sample((T(a((2, 1, 2, 3)), grad=g), T(a((3, 3, 2)), grad=g)), desc="batch broadcast"),
            Sample((T(a((2, 3)), "t", grad=g), T(a((3, 2)), grad=g)), desc="transposed"),
            Sample((T(a((0, 3)), grad=g), T(a((3,)), grad=g)), desc="empty"),
            Sample((T(a((2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="operator @", fn=lambda m, x, y: x @ y)]


add(OpInfo("matmul", fn("matmul"), _matmul_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))), RuntimeError, "matmul", desc="inner sizes"),
               E((T(f32(rng, ())), T(f32(rng, (3,)))), RuntimeError, "matmul", desc="0-d"),
               E((T(make(rng, (2, 2), "bool")), T(make(rng, (2, 2), "bool"))), NotImplementedError, "matmul",
                 desc="bool")]))


def _dot_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((5,)), grad=g), T(a((5,)), grad=g)), desc="5"),
            Sample((T(a((3,)), "s", grad=g), T(a((3,)), grad=g)), desc="every other element"),
            Sample((T(a((0,)), grad=g), T(a((0,)), grad=g)), desc="empty")]


def _dot_errors(name: str):
    return lambda rng: [
        E((T(f32(rng, (2, 3))), T(f32(rng, (3,)))), RuntimeError, name, "1D", desc="2-d"),
        E((T(f32(rng, (3,))), T(f32(rng, (4,)))), RuntimeError, name, desc="sizes differ"),
        E((T(f32(rng, (3,))), T(make(rng, (3,), "float64"))), RuntimeError, name, desc="dtypes differ"),
        E((T(make(rng, (3,), "bool")), T(make(rng, (3,), "bool"))), NotImplementedError, name, desc="bool")]


for _name in ("dot", "vdot"):
    add(OpInfo(_name, fn(_name), _dot_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
               errors=_dot_errors(_name)))


def _addmm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    S = [Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="plain"),
         Sample((T(a((4,)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="broadcast self"),
         Sample((T(a((2, 4)), grad=g), T(a((2, 3)), "t", grad=g), T(a((3, 4)), grad=g)), desc="transposed")]
    S.append(Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)),
                    {"beta": 2, "alpha": 3} if not g else {"beta": 0.5, "alpha": 2.0}, desc="beta, alpha"))
    S.append(Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), {"beta": 0},
                    desc="beta 0"))
    return S


add(OpInfo("addmm", fn("addmm"), _addmm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 4))), T(f32(rng, (2, 3))), T(f32(rng, (2, 4)))), RuntimeError, "addmm",
                 desc="inner sizes"),
               E((T(f32(rng, (3, 3))), T(f32(rng, (2, 3))), T(f32(rng, (3, 4)))), RuntimeError, "addmm",
                 desc="self shape")]))




# ---- pairwise distances
_P_VALUES = (0.0, 1.0, 2.0, 3.5, float("inf"))
_DIST_DTYPES = ("float32", "float64")    # torch's cpu kernels have no float16/bfloat16 cdist (ember does)


def _cdist_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    S = [Sample((T(a((3, 4)), grad=g and p not in (0.0,)), T(a((2, 4)), grad=g and p not in (0.0,)), p), desc=f"p={p}")
         for p in _P_VALUES]
    # no grad: torch 2.13's cdist backward crashes (segfault) on broadcast batch dimensions
    S += [Sample((T(a((2, 1, 3, 2))), T(a((2, 4, 2)))), desc="broadcast batch"),
          Sample((T(a((4, 3)), "t", grad=g), T(a((2, 3)), grad=g)), desc="transposed x1"),
          Sample((T(a((0, 3)), grad=g), T(a((2, 3)), grad=g)), desc="no rows")]
    return S


def _cdist_errors(rng):
    return [E((T(f32(rng, (4,))), T(f32(rng, (2, 4)))), RuntimeError, "cdist", "2D", desc="1-d"),
            E((T(make(rng, (3, 4), "int64")), T(make(rng, (2, 4), "int64"))), RuntimeError, "cdist", "floating",
              desc="int"),
            E((T(f32(rng, (3, 4))), T(f32(rng, (2, 5)))), RuntimeError, "cdist", "columns", desc="columns"),
            E((T(f32(rng, (3, 4))), T(f32(rng, (2, 4))), -1.0), RuntimeError, "cdist", "non-negative",
              desc="negative p"),
            E((T(f32(rng, (3, 4))), T(make(rng, (2, 4), "float64"))), RuntimeError, "cdist", desc="dtypes differ")]


add(OpInfo("cdist", fn("cdist"), _cdist_samples, dtypes=_DIST_DTYPES, grad=True, tol=LINALG_TOL, errors=_cdist_errors))
add(OpInfo("_cdist_forward", fn("_cdist_forward"), lambda rng, dtype: [
    Sample(s.args + (2.0, None)[len(s.args) - 2:], desc=s.desc) for s in _cdist_samples(rng, dtype)],
    dtypes=_DIST_DTYPES, grad=True, tol=LINALG_TOL, torch_call=aten("_cdist_forward"),
    errors=lambda rng: [E((T(f32(rng, (3, 4))), T(f32(rng, (2, 5))), 2.0, None), RuntimeError, "cdist", "columns",
                          desc="columns")]))


def _pdist_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return ([Sample((T(a((4, 3)), grad=g and p != 0.0), p), desc=f"p={p}") for p in _P_VALUES] +
            [Sample((T(a((3, 4)), "t", grad=g),), desc="transposed"),
             Sample((T(a((1, 3)), grad=g),), desc="one row: empty"),
             Sample((T(a((0, 3))),), desc="no rows")])     # no grad: torch 2.13's backward segfaults here


add(OpInfo("pdist", fn("pdist"), _pdist_samples, dtypes=_DIST_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3, 4))),), RuntimeError, "pdist", "2D", desc="3-d"),
                               E((T(f32(rng, (3, 4))), -2.0), RuntimeError, "pdist", desc="negative p")]))
add(OpInfo("_pdist_forward", fn("_pdist_forward"), lambda rng, dtype: [
    Sample(s.args[:1] + (s.args[1] if len(s.args) > 1 else 2.0,), desc=s.desc) for s in _pdist_samples(rng, dtype)
    if s.args[0].layout == "c"],            # torch's _pdist_forward requires contiguous input
    dtypes=_DIST_DTYPES, grad=True, tol=LINALG_TOL, torch_call=aten("_pdist_forward"),
    errors=lambda rng: [E((T(make(rng, (3, 4), "int64")), 2.0), NotImplementedError, "pdist", desc="int")]))


# ---- trace and outer (composites of diagonal + sum, and of a broadcast product)
def _trace_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((T(make(rng, (3, 3), dtype), grad=g),), desc="square"),
            Sample((T(make(rng, (2, 4), dtype), grad=g),), desc="wide"),
            Sample((T(make(rng, (4, 2), dtype), "t", grad=g),), desc="transposed"),
            Sample((T(make(rng, (0, 3), dtype), grad=g),), desc="empty"),
            Sample((T(make(rng, (2, 2), dtype), grad=g),), desc="method", fn=lambda m, a: a.trace())]


def _outer_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((T(make(rng, (3,), dtype), grad=g), T(make(rng, (4,), dtype), grad=g)), desc="vectors"),
            Sample((T(make(rng, (0,), dtype), grad=g), T(make(rng, (2,), dtype), grad=g)), desc="empty"),
            Sample((T(make(rng, (3,), dtype), grad=g), T(make(rng, (2,), "int64"))), desc="mixed dtypes"),
            Sample((T(make(rng, (2,), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)), desc="ger",
                   fn=lambda m, a, b: m.ger(a, b))]


add(OpInfo("trace", fn("trace"), _trace_samples, dtypes=("float32", "float64", "int64", "int32"), grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 2, 2))),), RuntimeError, "trace", "matrix", desc="3-d"),
                               E((T(make(rng, (2, 2), "bool")),), NotImplementedError, "trace", desc="bool")]))
add(OpInfo("outer", fn("outer"), _outer_samples, dtypes=("float32", "float64", "int64"), grad=True,
           errors=lambda rng: [E((T(f32(rng, (2,))), T(f32(rng, (2, 1)))), RuntimeError, "outer", "1-D",
                                 desc="2-d vec2"),
                               E((T(f32(rng, (2,))), 3.0), TypeError, "outer", desc="number vec2")]))


# ---- matrix-vector, add-product and Kronecker compositions
def _g(dtype):
    return is_float(dtype)


def _mv_samples(rng, dtype):
    g = _g(dtype)
    return [Sample((T(make(rng, (3, 4), dtype), grad=g), T(make(rng, (4,), dtype), grad=g)), desc="matrix, vector"),
            Sample((T(make(rng, (4, 3), dtype), "t", grad=g), T(make(rng, (3,), dtype), grad=g)), desc="transposed"),
            Sample((T(make(rng, (0, 2), dtype), grad=g), T(make(rng, (2,), dtype), grad=g)), desc="empty")]


def _addmv_samples(rng, dtype):
    g = _g(dtype)
    m, v = T(make(rng, (3, 4), dtype), grad=g), T(make(rng, (4,), dtype), grad=g)
    S = [Sample((T(make(rng, (3,), dtype), grad=g), m, v), desc="plain"),
         Sample((T(make(rng, (1,), dtype), grad=g), m, v), {"beta": 2, "alpha": 3}, desc="broadcast self, scalars")]
    if is_float(dtype):
        S.append(Sample((T(np.full(3, np.nan, NP_DTYPE[dtype])), m, v), {"beta": 0}, desc="beta 0 ignores NaN"))
    return S


def _addr_samples(rng, dtype):
    g = _g(dtype)
    return [Sample((T(make(rng, (3, 2), dtype), grad=g), T(make(rng, (3,), dtype), grad=g),
                    T(make(rng, (2,), dtype), grad=g)), desc="plain"),
            Sample((T(make(rng, (2,), dtype), grad=g), T(make(rng, (3,), dtype), grad=g),
                    T(make(rng, (2,), dtype), grad=g)), {"beta": 0.5 if g else 2, "alpha": 2}, desc="broadcast, scalars")]


def _baddbmm_samples(rng, dtype):
    g = _g(dtype)
    b1, b2 = T(make(rng, (2, 2, 3), dtype), grad=g), T(make(rng, (2, 3, 2), dtype), grad=g)
    return [Sample((T(make(rng, (2, 2, 2), dtype), grad=g), b1, b2), desc="plain"),
            Sample((T(make(rng, (2, 2), dtype), grad=g), b1, b2), {"beta": 0.5 if g else 2}, desc="broadcast self")]


def _addbmm_samples(rng, dtype):
    g = _g(dtype)
    b1, b2 = T(make(rng, (2, 2, 3), dtype), grad=g), T(make(rng, (2, 3, 2), dtype), grad=g)
    return [Sample((T(make(rng, (2, 2), dtype), grad=g), b1, b2), desc="plain"),
            Sample((T(make(rng, (2,), dtype), grad=g), b1, b2), {"alpha": 2}, desc="broadcast self")]


def _inner_samples(rng, dtype):
    g = _g(dtype)
    return [Sample((T(make(rng, (4,), dtype), grad=g), T(make(rng, (4,), dtype), grad=g)), desc="vectors"),
            Sample((T(make(rng, (2, 3, 4), dtype), grad=g), T(make(rng, (5, 4), dtype), grad=g)), desc="batched"),
            Sample((T(make(rng, (), dtype), grad=g), T(make(rng, (2, 3), dtype), grad=g)), desc="0-d operand")]


def _kron_samples(rng, dtype):
    g = _g(dtype)
    return [Sample((T(make(rng, (2, 2), dtype), grad=g), T(make(rng, (2, 3), dtype), grad=g)), desc="matrices"),
            Sample((T(make(rng, (3,), dtype), grad=g), T(make(rng, (2, 2), dtype), grad=g)), desc="aligned right"),
            Sample((T(make(rng, (), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)), desc="0-d operand"),
            Sample((T(make(rng, (2, 2), dtype), grad=g), T(make(rng, (2,), "float64"))), desc="mixed dtypes")]


_PRODUCTS = ("float32", "float64", "int64")
add(OpInfo("mv", fn("mv"), _mv_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (2,)))), RuntimeError, "mv", "size mismatch",
                                 desc="sizes"),
                               E((T(f32(rng, (2,))), T(f32(rng, (2,)))), RuntimeError, "mv", desc="vector self")]))
add(OpInfo("addmv", fn("addmv"), _addmv_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2,))), T(f32(rng, (2, 3))), T(f32(rng, (2,)))), RuntimeError, "addmv",
                                 desc="sizes")]))
add(OpInfo("addr", fn("addr"), _addr_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 2))), T(f32(rng, (2, 1))), T(f32(rng, (2,)))), RuntimeError, "addr",
                                 desc="2-d vec1")]))
add(OpInfo("baddbmm", fn("baddbmm"), _baddbmm_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (3, 2, 2))), T(f32(rng, (2, 2, 3))), T(f32(rng, (2, 3, 2)))),
                                 RuntimeError, "baddbmm", desc="self does not expand")]))
add(OpInfo("addbmm", fn("addbmm"), _addbmm_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 2))), T(f32(rng, (4, 2, 3))), T(f32(rng, (3, 3, 2)))),
                                 RuntimeError, "addbmm", "batches", desc="batch counts differ")]))
add(OpInfo("inner", fn("inner"), _inner_samples, dtypes=_PRODUCTS, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (2,)))), RuntimeError, "inner", "last dimension",
                                 desc="last dims differ")]))
add(OpInfo("kron", fn("kron"), _kron_samples, dtypes=_PRODUCTS, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2,))), 2.0), TypeError, "kron", desc="number other")]))
