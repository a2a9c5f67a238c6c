"""embedding_bag, grid sampling, affine grids, argwhere and nonzero_numpy.

embedding_bag's samples compare the bag results (output 0): the auxiliary outputs of
PyTorch's cpu kernel (offset2bag, bag_size, max_indices) are left empty or zero depending on
the mode, so tests/test_indexing.py checks them against torch's meta shapes and, where the
cpu kernel fills them, its values. Index and offset *values* are data: those error inputs do
not run on meta (`meta=False`), where PyTorch's meta device does not raise either.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import ALL, FLOAT, OpInfo, Sample, T, fn, make
from .database import E, add, f32
from .convolution import aten_or_ember
from .indexing import I


def _oor(args, exc, *match, desc="index out of range"):
    """An error input that depends on index values (not raised on meta, as in torch)."""
    err = E(args, exc, *match, desc=desc)
    err.sample.meta = False
    return err


def _first(name: str):
    """module.name(...)[0]: the bag results of an embedding_bag op."""
    def call(m, *a, **k):
        return getattr(m, name)(*a, **k)[0]
    call.__name__ = f"{name}[0]"
    return call


# ------------------------------------------------------------------------------ _embedding_bag
def _bag_samples(rng, dtype):
    w = lambda shape=(6, 3), lay="c": T(make(rng, shape, dtype), lay, grad=True)  # noqa: E731
    idx = I([1, 5, 0, 3, 3, 2, 4])
    off = I([0, 2, 2, 5])                                   # bag 1 is empty
    psw = lambda n=7: T(make(rng, (n,), dtype), grad=True)  # noqa: E731
    out = []
    for mode, name in ((0, "sum"), (1, "mean"), (2, "max")):
        out += [Sample((w(), idx, off, False, mode), desc=f"{name}, an empty bag"),
                Sample((w(), idx, I([0, 3, 7]), False, mode, False, None, True), desc=f"{name}, include_last_offset"),
                Sample((w(), I([2, 1, 2, 0, 2]), I([0, 1, 3]), False, mode, False, None, False, 2),
                       desc=f"{name}, padding_idx (a bag of padding only)"),
                Sample((w((6, 3), "t"), I([4, 0, 5, 1], "int32"), I([0, 1], "int32"), False, mode),
                       desc=f"{name}, transposed weight, int32"),
                Sample((w((6, 3), "s"), I([4, 0, 5, 1]), I([0, 3], "int32"), False, mode),
                       desc=f"{name}, strided weight, mixed index dtypes")]
    # PyTorch's cpu kernel scales by the counts of the wrong indices when they differ
    # (tests/test_indexing.py checks the documented semantics); every index here occurs twice
    out += [Sample((w(), I([1, 4, 1, 3, 4, 3]), I([0, 2, 3]), True, 0), desc="sum, scale_grad_by_freq",
                   gradcheck=False),
            Sample((w(), I([1, 4, 1, 3, 4, 3]), I([0, 2, 3]), True, 1), desc="mean, scale_grad_by_freq",
                   gradcheck=False),
            Sample((w(), idx, off, False, 0, False, psw()), desc="per_sample_weights"),
            Sample((w(), I([2, 1, 2, 0, 2]), I([0, 1, 3, 5]), False, 0, False, psw(5), True, 2),
                   desc="per_sample_weights, include_last_offset, padding_idx"),
            Sample((w(), I(np.zeros(0)), I([0, 0]), False, 1), desc="no indices"),
            Sample((w(), I(np.zeros(0)), I([0, 0]), False, 2), desc="no indices, max")]
    return out


def _bag_errors(rng):
    w = T(f32(rng, (5, 3)))
    i, off = I([1, 2, 4, 4, 3]), I([0, 2, 2])
    name = "_embedding_bag"
    return [_oor((w, i, I([1, 2])), RuntimeError, name, "offsets", desc="offsets[0] != 0"),
            _oor((w, i, I([0, 2, 7])), RuntimeError, name, "offsets", desc="offsets[-1] > len(indices)"),
            _oor((w, I([0, 5]), I([0])), RuntimeError, name, "indices"),
            _oor((w, I([0, -1]), I([0])), RuntimeError, name, "indices", desc="negative index"),
            E((w, i, off, False, 1, False, T(f32(rng, (5,)))), RuntimeError, name, "per_sample_weights",
              desc="per_sample_weights with mean"),
            E((w, i, off, False, 3), RuntimeError, name, "mode", desc="mode 3"),
            E((w, T(np.zeros(5, np.float32)), off), RuntimeError, name, "indices", desc="float indices"),
            E((w, i, I([[0], [2]])), RuntimeError, name, "offsets", desc="2-d offsets"),
            E((w, i, off, False, 0, False, T(f32(rng, (4,)))), RuntimeError, name, "per_sample_weights",
              desc="per_sample_weights of another length"),
            E((w, i, off, False, 0, False, T(np.ones(5, np.float64))), RuntimeError, name, "per_sample_weights",
              desc="per_sample_weights of another dtype"),
            E((T(f32(rng, (5,))), i, off), RuntimeError, name, "weight", desc="1-d weight"),
            E((w, i, I(np.zeros(0)), False, 0, False, None, True), RuntimeError, name, "offsets",
              desc="include_last_offset without offsets")]


add(OpInfo("_embedding_bag", _first("_embedding_bag"), _bag_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_bag_errors))


def _public_bag_samples(rng, dtype):
    w = lambda: T(make(rng, (6, 3), dtype), grad=True)  # noqa: E731
    return [Sample((w(), I([1, 5, 0, 3, 3, 2, 4]), I([0, 2, 2, 5]), False, 1), desc="mean"),
            Sample((w(), I([4, 0, 5, 1]), I([0, 3])), desc="defaults (sum)")]


def _padded_bag_samples(rng, dtype):
    w = lambda: T(make(rng, (6, 3), dtype), grad=True)  # noqa: E731
    i, off = I([2, 1, 5, 0, 5]), I([0, 1, 3])
    return [Sample((w(), i, off, False, 1, False, None, False, -1), desc="padding_idx -1 is the last row"),
            Sample((w(), i, off, False, 2, False, None, False, 5), desc="max, padding_idx"),
            Sample((w(), i, off, False, 0, False, None, False, None), desc="padding_idx None")]


add(OpInfo("embedding_bag", _first("embedding_bag"), _public_bag_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=lambda rng: [
               E((T(f32(rng, (5,))), I([0]), I([0])), RuntimeError, "embedding_bag", "weight", desc="1-d weight")]))
add(OpInfo("embedding_bag.padding_idx", _first("embedding_bag"), _padded_bag_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=lambda rng: [
               E((T(f32(rng, (5, 3))), I([0]), I([0]), False, 0, False, None, False, 5), RuntimeError,
                 "embedding_bag", "padding_idx", desc="padding_idx out of range"),
               E((T(f32(rng, (5, 3))), I([0]), I([0]), False, 0, False, None, False, -6), RuntimeError,
                 "embedding_bag", "padding_idx", desc="negative padding_idx out of range")]))


# ------------------------------------------------------------------------------ grid sampling
def _grid(rng, shape, dtype, lay="c"):
    """Grid points in [-1.3, 1.3] (some outside the image), away from pixel centres' kinks."""
    return T(make(rng, shape, dtype, low=-1.3, high=1.3), lay, grad=True)


