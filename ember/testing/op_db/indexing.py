"""Indexing, scatter and gather: gather/scatter*, index_select, index/index_put, masks, embedding.

Index tensors are int64 (int32 where PyTorch accepts it) `T`s that never require grad.
Out-of-range index *values* are data, so those error inputs do not run on meta
(`Sample.meta=False`), where PyTorch's meta device does not raise either; nonzero and
masked_select (data-dependent shapes) raise NotImplementedError on meta, as torch's does.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import ALL, FLOAT, NP_DTYPE, OpInfo, Sample, T, aten, fn, is_float, make, method
from .database import E, add, f32

NUMERIC = FLOAT + ("int64", "int32", "uint8")


def I(values, dtype="int64", layout="c", expand=None):       # noqa: E743 - an index tensor
    return T(np.asarray(values, dtype=NP_DTYPE[dtype]), layout, expand=expand)


def M(values, layout="c"):
    return T(np.asarray(values, dtype=bool), layout)


def _rand_index(rng, shape, high):
    return I(rng.integers(0, high, size=shape))


def _perm_index(rng, shape, dim, high):
    """Distinct indices along `dim` (scatter without duplicates is deterministic)."""
    shape = tuple(shape)
    moved = (shape[:dim] + shape[dim + 1:] + (shape[dim],))
    flat = np.stack([rng.permutation(high)[:shape[dim]] for _ in range(int(np.prod(moved[:-1])))])
    return I(np.moveaxis(flat.reshape(moved), -1, dim))


def _oor(args, exc, name, *, kwargs=None, desc="index out of range"):
    err = E(args, exc, name, kwargs=kwargs, desc=desc)
    err.sample.meta = False
    return err


# ------------------------------------------------------------------------------ gather
def _gather_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), 0, _rand_index(rng, (2, 4), 3)), desc="dim 0"),
            Sample((a((3, 4)), 1, _rand_index(rng, (3, 6), 4)), desc="dim 1, duplicates"),
            Sample((a((3, 4)), 1, I([[3, 0], [1, 1], [2, 0]], "int32")), desc="int32 index"),
            Sample((a((3, 4)), -1, _rand_index(rng, (2, 2), 4)), desc="dim -1, smaller index"),
            Sample((a((4, 3), "t"), 0, _rand_index(rng, (3, 3), 3)), desc="transposed self"),
            Sample((a((3, 4)), 0, I(np.zeros((1, 4)), expand=(5, 4), layout="e")), desc="expanded index"),
            Sample((a((3, 4)), 0, I(np.zeros((0, 4)))), desc="empty index"),
            Sample((a(()), 0, I(0)), desc="0-d"),
            Sample((a((2, 3, 4)), 1, _rand_index(rng, (2, 5, 4), 3)), desc="3-d")]


def _gather_errors(rng):
    x = T(f32(rng, (3, 4)))
    return [_oor((x, 0, I([[0, 3]])), RuntimeError, "gather"),
            _oor((x, 0, I([[-1]])), RuntimeError, "gather", desc="negative index"),
            E((x, 0, I([[0]], "int16")), RuntimeError, "gather", "index", desc="int16 index"),
            E((x, 0, T(np.zeros((1, 1), np.float32))), RuntimeError, "gather", "index", desc="float index"),
            E((x, 0, I([0, 1])), RuntimeError, "gather", "index", desc="ndim mismatch"),
            E((x, 0, I(np.zeros((1, 5)))), RuntimeError, "gather", "index", desc="index larger than self"),
            E((x, 2, I([[0]])), IndexError, "gather", desc="dim out of range")]


add(OpInfo("gather", fn("gather"), _gather_samples, dtypes=ALL, grad=True, errors=_gather_errors))


# ------------------------------------------------------------------------------ scatter family
def _scatter_add_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), 0, _rand_index(rng, (2, 4), 3), a((2, 4))), desc="dim 0"),
            Sample((a((3, 4)), 1, _rand_index(rng, (3, 6), 4), a((3, 6))), desc="dim 1, duplicates"),
            # torch's own src gradient has the index's shape there (an error), so src needs none here
            Sample((a((3, 4)), 0, _rand_index(rng, (2, 3), 3), T(make(rng, (3, 4), dtype))),
                   desc="src larger than index"),
            Sample((a((4, 3), "t"), -1, _rand_index(rng, (4, 2), 3), a((4, 2), "s")), desc="non-contiguous"),
            Sample((a((3, 4)), 0, I(np.zeros((0, 4))), a((0, 4))), desc="empty index"),
            Sample((a(()), 0, I(0), a(())), desc="0-d")]


def _scatter_errors(name, value=False):
    def errors(rng):
        x = T(f32(rng, (3, 4)))
        src = 1.0 if value else T(f32(rng, (3, 4)))
        out = [_oor((x, 0, I([[3]]), src), RuntimeError, name),
               E((x, 0, T(np.zeros((1, 1), np.float32)), src), RuntimeError, name, "index", desc="float index"),
               E((x, 0, I([[0, 1, 2, 0, 1]]), src), RuntimeError, name, "index", desc="index larger than self"),
               E((x, 3, I([[0]]), src), IndexError, name, desc="dim out of range")]
        if not value:
            out.append(E((x, 0, I([[0]]), T(np.zeros((3, 4)))), RuntimeError, name, "src", desc="src dtype"))
        return out
    return errors


add(OpInfo("scatter_add", fn("scatter_add"), _scatter_add_samples, dtypes=NUMERIC, grad=True, tol=REDUCTION_TOL,
           errors=_scatter_errors("scatter_add")))


def _scatter_samples(rng, dtype, value=False):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    v = (lambda shape, lay="c": 2) if value else a                       # noqa: E731
    return [Sample((a((3, 4)), 0, _perm_index(rng, (2, 4), 0, 3), v((2, 4))), desc="dim 0"),
            Sample((a((3, 4)), 1, _perm_index(rng, (3, 2), 1, 4), 2 if value else T(make(rng, (3, 3), dtype))),
                   desc="dim 1, src larger (no src gradient: torch's has the index's shape)"),
            Sample((a((4, 3), "t"), -1, _perm_index(rng, (4, 2), 1, 3), v((4, 2), "s")), desc="non-contiguous"),
            Sample((a((3, 4)), 0, I(np.zeros((0, 4))), v((0, 4))), desc="empty index"),
            Sample((a(()), 0, I(0), v(())), desc="0-d")]


add(OpInfo("scatter.src", fn("scatter"), _scatter_samples, dtypes=ALL, grad=True, errors=_scatter_errors("scatter")))
add(OpInfo("scatter.value", fn("scatter"), lambda rng, d: _scatter_samples(rng, d, True), dtypes=ALL, grad=True,
           errors=_scatter_errors("scatter", value=True)))


def _scatter_with_reduce_samples(value: bool):
    """scatter(..., reduce='add' | 'multiply'), torch's older spelling of scatter_reduce: repeated indices."""
    def samples(rng, dtype):
        a = lambda shape: T(make(rng, shape, dtype))                     # noqa: E731
        src = (lambda shape: 2) if value else a                         # noqa: E731
        index = I([[0, 1, 0, 2], [2, 1, 0, 0]])
        return [Sample((a((3, 4)), 0, index, src((2, 4))), {"reduce": "add"}, desc="add, repeated indices"),
                Sample((a((3, 4)), 0, index, src((2, 4))), {"reduce": "multiply"}, desc="multiply"),
                Sample((a((4, 3)), 1, I([[0, 0], [1, 2], [2, 2], [0, 1]]), src((4, 2))), {"reduce": "add"},
                       desc="dim 1")]
    return samples


