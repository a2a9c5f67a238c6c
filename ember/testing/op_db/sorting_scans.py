"""Sorting, scans and extra reductions: sort/argsort/topk, cumsum/cumprod, prod, logsumexp,
any/all, var/std/var_mean, norm."""
from __future__ import annotations

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import ALL, DT, FLOAT, NP_DTYPE, NUM, OpInfo, Sample, T, fn, is_float, make, method
from .database import E, add, f32, reduce_inputs


def distinct(rng, shape, dtype):
    """Values without ties (exact in every dtype), so sort orders and gradients are unique."""
    n = int(np.prod(shape)) if shape else 1
    v = rng.permutation(n).reshape(shape)
    if dtype == "bool":
        return v % 2 == 0
    if is_float(dtype):
        return (v * 0.25 - n / 8).astype(NP_DTYPE[dtype])
    return (v if dtype == "uint8" else v - n // 2).astype(NP_DTYPE[dtype])


def _inputs(rng, dtype, g, *, empty=True, zero_d=True):
    d = lambda shape: distinct(rng, shape, dtype)   # noqa: E731
    ins = [(T(d((2, 3)), grad=g), "2-d"), (T(d((2, 1, 4)), grad=g), "3-d"),
           (T(d((3, 2)), "t", grad=g), "transposed"), (T(d((2, 4)), "s", grad=g), "strided")]
    if zero_d:
        ins.append((T(d(()), grad=g), "0-d"))
    if empty:
        ins.append((T(d((0, 3)), grad=g), "empty"))
    return ins


def _dim_errors(name, *args):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))), *args), IndexError, name, desc="dim out of range"),
                E(("x", 0, *args[1:]) if args else ("x",), TypeError, name, desc="str input")]
    return errors


# ---------------------------------------------------------------------------------- sort
def _sort_samples(stable):
    def gen(rng, dtype):
        g = is_float(dtype)
        kw = {"stable": True} if stable else {}
        S = []
        for t, desc in _inputs(rng, dtype, g):
            for dim in (0, -1):
                for desc_ in (False, True):
                    S.append(Sample((t,), {**kw, "dim": dim, "descending": desc_},
                                    desc=f"{desc} dim={dim} descending={desc_}"))
        S.append(Sample((T(distinct(rng, (2, 3), dtype), grad=g),), kw, desc="defaults"))
        if stable:
            ties = np.array([[1, 0, 1, 1, 0], [2, 2, 1, 1, 2]]).astype(NP_DTYPE[dtype])
            for desc_ in (False, True):
                S.append(Sample((T(ties, grad=g),), {**kw, "descending": desc_}, desc=f"ties desc={desc_}",
                                gradcheck=False))
        if g:
            nan = np.array([1.0, np.nan, -1.0, np.inf, -np.inf]).astype(NP_DTYPE[dtype])
            for desc_ in (False, True):
                S.append(Sample((T(nan),), {**kw, "descending": desc_}, desc=f"nan and inf desc={desc_}"))
        return S
    return gen


add(OpInfo("sort.stable", fn("sort"), _sort_samples(True), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))),), IndexError, "sort", kwargs={"stable": True, "dim": 2},
                                 desc="dim out of range"),
                               E(("x",), TypeError, "sort", kwargs={"stable": True}, desc="str input")]))
add(OpInfo("sort", fn("sort"), _sort_samples(False), dtypes=NUM, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 2), IndexError, "sort", desc="dim out of range"),
                               E(("x",), TypeError, "sort", desc="str input")]))


def _argsort_samples(stable):
    def gen(rng, dtype):
        kw = {"stable": True} if stable else {}
        S = [Sample((t,), {**kw, "dim": dim, "descending": dd}, desc=f"{desc} dim={dim} descending={dd}")
             for t, desc in _inputs(rng, dtype, False) for dim in (0, -1) for dd in (False, True)]
        if stable:
            ties = np.array([[1, 0, 1, 1, 0], [2, 2, 1, 1, 2]]).astype(NP_DTYPE[dtype])
            S += [Sample((T(ties),), {**kw, "descending": dd}, desc=f"ties desc={dd}") for dd in (False, True)]
        return S
    return gen


add(OpInfo("argsort.stable", fn("argsort"), _argsort_samples(True), dtypes=ALL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))),), IndexError, "argsort", kwargs={"stable": True, "dim": 2},
                                 desc="dim out of range")]))
add(OpInfo("argsort", fn("argsort"), _argsort_samples(False), dtypes=NUM, errors=_dim_errors("argsort", 2)))


