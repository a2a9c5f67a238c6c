"""Reductions: sum/mean, amax/amin, max/min, argmax/argmin, softmax/log_softmax."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tolerances import REDUCTION_TOL, SOFTMAX_TOL
from .samples import ALL, DT, FLOAT, NP_DTYPE, NUM, OpInfo, Sample, T, aten, fn, is_float, make
from .database import E, add, f32, reduce_inputs




def _dims_for(t: T, *, allow_multi=True):
    nd = t.values.ndim
    if nd == 0:
        return [None, 0, -1] + ([(0,)] if allow_multi else [])
    out = [None, 0, -1]
    if allow_multi and nd >= 2:
        out += [(0, 1), (-1, 0)]
    return out


def _sum_samples(rng, dtype, *, mean=False):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g):
        for dim in _dims_for(t):
            for keepdim in (False, True):
                if dim is None and keepdim:
                    continue
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g),), desc="default dim", fn=lambda m, x: x.sum() if not mean
                    else x.mean()))
    if dtype != "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype)), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    if dtype == "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=True), 1), {"dtype": DT("float32")}, desc="dtype=float32"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), []), desc="dim=[]"))
    return S


def _reduce_dim_errors(name):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))), 2), IndexError, name, desc="dim out of range"),
                E(("x",), TypeError, name, desc="str input")]
    return errors


add(OpInfo("sum.dim_IntList", fn("sum"), _sum_samples, dtypes=ALL, grad=True,
           tol=REDUCTION_TOL,
           errors=lambda rng: _reduce_dim_errors("sum")(rng) + [
               E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "sum", "dim", desc="repeated dim")]))
add(OpInfo("mean.dim", fn("mean"), lambda rng, d: _sum_samples(rng, d, mean=True), dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL,
           errors=lambda rng: _reduce_dim_errors("mean")(rng) + [
               E((T(make(rng, (2, 3), "int64")),), RuntimeError, "mean", "dtype", desc="int input")]))


def _amax_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g, empty=False):
        for dim in ([()] + _dims_for(t)[1:]):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty, non-empty reduction dim"))
    x = np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype]) if dtype != "bool" else make(rng, (2, 3), "bool")
    S.append(Sample((T(x, grad=g), 1), desc="ties", gradcheck=False))
    S.append(Sample((T(x, grad=g),), desc="ties, all dims", gradcheck=False))
    if g:
        S.append(Sample((T(np.array([1.0, np.nan, 2.0], NP_DTYPE[dtype])), 0), desc="nan propagates"))
    return S


for _nm in ("amax", "amin"):
    add(OpInfo(_nm, fn(_nm), _amax_samples, dtypes=ALL, grad=True,
               errors=lambda rng, _nm=_nm: _reduce_dim_errors(_nm)(rng) + [
                   E((T(f32(rng, (0, 3))), 0), IndexError, _nm, desc="empty reduction dim"),
                   E((T(f32(rng, (0, 3))),), RuntimeError, _nm, desc="empty, all dims")]))


def _max_dim_samples(rng, dtype, name):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g, empty=False):
        for dim in (0, -1):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty, non-empty reduction dim"))
    x = np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype])
    S.append(Sample((T(x, grad=g), 1), desc="ties: first index", gradcheck=False))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 1), desc="method", fn=lambda m, x, d: getattr(x, name)(d)))
    return S


def _max_all_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((t,), desc=desc) for t, desc in reduce_inputs(rng, dtype, g, empty=False)]


for _nm in ("max", "min"):
    add(OpInfo(f"{_nm}.dim", fn(_nm), lambda rng, dtype, _nm=_nm: _max_dim_samples(rng, dtype, _nm), dtypes=ALL,
               grad=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(f32(rng, (0, 3))), 0), IndexError, _nm, desc="empty reduction dim")]))
    add(OpInfo(_nm, fn(_nm), _max_all_samples, dtypes=ALL, grad=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (0, 3))),), RuntimeError, _nm, desc="empty"),
                   E(("x",), TypeError, _nm, desc="str input")]))


def _argmax_samples(rng, dtype):
    S = []
    for t, desc in reduce_inputs(rng, dtype, False, empty=False):
        for dim in (None, 0, -1):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype])), 1), desc="ties: first index"))
    S.append(Sample((T(make(rng, (0, 3), dtype)), 1), desc="empty, non-empty reduction dim"))
    return S


for _nm in ("argmax", "argmin"):
    add(OpInfo(_nm, fn(_nm), _argmax_samples, dtypes=NUM,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(f32(rng, (0, 3))),), IndexError, _nm, desc="empty, all dims"),
                   E((T(make(rng, (2,), "bool")),), RuntimeError, _nm, desc="bool")]))


def _softmax_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in reduce_inputs(rng, dtype, g):
        for dim in (0, -1):
            S.append(Sample((t, dim), desc=f"{desc} dim={dim}"))
    if dtype != "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    S.append(Sample((T(make(rng, (2, 3), dtype, low=-30, high=30), grad=g), 1), desc="large values (stability)"))
    return S


for _nm in ("softmax", "log_softmax"):
    add(OpInfo(f"{_nm}.int", fn(_nm), _softmax_samples, dtypes=FLOAT, grad=True,
               tol=SOFTMAX_TOL,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(make(rng, (2, 3), "int64")), 0), NotImplementedError, _nm, desc="int input"),
               E((T(make(rng, (2, 3), "int64")), -1), NotImplementedError, _nm, desc="int input, last dim")]))


def _half_to_float_samples(rng, dtype):
    """half_to_float=False only: torch's cpu kernels reject True (CUDA-only there)."""
    return [dataclasses.replace(s, args=s.args[:2] + (False,)) for s in _softmax_samples(rng, dtype) if not s.kwargs]