def _scatter_with_reduce_errors(rng):
    x = T(f32(rng, (3, 4)))
    return [E((x, 0, I([[0]]), T(f32(rng, (1, 1)))), RuntimeError, "scatter", "reduce", kwargs={"reduce": "sum"},
              desc="a reduction scatter has not")]


add(OpInfo("scatter.reduce", fn("scatter"), _scatter_with_reduce_samples(False), dtypes=("float32", "float64", "int64"),
           tol=REDUCTION_TOL, errors=_scatter_with_reduce_errors))
add(OpInfo("scatter.value_reduce", fn("scatter"), _scatter_with_reduce_samples(True),
           dtypes=("float32", "float64", "int64"), tol=REDUCTION_TOL, errors=_scatter_with_reduce_errors))


def _scatter_reduce_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c", dom="nonzero": T(make(rng, shape, dtype, domain=dom), lay, grad=g)  # noqa: E731
    S = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            S.append(Sample((a((3, 4)), 1, _rand_index(rng, (3, 5), 4), a((3, 5)), reduce), {"include_self": inc},
                            desc=f"{reduce} include_self={inc}"))
        S.append(Sample((a((4, 3), "t"), 0, _rand_index(rng, (2, 3), 4), a((2, 3), "s"), reduce),
                        desc=f"{reduce} non-contiguous"))
        S.append(Sample((T(make(rng, (3, 4), dtype)), 1, _rand_index(rng, (2, 3), 4), T(make(rng, (3, 5), dtype)),
                         reduce), desc=f"{reduce} src larger (no gradients: torch's have the index's shape)"))
    S.append(Sample((a((3, 4)), 0, I(np.zeros((0, 4))), a((0, 4)), "sum"), desc="empty index"))
    S.append(Sample((a(()), 0, I(0), a(()), "amax"), {"include_self": False}, desc="0-d"))
    return S


