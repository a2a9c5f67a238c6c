"""Copies and joins: clone, cat/stack, the *_scatter ops, copy_, _to_copy, fill_, zero_."""
from __future__ import annotations

import numpy as np

from .samples import ALL, DT, OpInfo, Sample, T, aten, fn, is_float, make, method
from .views import contiguous_samples
from .database import E, add, f32, unary_errors


def _clone_samples(rng, dtype):
    g = is_float(dtype)
    return contiguous_samples(rng, dtype) + [Sample((T(make(rng, (0, 3), dtype), grad=g),), desc="empty"),
                                               Sample((T(make(rng, (2, 1, 3), dtype), "t", grad=g),), desc="3-d t")]


add(OpInfo("clone", fn("clone"), _clone_samples, dtypes=ALL, grad=True, errors=unary_errors("clone")))


def _cat_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    S = [Sample(([T(a((2, 3)), grad=g), T(a((1, 3)), grad=g)], 0), desc="dim 0"),
         Sample(([T(a((2, 3)), grad=g), T(a((2, 1)), grad=g), T(a((2, 2)), grad=g)], 1), desc="dim 1, three"),
         Sample(([T(a((2, 3)), grad=g), T(a((2, 2)), grad=g)], -1), desc="dim -1"),
         Sample(([T(a((3,)), grad=g)], 0), desc="single"),
         Sample(([T(a((2, 3)), grad=g), T(a((0,)), grad=g)], 0), desc="legacy empty 1-d"),
         Sample(([T(a((0, 3)), grad=g), T(a((2, 3)), grad=g)], 0), desc="empty"),
         Sample(([T(a((2, 3)), "t", grad=g), T(a((1, 3)), "s", grad=g)], 0), desc="non-contiguous")]
    if dtype == "float32":
        S.append(Sample(([T(a((2, 3)), grad=True), T(make(rng, (1, 3), "int64"))], 0), desc="mixed float32/int64"))
        S.append(Sample(([T(make(rng, (2, 3), "float16"), grad=True), T(a((1, 3)), grad=True)], 0),
                        desc="mixed float16/float32"))
    return S


add(OpInfo("cat", fn("cat"), _cat_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E(([T(f32(rng, (2, 3))), T(f32(rng, (2, 2)))], 0), RuntimeError, "cat", desc="sizes"),
               E(([T(f32(rng, ())), T(f32(rng, ()))], 0), RuntimeError, "cat", desc="0-d"),
               E(([T(f32(rng, (2, 3))), T(f32(rng, (3,)))], 0), RuntimeError, "cat", desc="ndim"),
               E(([], 0), ValueError, "cat", desc="empty list"),
               E(([T(f32(rng, (2, 3)))], 2), IndexError, "cat", desc="dim out of range")]))


def _stack_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample(([T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)], 0), desc="dim 0"),
            Sample(([T(a((2, 3)), grad=g), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)], -1), desc="dim -1"),
            Sample(([T(a(()), grad=g), T(a(()), grad=g)], 0), desc="0-d"),
            Sample(([T(a((0, 3)), grad=g)], 1), desc="empty"),
            Sample(([T(a((2, 3)), "t", grad=g), T(a((2, 3)), "s", grad=g)], 1), desc="non-contiguous")]


add(OpInfo("stack", fn("stack"), _stack_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E(([T(f32(rng, (2, 3))), T(f32(rng, (3, 2)))], 0), RuntimeError, "stack", desc="sizes"),
               E(([T(f32(rng, (2, 3)))], 3), IndexError, "stack", desc="dim out of range")]))


def _slice_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((4, 3)), grad=g), T(a((2, 3)), grad=g), 0, 1, 3), desc="rows"),
            Sample((T(a((4, 3)), grad=g), T(a((4, 2)), grad=g), 1, 0, None, 2), desc="cols ::2"),
            Sample((T(a((4, 3)), grad=g), T(a((4, 3)), grad=g)), desc="all"),
            Sample((T(a((3, 4)), "t", grad=g), T(a((1, 4)), "t", grad=g), 0, 1, 2), desc="transposed")]


add(OpInfo("slice_scatter", fn("slice_scatter"), _slice_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (4, 3))), T(f32(rng, (3, 3))), 0, 1, 3), RuntimeError, "slice_scatter",
                                 desc="src shape")]))


def _select_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g), 0, 1), desc="row"),
            Sample((T(a((2, 3)), grad=g), T(a((2,)), grad=g), 1, -1), desc="col"),
            Sample((T(a((3,)), grad=g), T(a(()), grad=g), 0, 0), desc="1-d"),
            Sample((T(a((3, 2)), "t", grad=g), T(a((3,)), grad=g), 1, 0), desc="transposed")]


add(OpInfo("select_scatter", fn("select_scatter"), _select_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (2,))), 0, 0), RuntimeError, "select_scatter",
                                 desc="src shape")]))