def _topk_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _inputs(rng, dtype, g, empty=False, zero_d=False):
        for dim in (0, -1):
            for largest in (True, False):
                S.append(Sample((t, 2, dim, largest), desc=f"{desc} dim={dim} largest={largest}"))
    S.append(Sample((T(distinct(rng, (2, 3), dtype), grad=g), 0), desc="k=0"))
    S.append(Sample((T(distinct(rng, (2, 3), dtype), grad=g), 3), desc="k=size"))
    S.append(Sample((T(distinct(rng, (), dtype), grad=g), 1), desc="0-d"))
    S.append(Sample((T(distinct(rng, (0, 3), dtype), grad=g), 2, 1), desc="empty"))
    S.append(Sample((T(distinct(rng, (2, 5), dtype), grad=g), 3), desc="sorted=False (compared sorted)",
                    fn=lambda m, x, k: m.sort(m.topk(x, k, sorted=False).values).values))
    return S


add(OpInfo("topk", fn("topk"), _topk_samples, dtypes=NUM, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 4), RuntimeError, "topk", "k", desc="k > size"),
                               E((T(f32(rng, (2, 3))), -1), RuntimeError, "topk", "k", desc="k < 0"),
                               E((T(f32(rng, (2, 3))), 1, 2), IndexError, "topk", desc="dim out of range")]))