add(OpInfo("scatter_reduce.two", fn("scatter_reduce"), _scatter_reduce_samples,
           dtypes=("float32", "float64", "int64"), grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (3, 4))), 0, I([[0]]), T(f32(rng, (1, 1))), "foo"), RuntimeError, "scatter_reduce",
                 "reduce", desc="unknown reduction"),
               _oor((T(f32(rng, (3, 4))), 0, I([[5]]), T(f32(rng, (1, 1))), "sum"), RuntimeError,
                    "scatter_reduce")]))


def _index_add_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), 0, I([0, 2, 0]), a((3, 4))), desc="dim 0, duplicates"),
            Sample((a((3, 4)), 1, I([3, 1], "int32"), a((3, 2))), {"alpha": 2}, desc="dim 1, int32, alpha"),
            Sample((a((4, 3), "t"), -1, I([0]), a((4, 1))), desc="non-contiguous"),
            Sample((a((3, 4)), 0, I(np.zeros(0)), a((0, 4))), desc="empty index"),
            Sample((a(()), 0, I([0]), a(())), desc="0-d")]


add(OpInfo("index_add", fn("index_add"), _index_add_samples, dtypes=NUMERIC, grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (3, 4))), 0, I([0, 1]), T(f32(rng, (3, 4)))), RuntimeError, "index_add", "source",
                 desc="source shape"),
               E((T(f32(rng, (3, 4))), 0, I([[0]]), T(f32(rng, (1, 4)))), IndexError, "index_add", "index",
                 desc="2-d index"),
               E((T(f32(rng, (3, 4))), 0, I([0]), T(np.zeros((1, 4)))), RuntimeError, "index_add", "source",
                 desc="source dtype"),
               E((T(f32(rng, (3, 4))), 1, I([0]), T(f32(rng, (3,)))), RuntimeError, "index_add", "out of bounds",
                 desc="source without the dim")]))


# ------------------------------------------------------------------------------ index_select / take_along_dim
def _index_select_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), 0, I([2, 0, 2])), desc="dim 0, duplicates"),
            Sample((a((3, 4)), -1, I([3, 1], "int32")), desc="dim -1, int32"),
            Sample((a((4, 3), "t"), 1, I([0, 2])), desc="transposed"),
            Sample((a((3, 4)), 1, I(2)), desc="0-d index"),
            Sample((a((3, 4)), 0, I(np.zeros(0))), desc="empty index"),
            Sample((a(()), 0, I([0])), desc="0-d self")]


add(OpInfo("index_select", fn("index_select"), _index_select_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               _oor((T(f32(rng, (3, 4))), 0, I([3])), IndexError, "index_select"),
               _oor((T(f32(rng, (3, 4))), 0, I([-1])), IndexError, "index_select", desc="negative index"),
               E((T(f32(rng, (3, 4))), 0, I([[0]])), IndexError, "index_select", "index", desc="2-d index"),
               E((T(f32(rng, (3, 4))), 0, T(np.zeros(1, np.float32))), RuntimeError, "index_select", "index",
                 desc="float index")]))