def _grid_samples(rng, dtype):
    x = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=True)  # noqa: E731
    out = []
    for interp, iname in ((0, "bilinear"), (1, "nearest"), (2, "bicubic")):
        for pad, pname in ((0, "zeros"), (1, "border"), (2, "reflection")):
            for align in (False, True):
                # finite differences cost one forward per input element: gradcheck the combinations
                # that reach distinct code (each mode x each padding once, both alignments for
                # bilinear); every combination's analytic gradient is still compared with torch's
                out.append(Sample((x((2, 1, 2, 3)), _grid(rng, (2, 2, 2, 2), dtype), interp, pad, align),
                                  desc=f"{iname}, {pname}, align_corners={align}",
                                  gradcheck=interp == 0 or (pad, align) in ((0, True), (2, False))))
    out += [Sample((x((1, 2, 4, 3), "t"), _grid(rng, (1, 3, 2, 2), dtype, "s"), 0, 2, False),
                   desc="transposed input, strided grid"),
            Sample((x((1, 1, 1, 3)), _grid(rng, (1, 2, 2, 2), dtype), 0, 2, True), desc="a 1-pixel-high image"),
            Sample((x((2, 2, 3, 4)), T(make(rng, (2, 0, 3, 2), dtype), grad=True), 0, 0, False), desc="empty grid"),
            Sample((x((0, 2, 3, 4)), T(make(rng, (0, 2, 3, 2), dtype), grad=True), 1, 1, False), desc="empty batch")]
    return out