# ---------------------------------------------------------------------------------- scans
def _scan_samples(*, zeros=False, inplace=False):
    def gen(rng, dtype):
        g = is_float(dtype)
        a = lambda shape: make(rng, shape, dtype, low=-1.5, high=1.5)   # noqa: E731
        ins = [(T(a((2, 5)), grad=g), "2-d"), (T(a((2, 1, 3)), grad=g), "3-d"), (T(a(()), grad=g), "0-d"),
               (T(a((0, 3)), grad=g), "empty"), (T(a((4, 2)), "t", grad=g), "transposed"),
               (T(a((2, 3)), "s", grad=g), "strided")]
        if not inplace:
            ins.append((T(a((3, 1)), "e", grad=g, expand=(3, 4)), "expanded"))
        S = [Sample((t, dim), desc=f"{desc} dim={dim}") for t, desc in ins for dim in (0, -1)]
        if zeros and g:
            x = a((2, 5))
            x[0, 2] = 0
            x[1, 1] = x[1, 3] = 0
            S.append(Sample((T(x, grad=g), 1), desc="zeros (one and two per row)"))
        if not inplace:
            S.append(Sample((T(a((2, 3)), grad=g), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
        return S
    return gen


for _nm, _zeros in (("cumsum", False), ("cumprod", True)):
    add(OpInfo(_nm, fn(_nm), _scan_samples(zeros=_zeros), dtypes=ALL, grad=True, tol=REDUCTION_TOL,
               errors=_dim_errors(_nm, 2)))
    add(OpInfo(f"{_nm}_", method(f"{_nm}_"), _scan_samples(zeros=_zeros, inplace=True), dtypes=NUM, grad=True,
               inplace=True, tol=REDUCTION_TOL,
               errors=lambda rng, _nm=_nm: [E((T(f32(rng, (2, 3))), 2), IndexError, _nm + "_",
                                              desc="dim out of range")]))


# ------------------------------------------------------------------------------ reductions


def _prod_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g):
        for dim in (0, -1):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (2, 5), dtype), grad=g), 1), desc="odd length"))
    if g:
        x = make(rng, (3, 4), dtype)
        x[0, 1] = 0
        x[1, 0] = x[1, 2] = 0
        S.append(Sample((T(x, grad=g), 1), desc="zeros (one and two per row)"))
    S.append(Sample((T(make(rng, (2, 3), dtype)), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    return S


def _prod_all_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((t,), desc=desc) for t, desc in reduce_inputs(rng, dtype, g)]
    if g:
        x = make(rng, (2, 3), dtype)
        x[1, 1] = 0
        S.append(Sample((T(x, grad=g),), desc="one zero"))
    S.append(Sample((T(make(rng, (2, 3), dtype)),), {"dtype": DT("float64")}, desc="dtype=float64"))
    return S


add(OpInfo("prod.dim_int", fn("prod"), _prod_samples, dtypes=ALL, grad=True, tol=REDUCTION_TOL,
           errors=_dim_errors("prod", 2)))
add(OpInfo("prod", fn("prod"), _prod_all_samples, dtypes=ALL, grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [E(("x",), TypeError, "prod", desc="str input")]))


def _lse_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g):
        for dim in ((0,), -1, (0, -1) if t.values.ndim >= 2 else 0):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    if g:
        x = make(rng, (2, 3), dtype, low=-30, high=30)
        S.append(Sample((T(x, grad=g), 1), desc="large values (stability)"))
        y = np.array([[-np.inf, -np.inf], [1.0, -np.inf]]).astype(NP_DTYPE[dtype])
        S.append(Sample((T(y), 1), desc="-inf rows"))
    return S


add(OpInfo("logsumexp", fn("logsumexp"), _lse_samples, dtypes=NUM, grad=True, tol=REDUCTION_TOL,
           errors=_dim_errors("logsumexp", 2)))


def _any_all_samples(kind):
    def gen(rng, dtype):
        S = []
        ins = reduce_inputs(rng, dtype, False)
        zeros = np.zeros((2, 3), NP_DTYPE[dtype])
        ones = np.ones((2, 3), NP_DTYPE[dtype])
        ins += [(T(zeros), "all zero"), (T(ones), "all one")]
        for t, desc in ins:
            if kind == "full":
                S.append(Sample((t,), desc=desc))
                continue
            dims = (0, -1) if kind == "dim" else (None, (0,), (0, -1) if t.values.ndim >= 2 else 0)
            for dim in dims:
                for keepdim in (False, True):
                    S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
        return S
    return gen


for _nm in ("any", "all"):
    add(OpInfo(_nm, fn(_nm), _any_all_samples("full"), dtypes=ALL,
               errors=lambda rng, _nm=_nm: [E(("x",), TypeError, _nm, desc="str input")]))
    add(OpInfo(f"{_nm}.dim", fn(_nm), _any_all_samples("dim"), dtypes=ALL, errors=_dim_errors(_nm, 2)))
    add(OpInfo(f"{_nm}.dims", fn(_nm), _any_all_samples("dims"), dtypes=ALL,
               errors=lambda rng, _nm=_nm: [E((T(f32(rng, (2, 3))), (0, 2)), IndexError, _nm,
                                              desc="dim out of range")]))


def _var_samples(overload):
    def gen(rng, dtype):
        S = []
        for t, desc in reduce_inputs(rng, dtype, True, empty=False):
            nd = t.values.ndim
            if overload == "correction":
                for dim in (None, 0, (0, -1) if nd >= 2 else -1):
                    for corr in (None, 0, 1.5):
                        S.append(Sample((t,), {"dim": dim, "correction": corr, "keepdim": dim == 0},
                                        desc=f"{desc} dim={dim} correction={corr}", gradcheck=nd > 0 or corr == 0))
            elif overload == "dim":
                for dim in (0, -1):
                    for unbiased in (True, False):
                        S.append(Sample((t, dim, unbiased, True), desc=f"{desc} dim={dim} unbiased={unbiased}",
                                        gradcheck=nd > 0 or not unbiased))
            else:
                S.append(Sample((t,), {"unbiased": False}, desc=desc))
                S.append(Sample((t,), {"unbiased": True}, desc=desc + " unbiased", gradcheck=nd > 0))
        if overload == "correction":
            S.append(Sample((T(make(rng, (0, 3), dtype)),), {"dim": 1}, desc="empty"))
            S.append(Sample((T(np.full((2, 3), 1.5, NP_DTYPE[dtype]), grad=True),), {"dim": 1},
                            desc="constant rows (std 0)"))
        return S
    return gen


def _var_errors(name, *args):
    def errors(rng):
        return [E((T(make(rng, (2, 3), "int64")), *args), RuntimeError, name, desc="int input"),
                E((T(f32(rng, (2, 3))), 2), IndexError, name, desc="dim out of range")]
    return errors


for _nm in ("var", "std"):
    add(OpInfo(f"{_nm}.correction", fn(_nm), _var_samples("correction"), dtypes=FLOAT, grad=True,
               tol=REDUCTION_TOL, errors=_var_errors(_nm)))
    add(OpInfo(f"{_nm}.dim", fn(_nm), _var_samples("dim"), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
               errors=_var_errors(_nm, 0)))
    add(OpInfo(_nm, fn(_nm), _var_samples("all"), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
               errors=lambda rng, _nm=_nm: [E((T(make(rng, (2, 3), "int64")),), RuntimeError, _nm,
                                              kwargs={"unbiased": False}, desc="int input")]))
add(OpInfo("var_mean.correction", fn("var_mean"), lambda rng, d: [
    s for s in _var_samples("correction")(rng, d) if s.desc != "constant rows (std 0)"], dtypes=FLOAT, grad=True,
    tol=REDUCTION_TOL, errors=_var_errors("var_mean")))


def _norm_samples(full):
    def gen(rng, dtype):
        S = []
        for t, desc in reduce_inputs(rng, dtype, True, empty=False):
            nd = t.values.ndim
            for p in (2, 1, float("inf"), -float("inf"), 0, 3, 0.5, "fro"):
                ties = p in (float("inf"), -float("inf")) and t.layout == "e"
                if full:
                    S.append(Sample((t, p), desc=f"{desc} p={p}", gradcheck=not ties))
                else:
                    S.append(Sample((t, p, 0 if nd < 2 else (0, 1), nd >= 2), desc=f"{desc} p={p} dims",
                                    gradcheck=not ties))
        S.append(Sample((T(make(rng, (0, 3), dtype), grad=True), 2, 1) if not full else
                        (T(make(rng, (0, 3), dtype), grad=True),), desc="empty"))
        zero = np.zeros((2, 3), NP_DTYPE[dtype])
        zero[1] = make(rng, (3,), dtype)
        for p in (2, 3):
            S.append(Sample((T(zero, grad=True), p, 1), desc=f"a zero row p={p}", gradcheck=False))
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=True),), desc="method", fn=lambda m, x: x.norm()))
        return S
    return gen