def _take_along_dim_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), _rand_index(rng, (3, 2), 4), 1), desc="dim 1"),
            Sample((a((3, 4)), _rand_index(rng, (1, 2), 4), -1), desc="broadcast indices"),
            Sample((a((3, 1)), _rand_index(rng, (2, 4), 3), 0), desc="broadcast self"),
            Sample((a((4, 3), "t"), _rand_index(rng, (4, 3), 4), 0), desc="transposed self"),
            Sample((a((4, 3)), _rand_index(rng, (5,), 12)), desc="dim None"),
            Sample((a((3, 4)), I(np.zeros((3, 0))), 1), desc="empty")]


add(OpInfo("take_along_dim", fn("take_along_dim"), _take_along_dim_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (3, 4))), I([0]), 0), RuntimeError, "take_along_dim", desc="ndim mismatch"),
               E((T(f32(rng, (3, 4))), T(np.zeros((1, 1), np.float32)), 0), RuntimeError, "take_along_dim",
                 "indices", desc="float indices")]))


# ------------------------------------------------------------------------------ index / index_put
def _index_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    mask = rng.random((3, 4)) > 0.5
    S = [Sample((a((3, 4)), [I([0, 2, -1])]), desc="negative, duplicates"),
         Sample((a((3, 4)), [None, I([[0, 1], [3, -4]])]), desc="None then 2-d index"),
         Sample((a((3, 4)), [I([0, 1]), I([1, 2])]), desc="two indices"),
         Sample((a((3, 4)), [I([[0], [2]]), I([0, 3, 1])]), desc="broadcast indices"),
         Sample((a((2, 3, 4)), [I([0, 1]), None, I([1, 0])]), desc="non-adjacent (dims first)"),
         Sample((a((2, 3, 4)), [None, I([2, 0]), I([1, 3])]), desc="adjacent after a None"),
         Sample((a((4, 3), "t"), [None, I([1, 2])]), desc="transposed self"),
         Sample((a((2, 4, 3), "t"), [None, I([1, 2])]), desc="transposed 3-d self"),
         Sample((a((2, 3, 4)), [None, I([1, 2]), None]), desc="3-d, middle"),
         Sample((a((3, 4)), [I(np.zeros(0))]), desc="empty index"),
         Sample((a((3, 4)), [I([1, 0], "int32")]), desc="int32"),
         Sample((a((3, 4)), [M([True, False, True])]), desc="bool mask", meta=False),
         Sample((a((3, 4)), [M(mask)]), desc="full bool mask", meta=False),
         Sample((a((3, 4)), [None, M([False, True, True, False])]), desc="mask on dim 1", meta=False),
         Sample((a((2, 3, 4)), [M([True, False]), None, I([0, 3])]), desc="mask and index", meta=False)]
    return S


def _index_errors(rng):
    x = T(f32(rng, (3, 4)))
    return [_oor((x, [I([3])]), IndexError, "index"),
            _oor((x, [None, I([-5])]), IndexError, "index", desc="negative index out of range"),
            E((x, [T(np.zeros(1, np.float32))]), IndexError, "index", "indices", desc="float index"),
            E((x, [I([0, 1]), I([0, 1, 2])]), IndexError, "index", "indices", desc="indices do not broadcast"),
            E((x, [I([0]), I([0]), I([0])]), IndexError, "index", "indices", desc="too many indices"),
            E((x, [M([True, False])]), IndexError, "index", "indices", desc="mask shape"),
            E((x, []), IndexError, "index", "indices", desc="no index")]


add(OpInfo("index.Tensor", fn("index"), _index_samples, dtypes=ALL, grad=True, torch_call=aten("index.Tensor"),
           errors=_index_errors))


