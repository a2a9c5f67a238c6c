"""Pooling: max_pool2d_with_indices, max_pool2d/1d, avg_pool2d/1d, adaptive average pooling.

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
