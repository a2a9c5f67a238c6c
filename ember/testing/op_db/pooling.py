"""Pooling: max_pool2d_with_indices, max_pool2d/1d, avg_pool2d/1d, adaptive average pooling, max unpooling.

Samples cover kernel/stride/padding/dilation, ceil_mode, count_include_pad,
divisor_override, unbatched inputs and non-contiguous layouts; indices are compared exactly.
"""
from __future__ import annotations

import numpy as np

from ..tolerances import REDUCTION_TOL
from .convolution import aten_or_ember
from .samples import FLOAT, NP_DTYPE, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32


def _a(rng, dtype):
    return lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=is_float(dtype))  # noqa: E731


def _max_pool2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4)), 2), desc="kernel 2"),
            Sample((a((2, 2, 5, 5)), 3, 2, 1), desc="kernel 3, stride 2, padding 1"),
            Sample((a((1, 1, 5, 4)), (2, 3), (1, 2), (1, 1), (2, 1)), desc="asymmetric, dilation"),
            Sample((a((1, 2, 5, 5)), 2, 2, 0, 1, True), desc="ceil_mode"),
            Sample((a((1, 1, 6, 6)), 3, 2, 1, 1, True), desc="ceil_mode, padding"),
            Sample((a((2, 4, 4)), 2), desc="unbatched"),
            Sample((a((1, 2, 5, 4), "t"), 2, 1), desc="transposed input"),
            Sample((a((1, 2, 4, 4), "s"), 2), desc="strided input"),
            Sample((a((0, 2, 4, 4)), 2), desc="empty batch"),
            Sample((a((1, 1, 2, 2)), 3, 1, 1), desc="kernel larger than input, padded")] + \
        ([Sample((T(np.array([[[[1.0, np.nan, 0.5], [np.nan, 2.0, np.nan], [0.0, 1.0, 3.0]]]], dtype=NP_DTYPE[dtype])),
                  2, 1), desc="nan wins (the last one of a window)")] if is_float(dtype) else [])


def _pool_errors(name, nd=2):
    def errors(rng):
        x = (1, 2, 4, 4) if nd == 2 else (1, 2, 4)
        return [E((T(f32(rng, (2, 4) if nd == 2 else (1, 1, 2, 4))), 2), RuntimeError, name, desc="wrong input rank"),
                E((T(f32(rng, x)), 3, 1, 2), RuntimeError, name, "pad", desc="padding more than half the kernel"),
                E((T(f32(rng, x)), 5), RuntimeError, name, desc="output size too small"),
                E((T(f32(rng, x)), 2, 0), RuntimeError, name, "stride", desc="stride 0")]
    return errors


_MAXPOOL_DTYPES = FLOAT + ("int64",)
add(OpInfo("max_pool2d_with_indices", aten_or_ember("max_pool2d_with_indices"), _max_pool2d_samples,
           dtypes=_MAXPOOL_DTYPES, grad=True, errors=_pool_errors("max_pool2d_with_indices")))
add(OpInfo("max_pool2d", fn("max_pool2d"), _max_pool2d_samples, dtypes=_MAXPOOL_DTYPES, grad=True,
           errors=_pool_errors("max_pool2d")))


def _max_pool1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6)), 2), desc="kernel 2"),
            Sample((a((1, 2, 7)), 3, 2, 1, 2, True), desc="all options"),
            Sample((a((3, 5)), 2, 1), desc="unbatched"),
            Sample((a((1, 3, 4), "t"), 2), desc="transposed input")]


add(OpInfo("max_pool1d", fn("max_pool1d"), _max_pool1d_samples, dtypes=FLOAT, grad=True,
           errors=lambda rng: _pool_errors("max_pool1d", 1)(rng) + [
               E((T(make(rng, (1, 2, 4), "int64")), 2), NotImplementedError, "max_pool1d", desc="int input")]))


def _avg_pool2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4)), 2), desc="kernel 2"),
            Sample((a((2, 2, 5, 5)), 3, 2, 1), desc="padding, count_include_pad"),
            Sample((a((1, 1, 5, 5)), 3, 2, 1, False, False), desc="padding, count_include_pad=False"),
            Sample((a((1, 2, 5, 5)), 2, 2, 0, True), desc="ceil_mode"),
            Sample((a((1, 1, 6, 6)), 3, 2, 1, True, True), desc="ceil_mode, padding, count_include_pad"),
            Sample((a((1, 1, 6, 6)), 3, 2, 1, True, False), desc="ceil_mode, padding, no count_include_pad"),
            Sample((a((1, 1, 4, 5)), (2, 3), (1, 2), (1, 1), False, True, 3), desc="divisor_override"),
            Sample((a((2, 4, 4)), 2), desc="unbatched"),
            Sample((a((1, 2, 5, 4), "t"), 2, 1), desc="transposed input"),
            Sample((a((1, 2, 4, 4), "s"), 2), desc="strided input")]


add(OpInfo("avg_pool2d", aten_or_ember("avg_pool2d"), _avg_pool2d_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL,
           errors=lambda rng: _pool_errors("avg_pool2d")(rng)[1:] + [
               E((T(f32(rng, (4,))), 2), IndexError, "avg_pool2d", desc="1-d input"),
               E((T(f32(rng, (1, 1, 4, 4))), 2, 2, 0, False, True, 0), RuntimeError, "avg_pool2d", "divisor",
                 desc="divisor_override 0")]))


def _avg_pool1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6)), 2), desc="kernel 2"),
            Sample((a((1, 2, 7)), 3, 2, 1, True, False), desc="all options"),
            Sample((a((3, 5)), 2, 1), desc="unbatched")]