def _index_put_samples(rng, dtype, inplace=False):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    mask = M([True, False, True])
    S = [Sample((a((3, 4)), [I([0, 2])], a((2, 4))), desc="rows"),
         Sample((a((3, 4)), [I([-1, 0])], a((4,))), desc="negative, broadcast values"),
         Sample((a((3, 4)), [None, I([1, 3])], a(())), desc="None, 0-d value"),
         Sample((a((3, 4)), [I([[0], [2]]), I([0, 3, 1])], a((2, 3))), desc="broadcast indices"),
         Sample((a((2, 3, 4)), [I([0, 1]), None, I([1, 0])], a((2, 3))), desc="non-adjacent"),
         Sample((a((3, 4)), [I([0, 0, 2])], a((3, 4))), {"accumulate": True}, desc="accumulate duplicates"),
         Sample((a((3, 4)), [I([1, 1]), I([2, 2])], a((2,))), {"accumulate": True}, desc="accumulate same element"),
         Sample((a((3, 4)), [I(np.zeros(0))], a((0, 4))), desc="empty index"),
         Sample((a((3, 4)), [mask], a((4,))), desc="bool mask", meta=False),
         Sample((a((3, 4)), [mask], a((2, 4))), {"accumulate": True}, desc="bool mask accumulate", meta=False)]
    if not inplace:
        S.append(Sample((a((4, 3), "t"), [None, I([2, 0])], a((4, 2), "s")), desc="non-contiguous"))
    else:
        S.append(Sample((a((4, 3), "t"), [None, I([2, 0])], a((4, 2), "s")), desc="non-contiguous self (view)"))
    return S


def _index_put_errors(name):
    def errors(rng):
        x = T(f32(rng, (3, 4)))
        return [_oor((x, [I([3])], T(f32(rng, ()))), IndexError, name),
                E((x, [I([0])], T(np.zeros(4))), RuntimeError, name, "values", desc="values dtype"),
                E((x, [I([0])], T(f32(rng, (2,)))), RuntimeError, name, "values", desc="values shape")]
    return errors


# torch's Python bindings of index_put take no None entries: torch runs them through torch.ops.aten
add(OpInfo("index_put", fn("index_put"), _index_put_samples, dtypes=ALL, grad=True, tol=REDUCTION_TOL,
           torch_call=aten("index_put"), errors=_index_put_errors("index_put")))
add(OpInfo("index_put_", method("index_put_"), lambda rng, d: _index_put_samples(rng, d, True), dtypes=ALL,
           grad=True, inplace=True, tol=REDUCTION_TOL, torch_call=aten("index_put_"),
           errors=_index_put_errors("index_put")))


# ------------------------------------------------------------------------------ masks
def _fill(dtype):
    return True if dtype == "bool" else (3 if not is_float(dtype) else -1.5)


def _masked_fill_samples(rng, dtype, tensor_value=False, inplace=False):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    m = lambda shape, lay="c": T(rng.random(shape) > 0.5, lay)  # noqa: E731
    v = (lambda: T(np.asarray(_fill(dtype), NP_DTYPE[dtype]), grad=g)) if tensor_value else (lambda: _fill(dtype))
    S = [Sample((a((3, 4)), m((3, 4)), v()), desc="same shape"),
         Sample((a((3, 4)), m((4,)), v()), desc="broadcast mask"),
         Sample((a(()), m(()), v()), desc="0-d"),
         Sample((a((0, 4)), m((0, 4)), v()), desc="empty"),
         Sample((a((4, 3), "t"), m((4, 3), "t"), v()), desc="transposed")]
    if not inplace:
        S.append(Sample((a((4,)), m((3, 4)), v()), desc="broadcast self"))
    if not tensor_value and dtype == "float32":
        S.append(Sample((a((3, 4)), m((3, 4)), 2), desc="int value into float"))
    return S


def _masked_fill_errors(name, tensor_value=False):
    def errors(rng):
        x = T(f32(rng, (3, 4)))
        v = T(f32(rng, ())) if tensor_value else 1.0
        out = [E((x, T(np.ones((3, 4), np.float32)), v), RuntimeError, name, "mask", desc="float mask"),
               E((x, T(np.ones(5, bool)), v), RuntimeError, name, desc="mask does not broadcast")]
        if tensor_value:
            out.append(E((x, T(np.ones(4, bool)), T(f32(rng, (2,)))), RuntimeError, name, "value",
                         desc="1-d value"))
        if name.endswith("_"):
            out.append(E((T(f32(rng, (4,))), T(np.ones((3, 4), bool)), v), RuntimeError, name, "mask",
                         desc="mask broadcasts self"))
        return out
    return errors


add(OpInfo("masked_fill.Scalar", fn("masked_fill"), _masked_fill_samples, dtypes=ALL, grad=True,
           errors=_masked_fill_errors("masked_fill")))