_norm_errors = lambda rng: [E((T(make(rng, (2, 3), "int64")),), RuntimeError, "norm", desc="int input"),  # noqa
                            E((T(f32(rng, (2, 3))), 2, 2), IndexError, "norm", desc="dim out of range")]
add(OpInfo("norm.Scalar", fn("norm"), _norm_samples(True), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_norm_errors))
add(OpInfo("norm.ScalarOpt_dim", fn("norm"), _norm_samples(False), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_norm_errors))


# ---- searchsorted / bucketize: one stable sort of a row and its values together
def _sorted_row(rng, dtype, shape):
    return np.sort(make(rng, shape, dtype), axis=-1)


def _searchsorted_samples(rng, dtype):
    row = T(_sorted_row(rng, dtype, (6,)))
    values = lambda shape: T(make(rng, shape, dtype))        # noqa: E731
    ties = np.array([1, 1, 2, 2, 2, 3], NP_DTYPE[dtype])
    unsorted = make(rng, (3,), dtype)
    return [Sample((row, values((4,))), desc="1-d"), Sample((row, values((2, 3))), {"right": True}, desc="right"),
            Sample((row, values((2, 3))), {"side": "right"}, desc="side right"),
            Sample((T(_sorted_row(rng, dtype, (2, 5))), values((2, 3))), desc="rows"),
            Sample((T(ties), T(ties[[3, 0, 5]].copy())), desc="ties"),
            Sample((T(ties), T(ties[[3, 0, 5]].copy())), {"right": True, "out_int32": True}, desc="ties, right, int32"),
            Sample((T(unsorted), values((2,))), {"sorter": T(np.argsort(unsorted, kind="stable"))}, desc="sorter"),
            Sample((row, values(())), desc="0-d value"), Sample((row, values((0,))), desc="no value")]


def _bucketize_samples(rng, dtype):
    boundaries = T(_sorted_row(rng, dtype, (5,)))
    return [Sample((T(make(rng, (2, 3), dtype)), boundaries), desc="2-d"),
            Sample((T(make(rng, (4,), dtype)), boundaries), {"right": True}, desc="right"),
            Sample((T(make(rng, (), dtype)), boundaries), {"out_int32": True}, desc="0-d, int32")]


add(OpInfo("searchsorted.Tensor", fn("searchsorted"), _searchsorted_samples, dtypes=("float32", "float64", "int64"),
           errors=lambda rng: [E((T(f32(rng, (1, 2))), T(f32(rng, (1,)))), RuntimeError, "searchsorted", "boundaries",
                                 desc="rows without matching values"),
                               E((T(f32(rng, (3,))), T(f32(rng, (2,)))), RuntimeError, "searchsorted", "opposites",
                                 kwargs={"side": "left", "right": True}, desc="side against right"),
                               E((T(f32(rng, ())), T(f32(rng, ()))), RuntimeError, "searchsorted", "scalar",
                                 desc="0-d sequence and value"),
                               E((T(f32(rng, ())), T(f32(rng, (2,)))), RuntimeError, "searchsorted",
                                 "positive dimension", desc="0-d sequence")]))
add(OpInfo("bucketize.Tensor", fn("bucketize"), _bucketize_samples, dtypes=("float32", "float64", "int64"),
           errors=lambda rng: [E((T(f32(rng, (2,))), T(f32(rng, (1, 2)))), RuntimeError, "bucketize", "1 dimension",
                                 desc="2-d boundaries")]))
add(OpInfo("std_mean.correction", fn("std_mean"), lambda rng, d: [
    s for s in _var_samples("correction")(rng, d) if s.desc != "constant rows (std 0)"], dtypes=FLOAT, grad=True,
    tol=REDUCTION_TOL, errors=_var_errors("std_mean")))


def _msort_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((T(make(rng, (4, 3), dtype), grad=g),), desc="2-d"), Sample((T(make(rng, (5,), dtype), grad=g),),
                                                                               desc="1-d"),
            Sample((T(make(rng, (3, 4), dtype), "t", grad=g),), desc="transposed"),
            Sample((T(make(rng, (4, 3), dtype), grad=g),), desc="method", fn=lambda m, a: a.msort())]


add(OpInfo("msort", fn("msort"), _msort_samples, dtypes=("float32", "float64", "int64"), grad=True,
           errors=lambda rng: [E((3.0,), TypeError, "msort", desc="number input")]))