add(OpInfo("avg_pool1d", fn("avg_pool1d"), _avg_pool1d_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_pool_errors("avg_pool1d", 1)))


def _adaptive2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 4, 4)), (2, 2)), desc="divisible"),
            Sample((a((2, 1, 5, 7)), (3, 4)), desc="overlapping windows"),
            Sample((a((1, 2, 3, 3)), (1, 1)), desc="global"),
            Sample((a((1, 1, 2, 3)), (4, 5)), desc="larger output"),
            Sample((a((2, 5, 4)), (2, 3)), desc="unbatched"),
            Sample((a((1, 2, 5, 4), "t"), (2, 2)), desc="transposed input"),
            Sample((T(np.array([[[[1.0, np.inf, 0.5], [0.0, 1.0, 2.0], [np.nan, 2.0, 3.0]]]], dtype=NP_DTYPE[dtype])),
                    (2, 2)), desc="inf and nan stay in their windows")]


def _adaptive_errors(name, nd=2):
    def errors(rng):
        return [E((T(f32(rng, (4,))), (2,) * nd), RuntimeError, name, desc="wrong input rank"),
                E((T(f32(rng, (1, 1, 0, 4) if nd == 2 else (1, 2, 0))), (2,) * nd), RuntimeError, name,
                  desc="empty spatial dim"),
                E((T(make(rng, (1, 1, 4, 4) if nd == 2 else (1, 1, 4), "int64")), (2,) * nd), NotImplementedError,
                  name, desc="int input")]
    return errors


add(OpInfo("adaptive_avg_pool2d", aten_or_ember("adaptive_avg_pool2d"), _adaptive2d_samples, dtypes=FLOAT,
           grad=True, tol=REDUCTION_TOL, errors=_adaptive_errors("adaptive_avg_pool2d")))
add(OpInfo("_adaptive_avg_pool2d", fn("_adaptive_avg_pool2d"), _adaptive2d_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=_adaptive_errors("adaptive_avg_pool2d")))


def _adaptive1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 6)), 3), desc="divisible"),
            Sample((a((1, 2, 7)), 3), desc="overlapping windows"),
            Sample((a((3, 5)), 2), desc="unbatched")]


add(OpInfo("adaptive_avg_pool1d", fn("adaptive_avg_pool1d"), _adaptive1d_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=_adaptive_errors("adaptive_avg_pool1d", 1)))



def _unpool_index(rng, shape, nd, plane):
    """Distinct positions among `plane` per (N, C) row of `shape`'s last `nd` dimensions (unpooling with
    duplicate indices keeps an unspecified one of the values)."""
    per_row = int(np.prod(shape[-nd:]))
    rows = int(np.prod(shape[:-nd]))
    flat = np.stack([rng.permutation(plane)[:per_row] for _ in range(rows)])
    return T(flat.reshape(shape).astype(NP_DTYPE["int64"]))


def _max_unpool2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 2, 2, 3)), _unpool_index(rng, (2, 2, 2, 3), 2, 24), [4, 6]), desc="batched"),
            Sample((a((1, 2, 2)), _unpool_index(rng, (1, 2, 2), 2, 12), [3, 4]), desc="unbatched"),
            Sample((a((1, 1, 3, 2), "t"), _unpool_index(rng, (1, 1, 3, 2), 2, 6), [2, 3]), desc="transposed input")]


def _max_unpool3d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 1, 2, 2)), _unpool_index(rng, (1, 2, 1, 2, 2), 3, 16), [2, 2, 4], [2, 2, 2], [0, 0, 0]),
                   desc="batched"),
            Sample((a((2, 1, 2, 1)), _unpool_index(rng, (2, 1, 2, 1), 3, 8), [2, 2, 2], [1, 2, 2], [0, 1, 0]),
                   desc="unbatched")]


def _unpool_errors(name, extra=()):
    def errors(rng):
        x = T(f32(rng, (1, 1, 2, 2)))
        idx = T(np.zeros((1, 1, 2, 2), dtype=np.int64))
        return [E((x, T(np.zeros((1, 2, 2, 2), dtype=np.int64)), [4, 4], *extra), RuntimeError, name,
                  desc="indices of another shape"),
                E((x, T(np.zeros((1, 1, 2, 2), dtype=np.int32)), [4, 4], *extra), RuntimeError, name,
                  desc="int32 indices"),
                E((T(np.zeros((1, 1, 2, 2), dtype=np.int64)), idx, [4, 4], *extra), NotImplementedError, name,
                  desc="integer input"),
                E((x, idx, [4], *extra), RuntimeError, name, desc="output_size of another length")]
    return errors


add(OpInfo("max_unpool2d", aten_or_ember("max_unpool2d"), _max_unpool2d_samples, dtypes=FLOAT, grad=True,
           errors=_unpool_errors("max_unpool2d")))
add(OpInfo("max_unpool3d", aten_or_ember("max_unpool3d"), _max_unpool3d_samples, dtypes=FLOAT, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (1, 1, 1, 2, 2))), T(np.zeros((1, 1, 1, 2, 2), dtype=np.int64)), [1, 4], [1, 2, 2],
                  [0, 0, 0]), RuntimeError, "max_unpool3d", desc="output_size of another length"),
               E((T(f32(rng, (2, 2))), T(np.zeros((2, 2), dtype=np.int64)), [1, 2, 4], [1, 2, 2], [0, 0, 0]),
                 RuntimeError, "max_unpool3d", desc="input of rank 2")]))