add(OpInfo("masked_fill.Tensor", fn("masked_fill"), lambda rng, d: _masked_fill_samples(rng, d, True), dtypes=ALL,
           grad=True, errors=_masked_fill_errors("masked_fill", True)))
add(OpInfo("masked_fill_.Scalar", method("masked_fill_"), lambda rng, d: _masked_fill_samples(rng, d, inplace=True),
           dtypes=ALL, grad=True, inplace=True, errors=_masked_fill_errors("masked_fill_")))
add(OpInfo("masked_fill_.Tensor", method("masked_fill_"),
           lambda rng, d: _masked_fill_samples(rng, d, True, inplace=True), dtypes=ALL, grad=True, inplace=True,
           errors=_masked_fill_errors("masked_fill_", True)))


def _masked_select_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    m = lambda shape, lay="c": T(rng.random(shape) > 0.5, lay)  # noqa: E731
    return [Sample((a((3, 4)), m((3, 4))), desc="same shape", meta=False),
            Sample((a((3, 4)), m((4,))), desc="broadcast mask", meta=False),
            Sample((a((4,)), m((3, 4))), desc="broadcast self", meta=False),
            Sample((a((3, 4)), M(np.zeros((3, 4)))), desc="all False", meta=False),
            Sample((a((0, 4)), m((0, 4))), desc="empty", meta=False),
            Sample((a(()), M(True)), desc="0-d", meta=False),
            Sample((a((4, 3), "t"), m((4, 3), "t")), desc="transposed", meta=False)]


add(OpInfo("masked_select", fn("masked_select"), _masked_select_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (3, 4))), T(np.ones((3, 4), np.uint8))), RuntimeError, "masked_select", "mask",
                 desc="uint8 mask"),
               E((T(f32(rng, (3, 4))), T(np.ones(5, bool))), RuntimeError, "masked_select", desc="no broadcast")]))


def _masked_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    m = lambda shape, lay="c": T(rng.random(shape) > 0.5, lay)  # noqa: E731
    return [Sample((a((3, 4)), m((3, 4)), a((3, 4))), desc="same shape"),
            Sample((a((3, 4)), m((4,)), a((13,))), desc="broadcast mask, longer source"),
            Sample((a((4,)), m((3, 4)), a((2, 6))), desc="broadcast self"),
            Sample((a((3, 4)), M(np.zeros((3, 4))), a((0,))), desc="all False, empty source"),
            Sample((a((4, 3), "t"), m((4, 3), "t"), a((3, 4), "s")), desc="non-contiguous")]


add(OpInfo("masked_scatter", fn("masked_scatter"), _masked_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (3, 4))), T(np.ones((3, 4), np.float32)), T(f32(rng, (12,)))), RuntimeError,
                 "masked_scatter", "mask", desc="float mask"),
               E((T(f32(rng, (3, 4))), T(np.ones((3, 4), bool)), T(np.zeros(12))), RuntimeError,
                 "masked_scatter", "source", desc="source dtype"),
               _oor((T(f32(rng, (3, 4))), T(np.ones((3, 4), bool)), T(f32(rng, (5,)))), RuntimeError,
                    "masked_scatter", desc="source too small")]))


def _nonzero_samples(rng, dtype):
    a = make(rng, (3, 4), dtype)
    a.reshape(-1)[::3] = 0
    return [Sample((T(a),), desc="2-d", meta=False),
            Sample((T(make(rng, (4, 3), dtype), "t"),), desc="transposed", meta=False),
            Sample((T(np.zeros((2, 3), NP_DTYPE[dtype])),), desc="all zero", meta=False),
            Sample((T(make(rng, (0, 3), dtype)),), desc="empty", meta=False),
            Sample((T(np.asarray(1, NP_DTYPE[dtype])),), desc="0-d nonzero", meta=False),
            Sample((T(np.asarray(0, NP_DTYPE[dtype])),), desc="0-d zero", meta=False),
            Sample((T(make(rng, (2, 1, 3), dtype)),), desc="3-d", meta=False)]


add(OpInfo("nonzero", fn("nonzero"), _nonzero_samples, dtypes=ALL,
           errors=lambda rng: [E(("x",), TypeError, "nonzero", desc="str input")]))