for _nm in ("_softmax", "_log_softmax"):
    add(OpInfo(_nm, fn(_nm), _half_to_float_samples, dtypes=FLOAT, grad=True, tol=SOFTMAX_TOL,
               torch_call=aten(_nm),
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2, False), IndexError, _nm, desc="dim out of range")]))


# ---- softmax's and log_softmax's backward ops, from the forward's output
def _backward_data(name: str):
    """name(grad_output, softmax or log_softmax of x along dim, dim, x's dtype): the output from x, so that a
    gradient reaches x through the forward too."""
    forward = name.strip("_")[:-len("_backward_data")]

    def call(m, g, x, dim):
        return getattr(m, name)(g, getattr(m, forward)(x, dim), dim, x.dtype)
    call.__name__ = name
    return call


def _backward_data_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)       # noqa: E731
    return [Sample((a(3, 5), a(3, 5), -1), desc="last dim"), Sample((a(3, 5), a(3, 5), 0), desc="dim 0"),
            Sample((a(2, 3, 4), a(2, 3, 4), 1), desc="middle dim"),
            Sample((a(3, 4, layout="t"), a(3, 4), 1), desc="transposed grad_output"),
            Sample((a(), a(), 0), desc="0-d"), Sample((T(make(rng, (0, 3), dtype)), T(make(rng, (0, 3), dtype)), 1),
                                                      desc="empty")]


def _backward_data_errors(name: str):
    """The errors torch's ops raise. (torch's _log_softmax_backward_data broadcasts an output of another size;
    ember's refuses one as the softmax op does: tests/test_nn_layers.py checks it.)"""
    call = fn(name)

    def errors(rng):
        sizes = [E((T(f32(rng, (2, 3))), T(f32(rng, (1, 3))), 1, DT("float32")), RuntimeError, name, "same size",
                   fn=call, desc="sizes differ")] if name == "_softmax_backward_data" else []
        return sizes + [
            E((T(f32(rng, (2, 3))), T(make(rng, (2, 3), "float64")), 1, DT("float32")), RuntimeError, name,
              "expected scalar type", fn=call, desc="dtypes differ"),
            E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), 2, DT("float32")), IndexError, name, fn=call,
              desc="dim out of range"),
            E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), 1, DT("float16")), RuntimeError, name, fn=call,
              desc="float32 gradient of a float16 input"),
            E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64")), 1, DT("int64")), NotImplementedError,
              name, fn=call, desc="int")]
    return errors


