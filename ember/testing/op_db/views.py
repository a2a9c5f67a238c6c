"""View ops: as_strided, view/reshape, permute/transpose/t, expand, squeeze/unsqueeze, slice/select."""
from __future__ import annotations


import numpy as np

from .samples import ALL, DT, NP_DTYPE, OpInfo, Sample, T, aten, fn, is_float, make, method
from .database import E, add, f32, layouts


def _as_strided_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), (2, 2), (1, 2)), desc="transposed window"),
            Sample((T(a((2, 3)), grad=g), (2, 2), (3, 1), 1), desc="offset window"),
            Sample((T(a((6,)), grad=g), (3,), (2,)), desc="every other"),
            Sample((T(a((2, 3)), grad=g), (), (), 4), desc="0-d"),
            Sample((T(a((2, 3)), grad=g), (0, 2), (2, 1)), desc="empty"),
            Sample((T(a((2, 3)), grad=g), (2, 2), (1, 1)), desc="overlapping windows"),
            Sample((T(a((6,)), grad=g), (2, 3, 2), (3, 0, 1)), desc="stride 0 and overlap"),
            Sample((T(a((8,)), grad=g), (3, 2, 2), (2, 1, 2)), desc="sliding windows"),
            Sample((T(a((3, 2)), "t", grad=g), (2, 2), (1, 2), 1), desc="transposed input"),
            # reads storage the strided input does not cover: as a function of the leaf it is not
            # the composition autograd sees (torch agrees), so finite differences do not apply
            Sample((T(a((2, 4)), "s", grad=g), (2, 2), (4, 1)), desc="strided input", gradcheck=False),
            Sample((T(a((3, 1)), "e", grad=g, expand=(3, 2)), (2, 2), (1, 1)), desc="expanded input")]


add(OpInfo("as_strided", fn("as_strided"), _as_strided_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), (4, 4), (4, 1)), RuntimeError, "as_strided", desc="out of bounds"),
               E((T(f32(rng, (2, 3))), (2,), (1, 1)), RuntimeError, "as_strided", desc="len(size) != len(stride)")]))


def _view_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), (3, 2)), desc="(2,3)->(3,2)"),
            Sample((T(a((2, 3)), grad=g), (-1,)), desc="flatten -1"),
            Sample((T(a((2, 3)), grad=g), (1, 2, 3, 1)), desc="unit dims"),
            Sample((T(a(()), grad=g), (1,)), desc="0-d -> 1"),
            Sample((T(a((1,)), grad=g), ()), desc="1 -> 0-d"),
            Sample((T(a((0, 3)), grad=g), (3, 0)), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), (3, 2, 1)), desc="transposed, compatible"),
            Sample((T(a((2, 4)), "s", grad=g), (2, 2, 2)), desc="strided, splitting a dim"),
            Sample((T(a((2, 3)), grad=g), (6,)), desc="method with varargs", fn=lambda m, x, s: x.view(*s))]


add(OpInfo("view", method("view"), _view_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(make(rng, (3, 2), "float32"), "t"), (6,)), RuntimeError, "view", desc="incompatible strides"),
               E((T(f32(rng, (2, 3))), (4,)), RuntimeError, "view", desc="wrong numel"),
               E((T(f32(rng, (2, 3))), (-1, -1)), RuntimeError, "view", desc="two -1")]))


def _reshape_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in layouts(rng, dtype, g):
        S.append(Sample((t, (-1,)), desc=f"{desc} -> flat"))
        S.append(Sample((t, (3, 1, 2)), desc=f"{desc} -> 3-d"))
    S.append(Sample((T(make(rng, (), dtype), grad=g), (1, 1)), desc="0-d"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), (3, -1)), desc="empty with -1"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), (6,)), desc="method varargs",
                    fn=lambda m, x, s: x.reshape(*s)))
    return S


add(OpInfo("reshape", fn("reshape"), _reshape_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (4,)), RuntimeError, "reshape", desc="wrong numel")]))


def _permute_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 1, 3)), grad=g), (2, 0, 1)), desc="3-d"),
            Sample((T(a((2, 3)), grad=g), (-1, 0)), desc="negative dims"),
            Sample((T(a(()), grad=g), ()), desc="0-d"),
            Sample((T(a((0, 3)), grad=g), (1, 0)), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), (1, 0)), desc="transposed"),
            Sample((T(a((2, 1, 3)), grad=g), (1, 2, 0)), desc="method varargs", fn=lambda m, x, d: x.permute(*d))]


add(OpInfo("permute", fn("permute"), _permute_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (0,)), RuntimeError, "permute", desc="too few dims"),
                               E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "permute", desc="repeated dim")]))


