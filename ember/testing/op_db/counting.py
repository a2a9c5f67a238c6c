"""OpInfos of gcd and lcm (and their in-place forms), histc and mode, against torch's."""
from __future__ import annotations

import dataclasses

import numpy as np

from .samples import FLOAT, NP_DTYPE, OpInfo, Sample, T, fn, make, method
from .database import E, add, f32

_INTEGERS = ("int64", "int32", "uint8")


def _integer_pairs(rng, dtype):
    a = lambda shape, layout="c", d=dtype: T(rng.integers(0 if d == "uint8" else -30, 30, shape).astype(NP_DTYPE[d]),  # noqa
                                              layout)
    return [Sample((a((2, 5)), a((5,))), desc="broadcast"), Sample((a((3, 4), "t"), a((3, 4))), desc="transposed"),
            Sample((a(()), a(())), desc="0-d"), Sample((a((0, 3)), a((3,))), desc="empty"),
            Sample((T(np.array([0, 0, 7, 12], NP_DTYPE[dtype])), T(np.array([0, 5, 0, 18], NP_DTYPE[dtype]))),
                   desc="zeros"),
            Sample((a((3,)), a((3,), d="int64" if dtype != "int64" else "int32")), desc="mixed dtypes")]


def _integer_errors(name: str):
    def errors(rng):
        return [E((T(f32(rng, (3,))), T(f32(rng, (3,)))), NotImplementedError, f"{name}_cpu", desc="float"),
                E((T(np.ones(3, np.int64)), 4), TypeError, "other", desc="a number"),
                E((T(np.ones((2, 3), np.int64)), T(np.ones(4, np.int64))), RuntimeError, "size",
                  desc="shapes do not broadcast")]
    return errors


def _in_place_pairs(rng, dtype):
    return [s for s in _integer_pairs(rng, dtype) if s.desc not in ("broadcast", "mixed dtypes")]


for _name in ("gcd", "lcm"):
    add(OpInfo(_name, fn(_name), _integer_pairs, dtypes=_INTEGERS, errors=_integer_errors(_name)))
    add(OpInfo(f"{_name}_", method(f"{_name}_"), _in_place_pairs, dtypes=_INTEGERS, inplace=True,
               errors=_integer_errors(_name)))


def _histc_samples(rng, dtype):
    x = lambda shape, layout="c": T(make(rng, shape, dtype, low=-3, high=3), layout)    # noqa: E731
    return [Sample((x((50,)),), {"bins": 7, "min": -2, "max": 2.5}, desc="a range"),
            Sample((x((4, 5)),), {"bins": 5}, desc="the data's range"),
            Sample((x((5, 4), "t"), 3, -1, 1), desc="transposed, positional"),
            Sample((T(np.full(4, 2.0, NP_DTYPE[dtype])),), {"bins": 3}, desc="one value"),
            Sample((T(np.zeros(0, NP_DTYPE[dtype])),), {"bins": 2}, desc="empty"),
            Sample((T(np.array([0.0, 1.0, 2.0], NP_DTYPE[dtype])),), {"bins": 2, "min": 0, "max": 2}, desc="edges")]


def _histc_errors(rng):
    nan = np.array([1.0, np.nan], np.float32)
    data = E((T(nan),), RuntimeError, "not finite", kwargs={"bins": 2}, desc="a NaN in the data's range")
    data.sample.meta = False
    return [E((T(np.ones(3, np.int64)),), NotImplementedError, "histogram_cpu", desc="int64"),
            E((T(f32(rng, (3,))),), RuntimeError, "bins must be > 0", kwargs={"bins": 0}, desc="no bins"),
            E((T(f32(rng, (3,))),), RuntimeError, "max must be larger than min", kwargs={"min": 3, "max": 1},
              desc="max below min"), data]


add(OpInfo("histc", fn("histc"), _histc_samples, dtypes=("float32", "float64"), errors=_histc_errors))


def _mode_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda shape, layout="c": T(rng.integers(0, 4, shape).astype(NP_DTYPE[dtype]), layout, grad=g)   # noqa: E731
    # small integers, so that values repeat: ties everywhere, so finite differences are meaningless (no gradcheck;
    # the gradient, at each mode's last occurrence, is still compared with torch's)
    S = [Sample((x((3, 6)),), desc="last dim"), Sample((x((6, 3)), 0, True), desc="dim 0, keepdim"),
         Sample((x((4, 5), "t"), 1), desc="transposed"), Sample((x(()),), desc="0-d"),
         Sample((x((2, 1)),), desc="one element"), Sample((x((0, 3)), 1), desc="empty, a non-empty dim")]
    distinct = Sample((T(make(rng, (2, 5), dtype), grad=g), 1), desc="distinct values: each row's smallest")
    return [dataclasses.replace(s, gradcheck=False) for s in S] + [distinct]


add(OpInfo("mode", fn("mode"), _mode_samples, dtypes=FLOAT + ("int64", "int32", "uint8"), grad=True,
           errors=lambda rng: [E((T(np.zeros((2, 0), np.float32)),), IndexError, "non-zero size", desc="empty dim"),
                               E((T(f32(rng, (2, 3))), 2), IndexError, "Dimension out of range",
                                 desc="dim out of range")]))