def _grid_errors(rng):
    x, g = T(f32(rng, (2, 3, 4, 5))), T(f32(rng, (2, 6, 7, 2)))
    name = "grid_sampler_2d"
    return [E((x, T(f32(rng, (6, 7, 2))), 0, 0, False), RuntimeError, name, "grid", desc="3-d grid"),
            E((x, T(f32(rng, (1, 6, 7, 2))), 0, 0, False), RuntimeError, name, "grid", desc="batch mismatch"),
            E((x, T(f32(rng, (2, 6, 7, 1))), 0, 0, False), RuntimeError, name, "grid", desc="last dim 1"),
            E((x, T(np.zeros((2, 6, 7, 2))), 0, 0, False), RuntimeError, name, "grid", desc="float64 grid"),
            E((T(f32(rng, (2, 3, 0, 5))), g, 0, 0, False), RuntimeError, name, "input", desc="empty image"),
            E((T(np.zeros((2, 3, 4, 5), np.int32)), T(np.zeros((2, 6, 7, 2), np.int32)), 0, 0, False),
              NotImplementedError, name, "input", desc="int32 input")]


add(OpInfo("grid_sampler_2d", fn("grid_sampler_2d"), _grid_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_grid_errors))
add(OpInfo("grid_sampler", fn("grid_sampler"),
           lambda rng, dtype: [dataclasses.replace(s, gradcheck=s.gradcheck and "bilinear" in s.desc)
                               for s in _grid_samples(rng, dtype) if "align_corners=False" in s.desc],
           dtypes=("float32", "float64"), grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3, 4, 5))), T(f32(rng, (2, 6, 7, 1))), 0, 0, False), RuntimeError,
                                 "grid_sampler", "grid", desc="last dim 1")]))


def _affine_samples(rng, dtype):
    th = lambda shape: T(make(rng, shape, dtype), grad=True)  # noqa: E731
    return [Sample((th((2, 2, 3)), [2, 3, 4, 5], False), desc="2-d"),
            Sample((th((2, 2, 3)), [2, 3, 4, 5], True), desc="2-d, align_corners"),
            Sample((th((1, 2, 3)), [1, 1, 1, 3], False), desc="height 1"),
            Sample((T(make(rng, (1, 2, 3), dtype), "t", grad=True), [1, 2, 3, 2], True), desc="transposed theta"),
            Sample((th((2, 3, 4)), [2, 1, 2, 3, 4], False), desc="3-d"),
            Sample((th((1, 3, 4)), [1, 1, 3, 2, 2], True), desc="3-d, align_corners")]


add(OpInfo("affine_grid_generator", fn("affine_grid_generator"), _affine_samples, dtypes=("float32", "float64"),
           grad=True,
           tol=REDUCTION_TOL, errors=lambda rng: [
               E((T(f32(rng, (2, 3, 3))), [2, 3, 4, 5], False), RuntimeError, "affine_grid_generator", "theta",
                 desc="theta of a 3-d map for a 2-d size"),
               E((T(f32(rng, (2, 2, 3))), [2, 3, 4], False), RuntimeError, "affine_grid_generator", "size",
                 desc="3-element size")]))


# ------------------------------------------------------------------------------ argwhere, nonzero_numpy
def _nonzero_like_samples(rng, dtype):
    def sparse(shape):
        a = make(rng, shape, dtype)
        return np.where(rng.random(shape) > 0.5, a, np.zeros_like(a))
    one = make(rng, (), dtype)
    return [Sample((T(sparse((3, 4))),), desc="2-d", meta=False),
            Sample((T(sparse((4, 3)), "t"),), desc="transposed", meta=False),
            Sample((T(sparse((2, 1, 3))),), desc="3-d", meta=False),
            Sample((T(make(rng, (0, 3), dtype)),), desc="empty", meta=False),
            Sample((T(np.ones_like(one)),), desc="0-d nonzero", meta=False),
            Sample((T(np.zeros_like(one)),), desc="0-d zero", meta=False)]


add(OpInfo("argwhere", fn("argwhere"), _nonzero_like_samples, dtypes=ALL,
           errors=lambda rng: [E(("x",), TypeError, "argwhere", desc="str input")]))
add(OpInfo("nonzero_numpy", aten_or_ember("nonzero_numpy"), _nonzero_like_samples, dtypes=ALL,
           errors=lambda rng: [E(("x",), TypeError, "nonzero_numpy", desc="str input to nonzero(as_tuple=True)",
                                 fn=lambda m, x: m.nonzero(x, as_tuple=True))]))
add(OpInfo("where", fn("where"), _nonzero_like_samples, dtypes=ALL,
           errors=lambda rng: [E(("x",), TypeError, "where", desc="str condition")]))