def _transpose_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0, 1), desc="2-d"), Sample((T(a((2, 1, 3)), grad=g), 0, -1), desc="3-d"),
            Sample((T(a(()), grad=g), 0, -1), desc="0-d"), Sample((T(a((0, 3)), grad=g), 0, 1), desc="empty"),
            Sample((T(a((2, 4)), "s", grad=g), 1, 0), desc="strided"),
            Sample((T(a((2, 3)), grad=g), 1, 1), desc="same dim")]


add(OpInfo("transpose.int", fn("transpose"), _transpose_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 0, 2), IndexError, "transpose", desc="dim out of range")]))


def _t_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g),), desc="2-d"), Sample((T(a((3,)), grad=g),), desc="1-d"),
            Sample((T(a(()), grad=g),), desc="0-d"), Sample((T(a((3, 2)), "t", grad=g),), desc="transposed"),
            Sample((T(a((0, 3)), grad=g),), desc="empty"),
            Sample((T(a((2, 3)), grad=g),), desc="method", fn=lambda m, x: x.t())]


add(OpInfo("t", fn("t"), _t_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 1, 3))),), RuntimeError, "t", desc="3-d")]))


def _expand_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((3, 1)), grad=g), (3, 4)), desc="size-1 dim"),
            Sample((T(a((3,)), grad=g), (2, 3)), desc="new leading dim"),
            Sample((T(a((3, 1)), grad=g), (-1, 2)), desc="-1 keeps a size"),
            Sample((T(a(()), grad=g), (2, 3)), desc="0-d"),
            Sample((T(a((1, 3)), grad=g), (0, 3)), desc="to empty"),
            Sample((T(a((2, 1)), "t", grad=g), (2, 2, 2)), desc="transposed"),
            Sample((T(a((3, 1)), grad=g), (2, 3, 1)), desc="method varargs", fn=lambda m, x, s: x.expand(*s))]


add(OpInfo("expand", method("expand"), _expand_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (3, 3)), RuntimeError, "expand", desc="non-singleton"),
                               E((T(f32(rng, (2, 3))), (3,)), RuntimeError, "expand", desc="too few sizes")]))


def _squeeze_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 1, 3, 1)), grad=g),), desc="all"), Sample((T(a((2, 1, 3)), grad=g), 1), desc="dim 1"),
            Sample((T(a((2, 1, 3)), grad=g), 0), desc="non-unit dim: no-op"),
            Sample((T(a((1, 2, 1)), grad=g), (0, -1)), desc="dims"),
            Sample((T(a(()), grad=g), 0), desc="0-d"), Sample((T(a((0, 1)), grad=g),), desc="empty"),
            Sample((T(a((1, 3)), "t", grad=g),), desc="transposed")]


add(OpInfo("squeeze.dims", fn("squeeze"), _squeeze_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 1))), 2), IndexError, "squeeze", desc="dim out of range")]))


def _unsqueeze_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0), desc="front"), Sample((T(a((2, 3)), grad=g), -1), desc="back"),
            Sample((T(a((2, 3)), grad=g), 1), desc="middle"), Sample((T(a(()), grad=g), 0), desc="0-d"),
            Sample((T(a((0, 3)), grad=g), 1), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), 1), desc="transposed"),
            Sample((T(a((2, 4)), "s", grad=g), 2), desc="strided")]


add(OpInfo("unsqueeze", fn("unsqueeze"), _unsqueeze_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 3), IndexError, "unsqueeze", desc="dim out of range")]))


def _slice_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((4, 3)), grad=g), 0, 1, 3, 1), desc="rows 1:3"),
            Sample((T(a((4, 3)), grad=g), 1, 0, 3, 2), desc="cols ::2"),
            Sample((T(a((4, 3)), grad=g), 0, -3, None, 1), desc="negative start"),
            Sample((T(a((4, 3)), grad=g), -1, 1, 100, 1), desc="end past size"),
            Sample((T(a((4, 3)), grad=g), 0, 3, 1, 1), desc="empty result"),
            Sample((T(a((3, 4)), "t", grad=g), 0, 0, 4, 3), desc="transposed"),
            Sample((T(a((4, 3)), grad=g), 0, None, None, 1), desc="all"),
            Sample((T(a((4, 3)), grad=g), 0, 1, 3, 1), desc="indexing", fn=lambda m, x, d, s, e, st: x[s:e])]


add(OpInfo("slice.Tensor", fn("slice"), _slice_samples, dtypes=ALL, grad=True, torch_call=aten("slice.Tensor"),
           errors=lambda rng: [E((T(f32(rng, ())), 0, 0, 1, 1), IndexError, "slice", desc="0-d"),
                               E((T(f32(rng, (3,))), 0, 0, 2, 0), RuntimeError, "slice", "step", desc="step 0")]))


def _select_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0, 1), desc="row"), Sample((T(a((2, 3)), grad=g), -1, -1), desc="last col"),
            Sample((T(a((3,)), grad=g), 0, 2), desc="1-d -> 0-d"), Sample((T(a((0, 3)), grad=g), 1, 0), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), 1, 0), desc="transposed"),
            Sample((T(a((2, 3)), grad=g), 0, 1), desc="indexing", fn=lambda m, x, d, i: x[i])]