for _nm in ("_softmax_backward_data", "_log_softmax_backward_data"):
    add(OpInfo(_nm, _backward_data(_nm), _backward_data_samples, dtypes=FLOAT, grad=True, tol=SOFTMAX_TOL,
               errors=_backward_data_errors(_nm)))


# ---- count_nonzero: int64 counts
def _count_nonzero_samples(rng, dtype):
    x = make(rng, (3, 4), dtype)
    x[0, :2] = 0
    return [Sample((T(x),), desc="all dims"), Sample((T(x), 1), desc="dim 1"), Sample((T(x), (0, 1)), desc="dims list"),
            Sample((T(x), []), desc="empty dims: all"), Sample((T(x, "t"), 0), desc="non-contiguous"),
            Sample((T(make(rng, (), dtype)),), desc="0-d"), Sample((T(make(rng, (0, 3), dtype)), 1), desc="empty"),
            Sample((T(x), -1), desc="method", fn=lambda m, a, d: a.count_nonzero(d))]


add(OpInfo("count_nonzero", fn("count_nonzero"), _count_nonzero_samples, dtypes=ALL,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 2), IndexError, "count_nonzero", desc="dim out of range"),
                               E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "count_nonzero", "multiple",
                                 desc="repeated dim")]))


# ---- nansum / nanmean, median / nanmedian / kthvalue (selections of a stable sort; NaNs last)
def _with_nans(rng, shape, dtype):
    """Random values with the second and the last one NaN, so no slice is all NaN (the gradient of an all-NaN
    reduction is 0 / 0: torch's is NaN there, ember's 0); a 0-d tensor keeps its value."""
    x = make(rng, shape, dtype)
    if is_float(dtype) and x.ndim and x.size > 2:
        x.reshape(-1)[[1, -1]] = np.nan
    return x