def _as_strided_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((2, 2)), grad=g), (2, 2), (1, 2)), desc="transposed window"),
            Sample((T(a((2, 3)), grad=g), T(a((2, 2)), grad=g), (2, 2), (3, 1), 1), desc="offset"),
            Sample((T(a((6,)), grad=g), T(a((3,)), grad=g), (3,), (2,)), desc="every other")]


add(OpInfo("as_strided_scatter", fn("as_strided_scatter"), _as_strided_scatter_samples, dtypes=ALL, grad=True,
           torch_grad_wrong={0: "torch 2.13's as_strided_scatter_backward gives `self` the gradient of the "
                                "window it overwrote (its own gradcheck fails); ember zeroes it there"},
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (3, 3))), (2, 2), (1, 2)), RuntimeError,
                                 "as_strided_scatter", desc="src shape")]))


def _copy_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, d=dtype: make(rng, shape, d)  # noqa: E731
    S = [Sample((T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="same"),
         Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g)), desc="broadcast src"),
         Sample((T(a((2, 3)), grad=g), T(a(()), grad=g)), desc="0-d src"),
         Sample((T(a((3, 2)), "t", grad=g), T(a((3, 2)), grad=g)), desc="into transposed"),
         Sample((T(a((2, 3)), grad=g), T(a((2, 3)), "s", grad=g)), desc="from strided"),
         Sample((T(a((0, 3)), grad=g), T(a((3,)), grad=g)), desc="empty")]
    for src in ("float64", "int64", "bool", "float16"):
        if src != dtype:
            S.append(Sample((T(a((2, 3)), grad=g), T(a((2, 3), src), grad=g and is_float(src))), desc=f"from {src}"))
    return S


add(OpInfo("copy_", method("copy_"), _copy_samples, dtypes=ALL, grad=True, inplace=True,
           errors=lambda rng: [E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, "copy_", desc="shape"),
                               E((T(f32(rng, (3,))), "x"), TypeError, "copy_", "src", desc="str src")]))


def _to_copy_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for target in ("float32", "float64", "int64", "bool", "float16", "bfloat16", "uint8"):
        x = make(rng, (2, 3), dtype, low=-3, high=3)
        if target == "uint8":
            x = np.abs(x).astype(x.dtype)
        S.append(Sample((T(x, grad=g),), {"dtype": DT(target)}, desc=f"to {target}"))
    S.append(Sample((T(make(rng, (3, 2), dtype), "t", grad=g),), {"dtype": DT("float64")}, desc="transposed"))
    S.append(Sample((T(make(rng, (), dtype), grad=g),), {}, desc="0-d, same dtype"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g),), {"dtype": DT("float64")}, desc="Tensor.to",
                    fn=lambda m, x, dtype: x.to(dtype)))
    return S


add(OpInfo("_to_copy", fn("_to_copy"), _to_copy_samples, dtypes=ALL, grad=True, torch_call=aten("_to_copy"),
           errors=lambda rng: [E((T(f32(rng, (2,))),), TypeError, "_to_copy", "dtype",
                                 fn=lambda m, x: x.to(dtype="float"), desc="str dtype")]))


def _fill_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((T(make(rng, (2, 3), dtype), grad=g), 2), desc="int"),
         Sample((T(make(rng, (2, 3), dtype), grad=g), True), desc="bool"),
         Sample((T(make(rng, (), dtype), grad=g), 1), desc="0-d"),
         Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty"),
         Sample((T(make(rng, (3, 2), dtype), "t", grad=g), 3), desc="transposed"),
         Sample((T(make(rng, (2, 4), dtype), "s", grad=g), 3), desc="strided")]
    if is_float(dtype):
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 2.5), desc="float"))
    return S


add(OpInfo("fill_.Scalar", method("fill_"), _fill_samples, dtypes=ALL, grad=True, inplace=True,
           errors=lambda rng: [E((T(f32(rng, (2,))), "x"), TypeError, "fill_", desc="str value")]))


def _zero_samples(rng, dtype):
    return [Sample(s.args[:1], desc=s.desc) for s in _fill_samples(rng, dtype) if s.desc in
            ("int", "0-d", "empty", "transposed", "strided")]


add(OpInfo("zero_", method("zero_"), _zero_samples, dtypes=ALL, grad=True, inplace=True,
           errors=lambda rng: [E(("x",), TypeError, "zero_", fn=lambda m, x: m.zero_(x), desc="not a tensor")]))


add(OpInfo("fill.Scalar", fn("fill"), _fill_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2,))), "x"), TypeError, "fill", desc="str value")]))

# grad=False: torch 2.13 has no derivative for aten::copy (ember differentiates it through copy_)
add(OpInfo("copy", fn("copy"), _copy_samples, dtypes=ALL, grad=False, torch_call=aten("copy"),
           errors=lambda rng: [E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, "copy", desc="shape")]))
