"""OpInfos of index_copy and index_fill (and their in-place forms): whole slices along one dim written from a
source or filled with one value, against torch's."""
from __future__ import annotations

import numpy as np

from .samples import ALL, OpInfo, Sample, T, fn, is_float, make, method
from .database import E, add, f32
from .indexing import NUMERIC, I


def _copy_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), 0, I([2, 0]), a((2, 4))), desc="dim 0"),
            Sample((a((3, 4)), 1, I([3, 1]), a((3, 2))), desc="dim 1"),
            Sample((a((4, 3), "t"), -1, I([0]), a((4, 1))), desc="non-contiguous"),
            Sample((a((3, 4)), 0, I(np.zeros(0)), a((0, 4))), desc="empty index"),
            Sample((a((3,)), 0, I(1), a(())), desc="a 0-d index"), Sample((a(()), 0, I([0]), a(())), desc="0-d")]


def _copy_errors(rng):
    m = lambda: T(f32(rng, (3, 4)))           # noqa: E731
    oob = E((m(), 0, I([5, 0]), T(f32(rng, (2, 4)))), IndexError, "index_copy_", "out of bounds", desc="index 5")
    oob.sample.meta = False                   # index values are data
    return [E((m(), 0, I([2, 0]), T(f32(rng, (3, 4)))), IndexError, "Number of indices", desc="indices and source"),
            E((m(), 0, I([2, 0]), T(np.zeros((2, 4)))), RuntimeError, "same dtype", desc="source dtype"),
            E((m(), 0, T(np.array([2.0, 0.0], np.float32)), T(f32(rng, (2, 4)))), RuntimeError, "long tensor",
              desc="float index"),
            E((m(), 0, I([[2, 0]]), T(f32(rng, (2, 4)))), IndexError, "dimension 1 or 0", desc="2-d index"),
            E((m(), 1, I([0]), T(f32(rng, (3,)))), IndexError, "dimensionality must match", desc="source of one dim"),
            oob]


def _fill_samples(tensor_value: bool):
    def samples(rng, dtype):
        g = is_float(dtype)
        a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
        value = T(make(rng, (), dtype)) if tensor_value else (2.5 if is_float(dtype) else 3)
        return [Sample((a((3, 4)), 1, I([0, 2, 0]), value), desc="dim 1, a repeated index"),
                Sample((a((4, 3), "t"), 0, I([-1]), value), desc="non-contiguous, negative index"),
                Sample((a((3, 4)), 0, I(np.zeros(0)), value), desc="empty index"),
                Sample((a((3,)), 0, I(1), value), desc="a 0-d index"), Sample((a(()), 0, I([0]), value), desc="0-d")]
    return samples


def _fill_errors(tensor_value: bool):
    def errors(rng):
        m = lambda: T(f32(rng, (3, 4)))           # noqa: E731
        oob = E((m(), 1, I([5]), 1.0), IndexError, "out of bounds", desc="index 5")
        oob.sample.meta = False
        errs = [E((m(), 1, T(np.array([0.0], np.float32)), 1.0), IndexError, "int64", desc="float index"), oob]
        if tensor_value:
            errs.append(E((m(), 1, I([0]), T(f32(rng, (1,)))), RuntimeError, "0-dimensional", desc="1-d value"))
        return errs
    return errors


add(OpInfo("index_copy", fn("index_copy"), _copy_samples, dtypes=ALL, grad=True, errors=_copy_errors))
add(OpInfo("index_copy_", method("index_copy_"), _copy_samples, dtypes=ALL, grad=True, inplace=True,
           errors=_copy_errors))
for _tensor, _overload in ((False, "int_Scalar"), (True, "int_Tensor")):
    add(OpInfo(f"index_fill.{_overload}", fn("index_fill"), _fill_samples(_tensor), dtypes=NUMERIC, grad=True,
               errors=_fill_errors(_tensor)))
    add(OpInfo(f"index_fill_.{_overload}", method("index_fill_"), _fill_samples(_tensor), dtypes=NUMERIC, grad=True,
               inplace=True, errors=_fill_errors(_tensor)))