def _distinct(rng, shape, dtype):
    """Distinct values (no ties: which of several equal elements a selection reports is torch's kernel's
    choice, unspecified)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) - n // 2).astype(NP_DTYPE[dtype]).reshape(shape)


def _nan_reduce_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape: T(_with_nans(rng, shape, dtype), grad=g)      # noqa: E731
    return [Sample((x((3, 4)),), desc="all dims"), Sample((x((3, 4)), 1), desc="dim 1"),
            Sample((x((3, 4)), (0, 1), True), desc="dims, keepdim"), Sample((x(()),), desc="0-d"),
            Sample((T(_with_nans(rng, (4, 3), dtype), "t", grad=g), 0), desc="non-contiguous"),
            Sample((x((0, 3)), 1), desc="empty")]


add(OpInfo("nansum", fn("nansum"), _nan_reduce_samples, dtypes=("float32", "float64", "float16", "int64"), grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 2), IndexError, "nansum", desc="dim out of range")]))
add(OpInfo("nanmean", fn("nanmean"), _nan_reduce_samples, dtypes=("float32", "float64"), grad=True,
           errors=lambda rng: [E((T(make(rng, (2, 3), "int64")),), RuntimeError, "nanmean", "floating point",
                                 desc="int64 input")]))


def _median_all_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((T(_distinct(rng, (3, 4), dtype), grad=g),), desc="even count"),
         Sample((T(_distinct(rng, (5,), dtype), grad=g),), desc="odd count"),
         Sample((T(_distinct(rng, (), dtype), grad=g),), desc="0-d"),
         Sample((T(_distinct(rng, (4, 3), dtype), "t", grad=g),), desc="non-contiguous")]
    if is_float(dtype):
        S += [Sample((T(_with_nans(rng, (2, 3), dtype)),), desc="with NaNs"),
              Sample((T(np.zeros(0, NP_DTYPE[dtype])),), desc="empty: NaN")]
    return S


def _median_dim_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((T(_distinct(rng, (3, 4), dtype), grad=g), 1), desc="dim 1"),
         Sample((T(_distinct(rng, (3, 4), dtype), grad=g), 0, True), desc="dim 0, keepdim"),
         Sample((T(_distinct(rng, (), dtype), grad=g), 0), desc="0-d"),
         Sample((T(_distinct(rng, (4, 3), dtype), "t", grad=g), -1), desc="non-contiguous")]
    if is_float(dtype):
        S.append(Sample((T(_with_nans(rng, (3, 4), dtype)), 1), desc="with NaNs"))
    return S


def _kthvalue_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((T(_distinct(rng, (3, 4), dtype), grad=g), 2), desc="last dim"),
         Sample((T(_distinct(rng, (3, 4), dtype), grad=g), 3, 0, True), desc="dim 0, keepdim"),
         Sample((T(_distinct(rng, (), dtype), grad=g), 1), desc="0-d"),
         Sample((T(_distinct(rng, (4, 3), dtype), "t", grad=g), 1, 1), desc="non-contiguous")]
    if is_float(dtype):
        S.append(Sample((T(_with_nans(rng, (3, 4), dtype)), 4), desc="NaN as the largest"))
    return S


_SELECT_DTYPES = ("float32", "float64", "int64", "int32")
for _nm in ("median", "nanmedian"):
    add(OpInfo(_nm, fn(_nm), _median_all_samples, dtypes=_SELECT_DTYPES, grad=True,
               errors=lambda rng, _nm=_nm: [E((T(make(rng, (3,), "bool")),), NotImplementedError, _nm, desc="bool")]))
    add(OpInfo(f"{_nm}.dim", fn(_nm), _median_dim_samples, dtypes=_SELECT_DTYPES, grad=True,
               errors=lambda rng, _nm=_nm: [E((T(np.zeros((0, 2), np.float32)), 0), IndexError, _nm, "non-zero size",
                                              desc="empty dim"),
                                            E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range")]))
add(OpInfo("kthvalue", fn("kthvalue"), _kthvalue_samples, dtypes=_SELECT_DTYPES, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3,))), 4), RuntimeError, "kthvalue", "out of range", desc="k too large"),
                               E((T(f32(rng, (3,))), 0), RuntimeError, "kthvalue", "out of range", desc="k zero")]))


def _aminmax_samples(rng, dtype):
    x = lambda shape, layout="c": T(_distinct(rng, shape, dtype), layout)    # noqa: E731
    return [Sample((x((3, 4)),), desc="all"), Sample((x((3, 4)),), {"dim": 1}, desc="dim 1"),
            Sample((x((3, 4)),), {"dim": -2, "keepdim": True}, desc="dim, keepdim"),
            Sample((x((3, 4)),), {"keepdim": True}, desc="all, keepdim"), Sample((x(()),), desc="0-d"),
            Sample((x((4, 3), "t"),), {"dim": 0}, desc="non-contiguous"),
            Sample((x((2, 3)),), desc="method", fn=lambda m, a: a.aminmax())]


add(OpInfo("aminmax", fn("aminmax"), _aminmax_samples, dtypes=("float32", "float64", "int64", "int32"),
           errors=lambda rng: [E((T(np.zeros(0, np.float32)),), RuntimeError, "aminmax", "no identity",
                                 desc="empty input"),
                               E((T(np.zeros((2, 0), np.float32)),), IndexError, "aminmax", kwargs={"dim": 1},
                                 desc="empty dim")]))