# ------------------------------------------------------------------------------ embedding
def _embedding_samples(rng, dtype):
    w = lambda shape=(5, 3), lay="c": T(make(rng, shape, dtype), lay, grad=True)  # noqa: E731
    return [Sample((w(), _rand_index(rng, (2, 4), 5)), desc="2-d indices"),
            # padding_idx and scale_grad_by_freq change the gradient on purpose (not the derivative): no gradcheck
            Sample((w(), I([1, 3, 1, 0])), {"padding_idx": 1}, desc="padding_idx", gradcheck=False),
            Sample((w(), I([[4, 4, 2], [0, 4, 4]])), {"scale_grad_by_freq": True}, desc="scale_grad_by_freq",
                   gradcheck=False),
            Sample((w(), I(3)), desc="0-d index"),
            Sample((w(), I(np.zeros((0, 2)))), desc="empty"),
            Sample((w(), I([2, 0], "int32")), desc="int32"),
            Sample((w((3, 5), "t"), I([[1, 0]])), desc="transposed weight")]


add(OpInfo("embedding", fn("embedding"), _embedding_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [
               _oor((T(f32(rng, (5, 3))), I([5])), IndexError, "embedding"),
               _oor((T(f32(rng, (5, 3))), I([-1])), IndexError, "embedding", desc="negative index"),
               E((T(f32(rng, (5, 3))), T(np.zeros(2, np.float32))), RuntimeError, "embedding", "indices",
                 desc="float indices"),
               E((T(f32(rng, (5,))), I([0])), RuntimeError, "embedding", "weight", desc="1-d weight")]))


def _embedding_backward_samples(rng, dtype):
    gr = lambda shape: T(make(rng, shape, dtype), grad=True)  # noqa: E731
    return [Sample((gr((2, 4, 3)), _rand_index(rng, (2, 4), 5), 5, -1, False), desc="plain"),
            Sample((gr((4, 3)), I([1, 3, 1, 0]), 5, 1, False), desc="padding_idx"),
            Sample((gr((2, 3, 2)), I([[4, 4, 2], [0, 4, 4]]), 6, -1, True), desc="scale_grad_by_freq",
                   gradcheck=False),
            Sample((T(make(rng, (0, 3), dtype)), I(np.zeros(0)), 4, -1, False), desc="empty")]


add(OpInfo("embedding_dense_backward", fn("embedding_dense_backward"), _embedding_backward_samples,
           dtypes=("float32", "float64"), grad=True, tol=REDUCTION_TOL, torch_call=aten("embedding_dense_backward"),
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(np.zeros(2, np.float32)), 4, -1, False), RuntimeError,
                 "embedding_dense_backward", "indices", desc="float indices")]))


# ------------------------------------------------------------------------------ in-place twins
def _self_shaped(gen, drop=()):
    """The samples whose result has self's shape (valid in place), minus those named in `drop`."""
    def inplace_gen(rng, dtype):
        return [s for s in gen(rng, dtype) if s.desc not in drop and s.args[0].layout != "e"]
    return inplace_gen


def _renamed(errors, old, new):
    def renamed(rng):
        out = errors(rng)
        for e in out:
            e.match = tuple(new if m == old else m for m in e.match)
        return out
    return renamed


for _name, _method, _gen, _dtypes, _errs, _tol in [
        ("scatter_add_", "scatter_add_", _scatter_add_samples, NUMERIC, _scatter_errors("scatter_add"), REDUCTION_TOL),
        ("scatter_.src", "scatter_", _scatter_samples, ALL, _scatter_errors("scatter"), {}),
        ("scatter_.value", "scatter_", lambda rng, d: _scatter_samples(rng, d, True), ALL,
         _scatter_errors("scatter", value=True), {}),
        ("scatter_reduce_.two", "scatter_reduce_", _scatter_reduce_samples, ("float32", "float64", "int64"),
         lambda rng: [_oor((T(f32(rng, (3, 4))), 0, I([[5]]), T(f32(rng, (1, 1))), "sum"), RuntimeError,
                           "scatter_reduce")], REDUCTION_TOL),
        ("index_add_", "index_add_", _index_add_samples, NUMERIC, lambda rng: [
            E((T(f32(rng, (3, 4))), 0, I([0, 1]), T(f32(rng, (3, 4)))), RuntimeError, "index_add", "source",
              desc="source shape")], REDUCTION_TOL),
        ("masked_scatter_", "masked_scatter_", _self_shaped(_masked_scatter_samples, ("broadcast self",)), ALL,
         lambda rng: [E((T(f32(rng, (3, 4))), T(np.ones((3, 4), np.float32)), T(f32(rng, (12,)))), RuntimeError,
                        "masked_scatter", "mask", desc="float mask")], {})]:
    add(OpInfo(_name, method(_method), _gen, dtypes=_dtypes, grad=True, inplace=True, tol=_tol, errors=_errs))
