"""Factories and random numbers (statistics and determinism: ember/testing/test_random.py)."""
from __future__ import annotations

import numpy as np

from .samples import ALL, DEVICE, DT, FLOAT, NP_DTYPE, NUM, OpInfo, Sample, T, fn, is_float, make, method
from .database import E, add, f32, layouts, unary_errors


def _factory_samples(rng, dtype):
    d = DT(dtype)
    return [Sample(((2, 3),), {"dtype": d, "device": DEVICE}, desc="tuple size"),
            Sample((2, 3), {"dtype": d, "device": DEVICE}, desc="varargs size"),
            Sample(((),), {"dtype": d, "device": DEVICE}, desc="0-d"),
            Sample(((0, 3),), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample(([4],), {"device": DEVICE}, desc="default dtype")]


def _factory_errors(name):
    def errors(rng):
        return [E(((-1, 2),), RuntimeError, name, desc="negative size"),
                E(((2, "a"),), TypeError, name, "size", desc="str size")]
    return errors


for _nm in ("zeros", "ones"):
    add(OpInfo(_nm, fn(_nm), _factory_samples, dtypes=ALL, errors=_factory_errors(_nm)))
add(OpInfo("empty.memory_format", fn("empty"), _factory_samples, dtypes=ALL, kind="shape_only",
           errors=_factory_errors("empty")))


def _full_samples(rng, dtype):
    d = DT(dtype)
    v = {"bool": True}.get(dtype, 3 if not is_float(dtype) else 2.5)
    return [Sample(((2, 3), v), {"dtype": d, "device": DEVICE}, desc="with dtype"),
            Sample(((2,), 2), {"device": DEVICE}, desc="int fill -> int64"),
            Sample(((2,), 2.5), {"device": DEVICE}, desc="float fill -> float32"),
            Sample(((2,), False), {"device": DEVICE}, desc="bool fill -> bool"),
            Sample(((0, 2), 1.0), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample(((), 7), {"dtype": d, "device": DEVICE}, desc="0-d")]


add(OpInfo("full", fn("full"), _full_samples, dtypes=ALL,
           errors=lambda rng: [E(((2,), "a"), TypeError, "full", "fill_value", desc="str fill"),
                               E(((-2,), 1.0), RuntimeError, "full", desc="negative size")]))


def _arange_end_samples(rng, dtype):
    d = DT(dtype)
    S = [Sample((5,), {"device": DEVICE}, desc="end -> int64"),
         Sample((2.5,), {"device": DEVICE}, desc="float end -> float32"),
         Sample((0,), {"device": DEVICE}, desc="empty")]
    if dtype != "bool":
        S.append(Sample((4,), {"dtype": d, "device": DEVICE}, desc=f"dtype {dtype}"))
    return S


add(OpInfo("arange", fn("arange"), _arange_end_samples, dtypes=NUM,
           errors=lambda rng: [E((-1,), RuntimeError, "arange", desc="negative end"),
                               E(("a",), TypeError, "arange", desc="str end"),
                               E((5, None), TypeError, "arange", desc="end None")]))


def _arange_samples(rng, dtype):
    d = DT(dtype)
    S = [Sample((1, 7, 2), {"device": DEVICE}, desc="start end step"),
         Sample((0.5, 2.0, 0.25), {"device": DEVICE}, desc="float -> float32"),
         Sample((5, 1, -1), {"device": DEVICE}, desc="negative step"),
         Sample((3, 3), {"device": DEVICE}, desc="empty"),
         Sample((1, 2.5, 0.5), {"device": DEVICE}, desc="mixed int/float")]
    if dtype != "bool":
        S.append(Sample((0, 6, 2), {"dtype": d, "device": DEVICE}, desc=f"dtype {dtype}"))
    return S


add(OpInfo("arange.start_step", fn("arange"), _arange_samples, dtypes=NUM,
           errors=lambda rng: [E((0, 5, 0), RuntimeError, "arange", "step", desc="zero step"),
                               E((5, 0, 1), RuntimeError, "arange", desc="wrong sign"),
                               E((0, "a"), TypeError, "arange", desc="str end")]))


# linspace and logspace: torch's values agree to within rounding (its vectorised loop rounds a few of them
# differently); the integer samples' values are exact in float64, so truncation gives the same integers
def _spaced_samples(rng, dtype):
    d = DT(dtype)
    if is_float(dtype):
        ends = [(-1.5, 2.25, 7), (3.0, -2.0, 10), (0.1, 0.7, 64)]
    else:
        ends = [(0, 10, 6), (9, 1, 5), (2, 4, 9)] if dtype != "uint8" else [(0, 10, 6), (9, 1, 5)]
    S = [Sample((a, b, n), {"dtype": d, "device": DEVICE}, desc=f"{a} to {b} in {n}") for a, b, n in ends]
    S += [Sample((0, 1, 1), {"dtype": d, "device": DEVICE}, desc="one step"),
          Sample((0, 1, 0), {"dtype": d, "device": DEVICE}, desc="no step"),
          Sample((0, 3, 4), {"device": DEVICE}, desc="default dtype")]
    return S


def _spaced_errors(name):
    def errors(rng):
        return [E((0, 1, -1), RuntimeError, name, "steps", desc="negative steps"),
                E((0, 1, 2.5), TypeError, name, "steps", desc="float steps"),
                E(("a", 1, 3), TypeError, name, "start", desc="str start"),
                E((0, 1, 3), NotImplementedError, name, "Bool", kwargs={"dtype": DT("bool")}, desc="bool dtype"),
                E((0, 300, 3), RuntimeError, name, "overflow", kwargs={"dtype": DT("uint8")}, desc="end overflows")]
    return errors


add(OpInfo("linspace", fn("linspace"), _spaced_samples, dtypes=NUM, errors=_spaced_errors("linspace")))


def _logspace_samples(rng, dtype):
    d = DT(dtype)
    ends = [(-1.5, 2.25, 7), (3.0, -2.0, 10)] if is_float(dtype) else [(0, 2, 3), (2, 0, 5)]
    return [Sample((a, b, n), {"dtype": d, "device": DEVICE}, desc=f"{a} to {b} in {n}") for a, b, n in ends] + \
        [Sample((0, 3, 4), {"base": 2.0, "dtype": d, "device": DEVICE}, desc="base 2"),
         Sample((1, 2, 1), {"dtype": d, "device": DEVICE}, desc="one step"),
         Sample((0, 2, 3), {"device": DEVICE}, desc="default dtype")]


add(OpInfo("logspace", fn("logspace"), _logspace_samples, dtypes=NUM, errors=_spaced_errors("logspace")))


def _triangle_samples(rng, dtype):
    d = {"dtype": DT(dtype), "device": DEVICE}
    return [Sample((3, 3), d, desc="square"), Sample((3, 5, 1), d, desc="wide, above"),
            Sample((4, 2, -3), d, desc="tall, below"), Sample((0, 3), d, desc="no row"),
            Sample((2, 3, 5), d, desc="offset past the corner"), Sample((3, 4), {"device": DEVICE}, desc="default dtype")]


for _nm in ("tril_indices", "triu_indices"):
    add(OpInfo(_nm, fn(_nm), _triangle_samples, dtypes=("int64", "int32"),
               errors=lambda rng, _nm=_nm: [E((-1, 3), RuntimeError, _nm, "row", desc="negative row"),
                                            E((3, 3), NotImplementedError, _nm, kwargs={"dtype": DT("float32")},
                                              desc="float dtype")]))


def _eye_samples(rng, dtype):
    d = DT(dtype)
    return [Sample((3,), {"dtype": d, "device": DEVICE}, desc="square"),
            Sample((0,), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample((2,), {"device": DEVICE}, desc="default dtype")]


def _eye_m_samples(rng, dtype):
    d = DT(dtype)
    return [Sample((2, 4), {"dtype": d, "device": DEVICE}, desc="wide"),
            Sample((4, 2), {"dtype": d, "device": DEVICE}, desc="tall"),
            Sample((0, 3), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample((2, 2), {"device": DEVICE}, desc="default dtype")]


add(OpInfo("eye", fn("eye"), _eye_samples, dtypes=ALL,
           errors=lambda rng: [E((-1,), RuntimeError, "eye", "n", desc="negative n")]))
add(OpInfo("eye.m", fn("eye"), _eye_m_samples, dtypes=ALL,
           errors=lambda rng: [E((2, -1), RuntimeError, "eye", "m", desc="negative m")]))


def _like_samples(fill=None):
    def gen(rng, dtype):
        S = []
        extra = () if fill is None else (fill(dtype),)
        for t, desc in layouts(rng, dtype, False):
            t.grad = False
            S.append(Sample((t,) + extra, {"device": DEVICE}, desc=desc))
        S.append(Sample((T(make(rng, (2, 3), dtype)),) + extra, {"dtype": DT("float64"), "device": DEVICE},
                        desc="dtype float64"))
        S.append(Sample((T(make(rng, (), dtype)),) + extra, {"device": DEVICE}, desc="0-d"))
        S.append(Sample((T(make(rng, (0, 3), dtype)),) + extra, {"device": DEVICE}, desc="empty"))
        S.append(Sample((T(make(rng, (3, 1), dtype), "e", expand=(3, 2)),) + extra, {"device": DEVICE},
                        desc="expanded"))
        S.append(Sample((T(make(rng, (2, 1, 3), dtype), "t"),) + extra, {"device": DEVICE}, desc="3-d t"))
        return S
    return gen


add(OpInfo("empty_like", fn("empty_like"), _like_samples(), dtypes=ALL, kind="shape_only",
           errors=unary_errors("empty_like")))
add(OpInfo("zeros_like", fn("zeros_like"), _like_samples(), dtypes=ALL, errors=unary_errors("zeros_like")))
add(OpInfo("ones_like", fn("ones_like"), _like_samples(), dtypes=ALL, errors=unary_errors("ones_like")))
add(OpInfo("full_like", fn("full_like"), _like_samples(lambda d: True if d == "bool" else 2), dtypes=ALL,
           errors=lambda rng: [E((T(f32(rng, (2,))), "a"), TypeError, "full_like", "fill_value", desc="str fill")]))


# ---- random numbers: statistics and determinism (ember/testing/test_random.py)
def _random_fill_samples(rng, dtype):
    return [Sample((T(np.zeros((2, 3), NP_DTYPE[dtype])),), desc="2-d"),
            Sample((T(np.zeros((3, 2), NP_DTYPE[dtype]), "t"),), desc="transposed"),
            Sample((T(np.zeros((0, 3), NP_DTYPE[dtype])),), desc="empty"),
            Sample((T(np.zeros((), NP_DTYPE[dtype])),), desc="0-d")]


add(OpInfo("uniform_", method("uniform_"), _random_fill_samples, dtypes=FLOAT, kind="random", inplace=True,
           errors=lambda rng: [E(("x",), TypeError, "uniform_", fn=lambda m, x: m.Tensor.uniform_(x), desc="str self"),
                               E((T(np.zeros(3, np.int64)),), NotImplementedError, "uniform_", desc="int64 self"),
                               E((T(np.zeros(3, np.float32)),), RuntimeError, "uniform_",
                                 fn=lambda m, x: x.uniform_(2, 1), desc="from > to")]))
add(OpInfo("normal_", method("normal_"), _random_fill_samples, dtypes=FLOAT, kind="random", inplace=True,
           errors=lambda rng: [E(("x",), TypeError, "normal_", fn=lambda m, x: m.Tensor.normal_(x), desc="str self"),
                               E((T(np.zeros(3, np.int64)),), NotImplementedError, "normal_", desc="int64 self"),
                               E((T(np.zeros(3, np.float32)),), RuntimeError, "normal_", "std",
                                 fn=lambda m, x: x.normal_(0, -1), desc="negative std")]))
add(OpInfo("random_.from", lambda m, x: x.random_(0, 2 if x.dtype == m.bool else 10), _random_fill_samples,
           dtypes=ALL,
           kind="random", inplace=True,
           errors=lambda rng: [E((T(np.zeros(3, np.int64)),), RuntimeError, "random_", fn=lambda m, x: x.random_(5, 2),
                                 desc="from >= to"),
                               E((T(np.zeros(3, np.bool_)),), RuntimeError, "random_", fn=lambda m, x: x.random_(0, 10),
                                 desc="to out of bounds for bool"),
                               E((T(np.zeros(3, np.uint8)),), RuntimeError, "random_",
                                 fn=lambda m, x: x.random_(-1, 10), desc="from out of bounds for uint8")]))


def _rand_samples(rng, dtype):
    return [Sample(((2, 3),), {"dtype": DT(dtype), "device": DEVICE}, desc="tuple size"),
            Sample((3,), {"dtype": DT(dtype), "device": DEVICE}, desc="varargs"),
            Sample(((0, 3),), {"dtype": DT(dtype), "device": DEVICE}, desc="empty"),
            Sample(((),), {"dtype": DT(dtype), "device": DEVICE}, desc="0-d")]


add(OpInfo("rand", fn("rand"), _rand_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [E(((2,),), NotImplementedError, "rand", kwargs={"dtype": DT("int64")}, desc="int dtype"),
                               E(((-1,),), RuntimeError, "rand", desc="negative size")]))
add(OpInfo("randn", fn("randn"), _rand_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [E(((2,),), NotImplementedError, "randn", kwargs={"dtype": DT("int64")},
                                 desc="int dtype"),
                               E(((-1,),), RuntimeError, "randn", desc="negative size")]))


def _random_like_samples(high=None):
    """(self,) or (self, high) / (self, low, high): a plain, a transposed (the result keeps its layout), an
    empty and a 0-d `self`, and one with another dtype asked for."""
    def gen(rng, dtype):
        extra = () if high is None else high
        zeros = lambda shape: np.zeros(shape, NP_DTYPE[dtype])      # noqa: E731
        S = [Sample((T(zeros((2, 3))),) + extra, {"device": DEVICE}, desc="2-d"),
             Sample((T(zeros((3, 2)), "t"),) + extra, {"device": DEVICE}, desc="transposed"),
             Sample((T(zeros((0, 3))),) + extra, {"device": DEVICE}, desc="empty"),
             Sample((T(zeros(())),) + extra, {"device": DEVICE}, desc="0-d")]
        if high is None or dtype != "uint8":
            S.append(Sample((T(zeros((2,))),) + extra, {"dtype": DT("float64"), "device": DEVICE},
                            desc="dtype float64"))
        return S
    return gen


add(OpInfo("rand_like", fn("rand_like"), _random_like_samples(), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((T(np.zeros(2, np.int64)),), NotImplementedError, "rand_like", desc="int64 self"),
                               E(("x",), TypeError, "rand_like", desc="str self")]))
add(OpInfo("randn_like", fn("randn_like"), _random_like_samples(), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((T(np.zeros(2, np.int64)),), NotImplementedError, "randn_like", desc="int64 self"),
                               E(("x",), TypeError, "randn_like", desc="str self")]))
add(OpInfo("randint_like", fn("randint_like"), _random_like_samples((7,)), dtypes=("float32", "int64", "uint8"),
           kind="random", errors=lambda rng: [E((T(np.zeros(2, np.float32)), 0), RuntimeError, "randint_like",
                                                 desc="high 0"),
                                               E((T(np.zeros(2, np.float32)), 2.5), TypeError, "randint_like",
                                                 desc="float high")]))
add(OpInfo("randint_like.low_dtype", fn("randint_like"), _random_like_samples((2, 9)),
           dtypes=("float32", "int64", "uint8"), kind="random",
           errors=lambda rng: [E((T(np.zeros(2, np.float32)), 3, 3), RuntimeError, "randint_like", desc="low = high")]))


def _randint_samples(rng, dtype):
    return [Sample((0, 10, (2, 3)), {"dtype": DT(dtype), "device": DEVICE}, desc="with dtype"),
            Sample((-5, 5, (4,)), {"device": DEVICE}, desc="default int64"),
            Sample((0, 3, (0, 2)), {"device": DEVICE}, desc="empty")]


add(OpInfo("randint.low", fn("randint"), _randint_samples, dtypes=("int64", "int32", "float32", "uint8"),
           kind="random",
           errors=lambda rng: [E((5, 2, (3,)), RuntimeError, "randint", desc="high <= low")]))



def _randint_high_samples(rng, dtype):
    return [Sample((10, (2, 3)), {"dtype": DT(dtype), "device": DEVICE}, desc="with dtype"),
            Sample((5, (4,)), {"device": DEVICE}, desc="default int64"),
            Sample((3, (0, 2)), {"device": DEVICE}, desc="empty")]


add(OpInfo("randint", fn("randint"), _randint_high_samples, dtypes=("int64", "int32", "float32", "uint8"),
           kind="random",
           errors=lambda rng: [E((0, (3,)), RuntimeError, "randint", desc="high <= 0")]))


# ---- normal's four overloads (values: tests/test_factories.py checks their moments and seeds)
def _normal_samples(kind):
    def gen(rng, dtype):
        t = lambda shape: T(np.zeros(shape, NP_DTYPE[dtype]))                 # noqa: E731
        s = lambda shape: T(np.ones(shape, NP_DTYPE[dtype]))                  # noqa: E731
        if kind == "Tensor_Tensor":
            return [Sample((t((2, 3)), s((2, 3))), desc="alike"), Sample((t((2, 1)), s((3,))), desc="broadcast"),
                    Sample((t((0,)), s((0,))), desc="empty")]
        if kind == "Tensor_float":
            return [Sample((t((2, 3)), 2.0), desc="2-d"), Sample((t(()),), desc="0-d, default std")]
        if kind == "float_Tensor":
            return [Sample((1.0, s((2, 3))), desc="2-d"), Sample((-1.0, s(())), desc="0-d")]
        return [Sample((1.0, 2.0, (2, 3)), {"dtype": DT(dtype), "device": DEVICE}, desc="sized"),
                Sample((0.0, 1.0, (0, 2)), {"dtype": DT(dtype), "device": DEVICE}, desc="empty")]
    return gen


add(OpInfo("normal.Tensor_Tensor", fn("normal"), _normal_samples("Tensor_Tensor"), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((T(np.zeros(2, np.float32)), T(np.ones(3, np.float32))), RuntimeError, "normal",
                                 desc="shapes do not broadcast")]))
add(OpInfo("normal.Tensor_float", fn("normal"), _normal_samples("Tensor_float"), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((T(np.zeros(2, np.float32)), -1.0), RuntimeError, "normal", "std", desc="negative std"),
                               E((T(np.zeros(2, np.int64)), 1.0), NotImplementedError, "normal", desc="int64 mean")]))
add(OpInfo("normal.float_Tensor", fn("normal"), _normal_samples("float_Tensor"), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((0.0, "x"), TypeError, "normal", desc="str std")]))
add(OpInfo("normal.float_float", fn("normal"), _normal_samples("float_float"), dtypes=FLOAT, kind="random",
           errors=lambda rng: [E((1.0, -2.0, (2,)), RuntimeError, "normal", "std", desc="negative std"),
                               E((1.0, 2.0, (2,)), NotImplementedError, "normal", kwargs={"dtype": DT("int64")},
                                 desc="int64 dtype")]))
