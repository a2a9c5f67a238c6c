"""Shape ops (flip, roll, tril/triu, repeat/tile, repeat_interleave, split/chunk/unbind/narrow, diagonal, alias),
einsum, lerp/addcmul/addcdiv, scalar_tensor and empty_strided."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tolerances import LINALG_TOL
from .samples import ALL, DEVICE, DT, FLOAT, NUM, OpInfo, Sample, T, aten, fn, is_float, make, method
from .database import E, add, f32, inplace_only


def _ins(rng, dtype, g, *, zero_d=True, empty=True, three=True):
    a = lambda shape: make(rng, shape, dtype)   # noqa: E731
    ins = [(T(a((3, 4)), grad=g), "2-d"), (T(a((4, 3)), "t", grad=g), "transposed"),
           (T(a((3, 4)), "s", grad=g), "strided"), (T(a((3, 1)), "e", grad=g, expand=(3, 4)), "expanded")]
    if three:
        ins.append((T(a((2, 3, 4)), grad=g), "3-d"))
    if zero_d:
        ins.append((T(a(()), grad=g), "0-d"))
    if empty:
        ins.append((T(a((0, 3)), grad=g), "empty"))
    return ins


def _flip_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _ins(rng, dtype, g, zero_d=False):
        nd = t.values.ndim
        for dims in ((0,), (-1,), (0, 1) if nd >= 2 else (0,), ()):
            S.append(Sample((t, dims), desc=f"{desc} dims={dims}"))
    S.append(Sample((T(make(rng, (), dtype), grad=g), (0,)), desc="0-d"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 1), desc="int dims", fn=lambda m, x, d: m.flip(x, [d])))
    return S


add(OpInfo("flip", fn("flip"), _flip_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "flip", desc="repeated dim"),
                               E((T(f32(rng, (2, 3))), (2,)), IndexError, "flip", desc="dim out of range")]))


def _roll_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _ins(rng, dtype, g, zero_d=False):
        nd = t.values.ndim
        S.append(Sample((t, 1, 0), desc=f"{desc} shift 1 dim 0"))
        S.append(Sample((t, -5, -1), desc=f"{desc} shift -5 last dim"))
        S.append(Sample((t, 2), desc=f"{desc} flattened"))
        if nd >= 2:
            S.append(Sample((t, (1, -2), (0, 1)), desc=f"{desc} two dims"))
    S.append(Sample((T(make(rng, (), dtype), grad=g), 1), desc="0-d"))
    S.append(Sample((T(make(rng, (3, 4), dtype), grad=g), 4, 1), desc="full turn"))
    return S


add(OpInfo("roll", fn("roll"), _roll_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (1, 2), (0,)), RuntimeError, "roll", desc="shifts != dims"),
                               E((T(f32(rng, (2, 3))), 1, 2), IndexError, "roll", desc="dim out of range")]))


def _tri_samples(inplace):
    def gen(rng, dtype):
        g = is_float(dtype)
        S = []
        for t, desc in _ins(rng, dtype, g, zero_d=False):
            if inplace and t.layout == "e":
                continue
            for diag in (0, 1, -2, 5):
                S.append(Sample((t, diag), desc=f"{desc} diagonal={diag}"))
        S.append(Sample((T(make(rng, (3, 4), dtype), grad=g),), desc="default diagonal"))
        return S
    return gen


for _nm in ("tril", "triu"):
    add(OpInfo(_nm, fn(_nm), _tri_samples(False), dtypes=ALL, grad=True,
               errors=lambda rng, _nm=_nm: [E((T(f32(rng, (3,))),), RuntimeError, _nm, desc="1-d input"),
                                            E(("x",), TypeError, _nm, desc="str input")]))
    add(OpInfo(f"{_nm}_", method(f"{_nm}_"), _tri_samples(True), dtypes=ALL, grad=True, inplace=True,
               errors=lambda rng, _nm=_nm: [E((T(f32(rng, (3,))),), RuntimeError, _nm + "_", desc="1-d input")]))


def _repeat_samples(tile):
    def gen(rng, dtype):
        g = is_float(dtype)
        S = []
        for t, desc in _ins(rng, dtype, g):
            nd = t.values.ndim
            S.append(Sample((t, (2,) * nd), desc=f"{desc} twice each"))
            S.append(Sample((t, (2, 1) + (3,) * max(nd - 1, 0)), desc=f"{desc} new leading dims"))
            S.append(Sample((t, (1,) * nd), desc=f"{desc} ones (a copy)"))
            if nd:
                S.append(Sample((t, (0,) * nd), desc=f"{desc} zeros"))
        if tile:
            S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), (2,)), desc="fewer dims than the tensor"))
        else:
            S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), (2, 1, 2)), desc="varargs",
                            fn=lambda m, x, r: x.repeat(*r)))
        return S
    return gen


add(OpInfo("repeat", method("repeat"), _repeat_samples(False), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (2,)), RuntimeError, "repeat", desc="fewer repeats than dims"),
                               E((T(f32(rng, (2, 3))), (-1, 2)), RuntimeError, "repeat", desc="negative repeat")]))
add(OpInfo("tile", fn("tile"), _repeat_samples(True), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (-1, 2)), RuntimeError, "tile", desc="negative repeat")]))


# ---------------------------------------------------------------------------- splitting
def _split_samples(kind):
    def gen(rng, dtype):
        g = is_float(dtype)
        S = []
        for t, desc in _ins(rng, dtype, g, zero_d=False):
            n0 = t.values.shape[0]
            if kind == "split":
                S += [Sample((t, 2), desc=f"{desc} by 2"), Sample((t, 2, -1), desc=f"{desc} by 2 last dim"),
                      Sample((t, 10, 1), desc=f"{desc} one chunk")]
            elif kind == "sizes":
                sizes = [1, n0 - 1] if n0 else [0, 0]
                S += [Sample((t, sizes), desc=f"{desc} sizes {sizes}"),
                      Sample((t, [t.values.shape[-1]], -1), desc=f"{desc} one size")]
            elif kind == "chunk":
                S += [Sample((t, 2), desc=f"{desc} 2 chunks"), Sample((t, 3, -1), desc=f"{desc} 3 chunks last dim"),
                      Sample((t, 5), desc=f"{desc} more chunks than elements")]
            elif kind == "unbind":
                S += [Sample((t,), desc=desc), Sample((t, -1), desc=f"{desc} last dim")]
            else:
                S += [Sample((t, 0, 1 if n0 else 0, 2 if n0 >= 3 else 0), desc=f"{desc} rows"),
                      Sample((t, -1, -2, 2), desc=f"{desc} negative start")]
        if kind == "split":
            S.append(Sample((T(make(rng, (3, 4), dtype), grad=g), [1, 3], 1), desc="list of sizes"))
            S.append(Sample((T(make(rng, (3, 4), dtype), grad=g), 2), desc="method",
                            fn=lambda m, x, s: x.split(s)))
        return S
    return gen


def _split_errors(name, *bad):
    def errors(rng):
        return [E((T(f32(rng, (3, 4))), *bad), RuntimeError, name, desc="bad size"),
                E((T(f32(rng, ())), *bad[:1]), RuntimeError, name, desc="0-d input")]
    return errors


add(OpInfo("split.Tensor", fn("split"), _split_samples("split"), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), -1), RuntimeError, "split", "split_size", desc="negative"),
                               E((T(f32(rng, (3, 4))), 2, 2), IndexError, "split", desc="dim out of range")]))
add(OpInfo("split_with_sizes", fn("split_with_sizes"), _split_samples("sizes"), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), [1, 1]), RuntimeError, "split_with_sizes", "split_sizes",
                                 desc="sizes do not sum to the dim"),
                               E((T(f32(rng, (3, 4))), [4, -1]), RuntimeError, "split_with_sizes", desc="negative")]))
add(OpInfo("chunk", fn("chunk"), _split_samples("chunk"), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), 0), RuntimeError, "chunk", "chunks", desc="0 chunks"),
                               E((T(f32(rng, (3, 4))), 2, 2), IndexError, "chunk", desc="dim out of range")]))
add(OpInfo("unbind.int", fn("unbind"), _split_samples("unbind"), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, ())),), IndexError, "unbind", desc="0-d input"),
                               E((T(f32(rng, (3, 4))), 2), IndexError, "unbind", desc="dim out of range")]))
add(OpInfo("narrow", fn("narrow"), _split_samples("narrow"), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), 0, 2, 2), RuntimeError, "narrow", desc="past the end"),
                               E((T(f32(rng, (3, 4))), 2, 0, 1), IndexError, "narrow", desc="dim out of range")]))


def _diagonal_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _ins(rng, dtype, g, zero_d=False):
        nd = t.values.ndim
        for off in (0, 1, -2, 7):
            S.append(Sample((t, off), desc=f"{desc} offset={off}"))
        if nd == 3:
            S.append(Sample((t, 1, 2, 0), desc=f"{desc} dims 2, 0"))
            S.append(Sample((t, -1, -1, 1), desc=f"{desc} dims -1, 1"))
    S.append(Sample((T(make(rng, (3, 4), dtype), grad=g),), desc="method", fn=lambda m, x: x.diagonal()))
    return S


add(OpInfo("diagonal", fn("diagonal"), _diagonal_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), 0, 1, 1), RuntimeError, "diagonal", desc="same dims"),
                               E((T(f32(rng, (3, 4))), 0, 0, 2), IndexError, "diagonal", desc="dim out of range")]))
add(OpInfo("alias", fn("alias"), lambda rng, d: [Sample((t,), desc=desc) for t, desc in _ins(rng, d, is_float(d))],
           dtypes=ALL, grad=True, torch_call=aten("alias")))


# ------------------------------------------------------------------------------- einsum
def _einsum_samples(rng, dtype):
    a = lambda *shape: T(make(rng, shape, dtype), grad=True)   # noqa: E731
    return [Sample(("ij,jk->ik", a(2, 3), a(3, 4)), desc="matmul"),
            Sample(("bij,bjk->bik", a(2, 2, 3), a(2, 3, 4)), desc="batched matmul"),
            Sample(("ii->", a(3, 3)), desc="trace"),
            Sample(("ii->i", a(3, 3)), desc="diagonal", meta=False),     # torch returns a view here
            Sample(("i,j->ij", a(3), a(2)), desc="outer"),
            Sample(("ij->ji", a(2, 3)), desc="transpose", meta=False),
            Sample(("ij->", a(2, 3)), desc="sum all"),
            Sample(("ij,jk", a(2, 3), a(3, 4)), desc="implicit output"),
            Sample(("...ij,...jk->...ik", a(2, 2, 3), a(3, 4)), desc="ellipsis broadcast"),
            # torch returns its bmm result permuted; ember's meta predicts a contiguous result
            Sample(("bij,jk->bki", a(2, 2, 3), a(3, 4)), desc="permuted output", meta=False),
            Sample(("ij,jk,kl->il", a(2, 3), a(3, 4), a(4, 2)), desc="three operands"),
            Sample(("ij,ij->i", a(2, 3), a(2, 3)), desc="row dot products"),
            Sample(("ij,kj->", a(2, 3), a(1, 3)), desc="size-1 broadcast, full contraction"),
            Sample(("i j , j k -> i k", a(2, 3), a(3, 4)), desc="spaces"),
            Sample(("ij,jk->ik", a(0, 3), a(3, 4)), desc="empty"),
            Sample(("ij,jk->ik", [a(2, 3), a(3, 4)]), desc="operands as a list",
                   fn=lambda m, eq, ops: m.einsum(eq, ops))]


add(OpInfo("einsum", fn("einsum"), _einsum_samples, dtypes=FLOAT, grad=True, tol=LINALG_TOL, grad_tol=LINALG_TOL,
           errors=lambda rng: [E(("ij,jk->ik", T(f32(rng, (2, 3)))), RuntimeError, "einsum", desc="too few operands"),
                               E(("ij,jk->ik", T(f32(rng, (2, 3))), T(f32(rng, (4, 4)))), RuntimeError, "einsum",
                                 desc="sizes do not match"),
                               E(("ij->k", T(f32(rng, (2, 3)))), RuntimeError, "einsum", desc="unknown output"),
                               E(("ij,jk->ik", T(f32(rng, (2, 3))), T(make(rng, (3, 4), "float64"))),
                                 RuntimeError, "einsum", desc="mixed dtypes")]))


# --------------------------------------------------------------------- pointwise ternary
def _lerp_samples(scalar):
    def gen(rng, dtype):
        a = lambda shape, layout="c", **k: T(make(rng, shape, dtype), layout, grad=True, **k)   # noqa: E731
        w = (lambda shape: 0.3) if scalar else (lambda shape: T(make(rng, shape, dtype, low=-0.5, high=1.5),
                                                                 grad=True))
        S = [Sample((a((2, 3)), a((2, 3)), w((2, 3))), desc="same shape"),
             Sample((a((2, 1, 3)), a((4, 1)), w((3,))), desc="broadcast"),
             Sample((a(()), a(()), w(())), desc="0-d"),
             Sample((a((0, 3)), a((3,)), w((3,))), desc="empty"),
             Sample((a((2, 3), "t"), a((2, 3), "s"), w((2, 3))), desc="non-contiguous"),
             Sample((a((3, 1), "e", expand=(3, 4)), a((3, 4)), w((4,))), desc="expanded self")]
        if scalar:
            S += [Sample((a((2, 3)), a((2, 3)), 0.8), desc="weight >= 0.5"),
                  Sample((a((2, 3)), a((2, 3)), 2), desc="int weight")]
        elif dtype == "float32":
            S.append(Sample((a((2, 3)), a((2, 3)), T(make(rng, (), "float64"), grad=True)),
                            desc="mixed: 0-d float64 weight"))
        return S
    return gen


def _lerp_errors(name):
    def errors(rng):
        w = 0.5 if name == "lerp.Scalar" else T(f32(rng, (2, 3)))
        return [E((T(f32(rng, (2, 3))), T(make(rng, (2, 3), "float64")), w), RuntimeError, "lerp", "end",
                  desc="end dtype differs"),
                E((T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64")),
                   w if name == "lerp.Scalar" else T(make(rng, (2, 3), "int64"))), NotImplementedError, "lerp",
                  desc="integer inputs"),
                E((T(f32(rng, (2, 3))), T(f32(rng, (4,))), w), RuntimeError, "lerp", desc="shapes do not broadcast")]
    return errors


for _ov, _scalar in (("Scalar", True), ("Tensor", False)):
    add(OpInfo(f"lerp.{_ov}", fn("lerp"), _lerp_samples(_scalar), dtypes=FLOAT, grad=True,
               errors=_lerp_errors(f"lerp.{_ov}")))
    add(OpInfo(f"lerp_.{_ov}", method("lerp_"), inplace_only(_lerp_samples(_scalar), "lerp_"), dtypes=FLOAT,
               grad=True, inplace=True,
               errors=lambda rng, _ov=_ov: [E((T(f32(rng, (3,))), T(f32(rng, (2, 3))),
                                               0.5 if _ov == "Scalar" else T(f32(rng, (2, 3)))), RuntimeError,
                                              "lerp_", desc="output shape != broadcast shape")]))


def _addc_samples(div):
    def gen(rng, dtype):
        g = is_float(dtype)
        dom = "nonzero" if div else "any"
        a = lambda shape, layout="c", d=dtype, **k: T(make(rng, shape, d), layout, grad=g and is_float(d), **k)  # noqa
        b = lambda shape, layout="c", d=dtype: T(make(rng, shape, d, domain=dom), layout, grad=g and is_float(d))  # noqa
        S = [Sample((a((2, 3)), a((2, 3)), b((2, 3))), desc="same shape"),
             Sample((a((2, 3)), a((2, 3)), b((2, 3))), {"value": 0.5 if g else 2}, desc="value"),
             Sample((a((2, 1, 3)), a((4, 1)), b((3,))), desc="broadcast"),
             Sample((a(()), a(()), b(())), desc="0-d"),
             Sample((a((0, 3)), a((3,)), b((3,))), desc="empty"),
             Sample((a((2, 3), "t"), a((2, 3), "s"), b((2, 3), "t")), desc="non-contiguous"),
             Sample((a((3, 1), "e", expand=(3, 4)), a((3, 4)), b((4,))), desc="expanded self")]
        if dtype == "float32":
            S.append(Sample((a((2, 3)), a((2, 3), d="int64"), b((2, 3))), desc="mixed: int64 tensor1"))
            S.append(Sample((a((2, 3), d="float64"), a((2, 3)), b((2, 3))), desc="mixed: float64 self"))
        return S
    return gen


for _nm, _div in (("addcmul", False), ("addcdiv", True)):
    add(OpInfo(_nm, fn(_nm), _addc_samples(_div), dtypes=FLOAT if _div else NUM, grad=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, _nm,
                     desc="shapes do not broadcast"),
                   E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3))), "x"), TypeError, _nm, "tensor2", desc="str tensor2")]
               + ([E((T(f32(rng, (2, 3))), T(make(rng, (2, 3), "int64")), T(make(rng, (2, 3), "int64"))),
                     RuntimeError, _nm, desc="integer division")] if _nm == "addcdiv" else [])))
    add(OpInfo(f"{_nm}_", method(f"{_nm}_"), inplace_only(_addc_samples(_div), f"{_nm}_"),
               dtypes=FLOAT if _div else NUM, grad=True, inplace=True,
               errors=lambda rng, _nm=_nm: [E((T(f32(rng, (3,))), T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))),
                                              RuntimeError, _nm + "_", desc="output shape != broadcast shape")]))


# ------------------------------------------------------------------------------ factories
def _scalar_tensor_samples(rng, dtype):
    v = {"bool": True}.get(dtype, 3 if not is_float(dtype) else 2.5)
    return [Sample((v,), {"dtype": DT(dtype), "device": DEVICE}, desc="with dtype"),
            Sample((3,), {"device": DEVICE}, desc="int -> default float"),
            Sample((True,), {"device": DEVICE}, desc="bool -> default float")]


add(OpInfo("scalar_tensor", fn("scalar_tensor"), _scalar_tensor_samples, dtypes=ALL,
           errors=lambda rng: [E(("x",), TypeError, "scalar_tensor", desc="str value")]))


def _empty_strided_samples(rng, dtype):
    d = DT(dtype)
    return [Sample(((2, 3), (3, 1)), {"dtype": d, "device": DEVICE}, desc="contiguous"),
            Sample(((2, 3), (1, 2)), {"dtype": d, "device": DEVICE}, desc="column major"),
            Sample(((2, 3), (0, 1)), {"dtype": d, "device": DEVICE}, desc="stride 0"),
            Sample(((), ()), {"dtype": d, "device": DEVICE}, desc="0-d"),
            Sample(((0, 3), (3, 1)), {"device": DEVICE}, desc="empty, default dtype")]


add(OpInfo("empty_strided", fn("empty_strided"), _empty_strided_samples, dtypes=ALL, kind="shape_only",
           errors=lambda rng: [E(((2, 3), (1,)), RuntimeError, "empty_strided", desc="len(size) != len(stride)"),
                               E(((-1, 3), (3, 1)), RuntimeError, "empty_strided", desc="negative size")]))



# ------------------------------------------------------------------------------ diag, diag_embed, diagflat, unflatten
def _diag_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: T(make(rng, shape, dtype), grad=g)     # noqa: E731
    return [Sample((a(3),), desc="vector"), Sample((a(3), 2), desc="vector, upper diagonal"),
            Sample((a(3), -1), desc="vector, lower diagonal"), Sample((a(3, 4),), desc="matrix"),
            Sample((a(3, 4), 2), desc="matrix, upper diagonal"), Sample((a(3, 4), -2), desc="matrix, lower diagonal"),
            Sample((T(make(rng, (4, 3), dtype), "t", grad=g), 1), desc="transposed matrix"),
            Sample((a(2, 2), 5), desc="a diagonal past the matrix")]


add(OpInfo("diag", fn("diag"), _diag_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 2, 2))),), RuntimeError, "diag", "1D or 2D", desc="3-d")]))


def _diag_embed_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: T(make(rng, shape, dtype), grad=g)     # noqa: E731
    return [Sample((a(3),), desc="vector"), Sample((a(2, 3), 1), desc="batch, upper diagonal"),
            Sample((a(2, 3), -1, 0, 2), desc="dims 0 and 2, lower diagonal"),
            Sample((a(2, 3, 2), 0, 2, 0), desc="dims reversed")]


add(OpInfo("diag_embed", fn("diag_embed"), _diag_embed_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 0, 1, 1), RuntimeError, "diag_embed", desc="same dims")]))
add(OpInfo("diagflat", fn("diagflat"), lambda rng, d: [
    Sample((T(make(rng, (2, 2), d), grad=is_float(d)),), desc="matrix"),
    Sample((T(make(rng, (3,), d), grad=is_float(d)), -1), desc="vector, lower diagonal")], dtypes=ALL, grad=True,
    errors=lambda rng: [E(("x",), TypeError, "diagflat", desc="str input")]))


def _unflatten_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda *shape: T(make(rng, shape, dtype), grad=g)     # noqa: E731
    return [Sample((a(2, 6), 1, (2, 3)), desc="split"), Sample((a(2, 6), -1, (3, -1)), desc="inferred size"),
            Sample((T(make(rng, (2, 6), dtype), "t", grad=g), 1, (3, 2)), desc="transposed"),
            Sample((a(4, 3), 0, (1, 4, 1)), desc="unit sizes")]


add(OpInfo("unflatten.int", fn("unflatten"), _unflatten_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 6))), 1, (2, 4)), RuntimeError, "unflatten", "don't multiply up",
                                 desc="sizes do not match")]))


# ---- repeat_interleave: an int repeat count, a tensor of counts (data-dependent size unless output_size
# gives it, so those samples skip meta), and the index form
def _counts(values):
    return T(np.array(values, np.int64))


def _repeat_int_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape: T(make(rng, shape, dtype), grad=g)      # noqa: E731
    return [Sample((x((2, 3)), 2), desc="flattened"),
            Sample((x((2, 3)), 3), {"dim": 1}, desc="dim 1"),
            Sample((x((2, 3)), 2), {"dim": -2, "output_size": 4}, desc="output_size"),
            Sample((x((2, 3)), 0), {"dim": 0}, desc="zero repeats"),
            Sample((T(make(rng, (3, 2), dtype), "t", grad=g), 2), {"dim": 0}, desc="non-contiguous"),
            Sample((x(()), 3), desc="0-d"),
            Sample((x((0, 3)), 2), {"dim": 1}, desc="empty"),
            Sample((x((2, 3)), 2), desc="method", fn=lambda m, a, r: a.repeat_interleave(r, 1))]


def _repeat_tensor_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape: T(make(rng, shape, dtype), grad=g)      # noqa: E731
    return [Sample((x((2, 3)), _counts([1, 2])), {"dim": 0}, desc="counts", meta=False),
            Sample((x((2, 3)), _counts([0, 3, 1])), {"dim": 1}, desc="a zero count", meta=False),
            Sample((x((2, 3)), _counts([2, 1])), {"dim": 0, "output_size": 3}, desc="output_size"),
            Sample((x((2, 2)), _counts([2])), {"dim": 1}, desc="one count for all", meta=False),
            Sample((x((2, 2)), _counts(3)), desc="0-d count, flattened", meta=False)]


add(OpInfo("repeat_interleave.self_int", fn("repeat_interleave"), _repeat_int_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), -1), RuntimeError, "repeat_interleave", "non-negative",
                                 desc="negative repeats"),
                               E((T(f32(rng, (2, 3))), 2), IndexError, "repeat_interleave", kwargs={"dim": 2},
                                 desc="dim out of range"),
                               E((T(f32(rng, (2, 3))), 2), RuntimeError, "output_size",
                                 kwargs={"dim": 0, "output_size": 5}, desc="wrong output_size"),
                               E((T(f32(rng, (2, 3))), 2.5), TypeError, "repeat_interleave", desc="float repeats")]))
add(OpInfo("repeat_interleave.self_Tensor", fn("repeat_interleave"), _repeat_tensor_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), _counts([1, 2, 3])), RuntimeError, "same size",
                                 kwargs={"dim": 0}, desc="counts of another size"),
                               E((T(f32(rng, (2, 3))), T(np.array([1.0, 2.0], np.float32))), NotImplementedError,
                                 "repeat_interleave", kwargs={"dim": 0}, desc="float counts"),
                               E((T(f32(rng, (2, 3))), _counts([[1, 2]])), RuntimeError, "1-dim",
                                 kwargs={"dim": 0}, desc="2-d counts")]))
add(OpInfo("repeat_interleave.Tensor", fn("repeat_interleave"),
           lambda rng, dtype: [Sample((_counts([2, 0, 1]),), desc="indices", meta=False),
                               Sample((T(np.array([1, 3], np.int32)),), desc="int32 counts", meta=False),
                               Sample((_counts([1, 2]),), {"output_size": 3}, desc="output_size")],
           dtypes=("int64",),
           errors=lambda rng: [E((_counts([[1, 2]]),), RuntimeError, "1D vector", desc="2-d counts")]))



def _ravel_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((T(make(rng, (2, 3), dtype), grad=g),), desc="contiguous: a view"),
            Sample((T(make(rng, (3, 2), dtype), "t", grad=g),), desc="transposed: a copy"),
            Sample((T(make(rng, (), dtype), grad=g),), desc="0-d"),
            Sample((T(make(rng, (0, 3), dtype), grad=g),), desc="empty"),
            Sample((T(make(rng, (2, 2), dtype), grad=g),), desc="method", fn=lambda m, a: a.ravel())]


add(OpInfo("ravel", fn("ravel"), _ravel_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((3.0,), TypeError, "ravel", desc="number input")]))



# ---- fliplr / flipud / rot90 (flips; rot90 a flip seen transposed), diff and take
def _flip_like_samples(min_dims):
    def gen(rng, dtype):
        g = is_float(dtype)
        S = [Sample((T(make(rng, (2, 3), dtype), grad=g),), desc="2-d"),
             Sample((T(make(rng, (3, 2), dtype), "t", grad=g),), desc="transposed"),
             Sample((T(make(rng, (2, 3, 2), dtype), grad=g),), desc="3-d"),
             Sample((T(make(rng, (0, 3), dtype), grad=g),), desc="empty")]
        if min_dims == 1:
            S.append(Sample((T(make(rng, (4,), dtype), grad=g),), desc="1-d"))
        return S
    return gen


def _rot90_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)     # noqa: E731
    return [Sample((x((2, 3)),), desc="one turn"), Sample((x((2, 3)), 2), desc="half turn"),
            Sample((x((2, 3)), -1, [1, 0]), desc="back, dims swapped"), Sample((x((3, 2), "t"), 3), desc="transposed"),
            Sample((x((3, 2), "t"), 0), desc="no turn: a contiguous copy"),
            Sample((x((2, 3, 4)), 1, [0, 2]), desc="3-d"), Sample((x((2, 3)), 5, [1, -2]), desc="k past 4")]


def _diff_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape: T(make(rng, shape, dtype), grad=g)     # noqa: E731
    return [Sample((x((5,)),), desc="1-d"), Sample((x((5,)), 2), desc="second order"),
            Sample((x((3, 4)), 1, 0), desc="dim 0"),
            Sample((x((3, 4)), 1, -1, x((3, 1)), x((3, 2))), desc="prepend and append"),
            Sample((x((2,)), 3), desc="order past the length"),
            Sample((T(make(rng, (4, 3), dtype), "t", grad=g),), desc="non-contiguous"),
            Sample((x((0, 3)), 1, 0), desc="empty")]


def _take_samples(rng, dtype):
    g = is_float(dtype)
    x = T(make(rng, (2, 3), dtype), grad=g)
    idx = lambda values: T(np.array(values, np.int64))       # noqa: E731
    return [Sample((x, idx([0, 5, 2])), desc="1-d index"), Sample((x, idx([[0, 1], [-1, -6]])), desc="2-d, negative"),
            Sample((x, idx(3)), desc="0-d index"), Sample((x, idx(np.zeros(0, np.int64))), desc="empty index"),
            Sample((T(make(rng, (3, 2), dtype), "t", grad=g), idx([1, 4])), desc="non-contiguous"),
            Sample((x, idx([1])), desc="method", fn=lambda m, a, i: a.take(i))]


add(OpInfo("fliplr", fn("fliplr"), _flip_like_samples(2), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3,))),), RuntimeError, "fliplr", "2-d", desc="1-d")]))
add(OpInfo("flipud", fn("flipud"), _flip_like_samples(1), dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, ())),), RuntimeError, "flipud", "1-d", desc="0-d")]))
add(OpInfo("rot90", fn("rot90"), _rot90_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3,))),), RuntimeError, "rot90", "total dims", desc="1-d"),
                               E((T(f32(rng, (2, 2))), 1, [0, 0]), RuntimeError, "rot90", "different", desc="same dims"),
                               E((T(f32(rng, (2, 2))), 1, [0]), RuntimeError, "rot90", "rotation dims", desc="one dim")]))
add(OpInfo("diff", fn("diff"), _diff_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, ())),), RuntimeError, "diff", "one-dimensional", desc="0-d"),
                               E((T(f32(rng, (3,))), -1), RuntimeError, "diff", "non-negative", desc="negative order"),
                               E((T(f32(rng, (2, 3))), 1, -1, T(f32(rng, (2,)))), RuntimeError, "diff",
                                 "same dimension", desc="prepend of fewer dims")]))
add(OpInfo("take", fn("take"), _take_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [dataclasses.replace(E((T(f32(rng, (2, 3))), T(np.array([6], np.int64))), IndexError,
                                                     "take", "out of range", desc="index past the end"),
                                                   sample=dataclasses.replace(
                                                       E((T(f32(rng, (2, 3))), T(np.array([6], np.int64))),
                                                         IndexError, "take").sample, meta=False)),
                               E((T(f32(rng, (2, 3))), T(np.array([0], np.int32))), RuntimeError, "take", "long tensor",
                                 desc="int32 index"),
                               E((T(np.zeros(0, np.float32)), T(np.array([0], np.int64))), IndexError, "take", "empty",
                                 desc="empty input")]))