for _name, _value in (("scatter_.reduce", False), ("scatter_.value_reduce", True)):      # torch's: not differentiable
    add(OpInfo(_name, method("scatter_"), _scatter_with_reduce_samples(_value), dtypes=("float32", "float64", "int64"),
               inplace=True, tol=REDUCTION_TOL, errors=_scatter_with_reduce_errors))


# ---- one_hot (torch.nn.functional's): class indices to int64 rows; the values are checked on devices with data
def _one_hot_samples(rng, dtype):
    idx = lambda shape, n: T(rng.integers(0, n, shape).astype(np.int64))      # noqa: E731
    call = lambda m, *a: m.nn.functional.one_hot(*a)                          # noqa: E731
    return [Sample((idx((5,), 4), 4), desc="1-d", fn=call),
            Sample((idx((2, 3), 3), 6), desc="2-d, wider", fn=call),
            Sample((idx((), 3), 3), desc="0-d", fn=call),
            Sample((idx((0,), 3), 3), desc="empty", fn=call),
            Sample((T(np.array([0, 2, 1, 2], np.int64)),), desc="classes from the data", fn=call, meta=False)]


def _one_hot_errors(rng):
    call = lambda m, *a: m.nn.functional.one_hot(*a)                          # noqa: E731
    data = [E((T(np.array([0, 3], np.int64)), 3), RuntimeError, "smaller than num_classes", fn=call,
              desc="index too large"),
            E((T(np.array([-1, 0], np.int64)), 3), RuntimeError, "non-negative", fn=call, desc="negative index")]
    for e in data:                  # the values are data: not checked on meta
        e.sample.meta = False
    return data + [
            E((T(f32(rng, (3,))), 3), RuntimeError, "one_hot", "LongTensor", fn=call, desc="float indices"),
            E((T(np.zeros(0, np.int64)),), RuntimeError, "empty tensor", fn=call, desc="empty, classes unknown"),
            E((T(np.array([0, 1], np.int64)), 2.5), TypeError, "one_hot", "num_classes", fn=call, desc="float count")]


add(OpInfo("one_hot", lambda m, *a: m.nn.functional.one_hot(*a), _one_hot_samples, dtypes=("int64",),
           errors=_one_hot_errors))


# ---- bincount: counts (or weight sums) per value; the bin count is data, so no meta samples
def _bincount_samples(rng, dtype):
    values = T(rng.integers(0, 5, 8).astype(NP_DTYPE[dtype]))
    return [Sample((values,), desc="counts", meta=False),
            Sample((values, None, 7), desc="minlength past the largest", meta=False),
            Sample((values, T(make(rng, (8,), "float32"))), desc="float32 weights", meta=False),
            Sample((values, T(make(rng, (8,), "float64"))), desc="float64 weights", meta=False),
            Sample((T(np.zeros(0, NP_DTYPE[dtype])),), desc="empty", meta=False),
            Sample((values,), desc="method", fn=lambda m, a: a.bincount(), meta=False)]


add(OpInfo("bincount", fn("bincount"), _bincount_samples, dtypes=("int64", "int32", "uint8"),
           errors=lambda rng: [dataclasses.replace(e, sample=dataclasses.replace(e.sample, meta=False)) for e in [
               E((T(np.array([-1, 2], np.int64)),), RuntimeError, "bincount", "non-negative", desc="negative value")]] + [
               E((T(np.zeros((2, 2), np.int64)),), RuntimeError, "bincount", "1-d", desc="2-d input"),
               E((T(f32(rng, (3,))),), NotImplementedError, "bincount", desc="float input"),
               E((T(np.array([1], np.int64)), T(f32(rng, (2,)))), RuntimeError, "bincount", "weights",
                 desc="weights of another length")]))