add(OpInfo("select.int", fn("select"), _select_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 0, 2), IndexError, "select", "index", desc="index out of range"),
                               E((T(f32(rng, ())), 0, 0), IndexError, "select", desc="0-d")]))


def contiguous_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((t,), desc=desc) for t, desc in layouts(rng, dtype, g)] + [
        Sample((T(make(rng, (), dtype), grad=g),), desc="0-d"),
        Sample((T(make(rng, (3, 1), dtype), "e", grad=g, expand=(3, 2)),), desc="expanded")]


add(OpInfo("contiguous", method("contiguous"), contiguous_samples, dtypes=ALL, grad=True))




_INT_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}


def _view_dtype_samples(rng, dtype):
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    size = np.dtype(NP_DTYPE[dtype]).itemsize
    same = _INT_OF_SIZE[size]
    S = [Sample((T(a((2, 4))), DT(same)), desc="same element size"),
         Sample((T(a((3, 2)), "t"), DT(same)), desc="transposed, same element size"),
         Sample((T(a(())), DT(same)), desc="0-d, same element size")]
    if size > 1:
        S.append(Sample((T(a((2, 4))), DT("int8")), desc="smaller elements: the last dim grows"))
    if size < 8:
        wider = _INT_OF_SIZE[8]
        S.append(Sample((T(a((2, 8))), DT(wider)), desc="larger elements: the last dim shrinks"))
    return S


add(OpInfo("view.dtype", method("view"), _view_dtype_samples, dtypes=ALL, grad=False,
           errors=lambda rng: [
               E((T(make(rng, (2, 4), "int16"), "t"), DT("int32")), RuntimeError, "stride(-1)",
                 desc="last stride not 1"),
               E((T(make(rng, (2, 3), "int16")), DT("int32")), RuntimeError, "size(-1)", desc="last size not divisible"),
               E((T(make(rng, (), "int16")), DT("int32")), RuntimeError, "dim()", desc="0-d, another element size")]))


# ---- movedim: a permute (its layout and gradient are permute's)
def _movedim_samples(rng, dtype):
    x = make(rng, (2, 3, 4), dtype)
    g = is_float(dtype)
    return [Sample((T(x, grad=g), 0, 2), desc="one dim"),
            Sample((T(x, grad=g), (0, 2), (2, 0)), desc="two dims"),
            Sample((T(x, grad=g), [-1], [0]), desc="negative dims"),
            Sample((T(make(rng, (3, 4), dtype), "t", grad=g), 1, 0), desc="non-contiguous"),
            Sample((T(make(rng, (0, 3), dtype), grad=g), 0, 1), desc="empty"),
            Sample((T(make(rng, (), dtype), grad=g), 0, -1), desc="0-d"),
            Sample((T(x, grad=g), 2, 0), desc="moveaxis method", fn=lambda m, a, s, d: a.moveaxis(s, d))]


add(OpInfo("movedim.intlist", fn("movedim"), _movedim_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (0, 1), (1,)), RuntimeError, "movedim", "source",
                                 desc="lengths differ"),
                               E((T(f32(rng, (2, 3))), (0, 0), (0, 1)), RuntimeError, "movedim", "repeated",
                                 desc="repeated source dim"),
                               E((T(f32(rng, (2, 3))), 2, 0), IndexError, "movedim", desc="dim out of range"),
                               E((T(f32(rng, (2, 3))), 0.5, 0), TypeError, "movedim", "source", desc="float dim")]))


# ---- Tensor.unfold: windows along one dim as a view (overlapping ones add up in the gradient)
def _unfold_samples(rng, dtype):
    g = is_float(dtype)
    x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample((x((2, 3, 5)), 2, 2, 1), desc="overlapping windows"), Sample((x((2, 6, 3)), 1, 2, 2), desc="disjoint"),
            Sample((x((2, 7)), -1, 3, 2), desc="a remainder left out"), Sample((x((4, 3), "t"), 0, 2, 1), desc="transposed"),
            Sample((x((2, 4)), 1, 0, 1), desc="empty windows"), Sample((x(()), 0, 1, 1), desc="0-d"),
            Sample((x((0, 3)), 1, 2, 1), desc="empty")]


add(OpInfo("unfold", method("unfold"), _unfold_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 4))), 1, 5, 1), RuntimeError, "maximum size", desc="window too long"),
                               E((T(f32(rng, (2, 4))), 1, 2, 0), RuntimeError, "step is 0", desc="step 0"),
                               E((T(f32(rng, (2, 4))), 1, -1, 1), RuntimeError, "size is -1", desc="negative size"),
                               E((T(f32(rng, (2, 4))), 2, 2, 1), IndexError, "Dimension out of range",
                                 desc="dim out of range")]))
