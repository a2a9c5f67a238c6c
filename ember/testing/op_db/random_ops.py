"""Random ops built on Philox fills: bernoulli (+ .p, bernoulli_.float), multinomial, randperm, binomial,
dropout (+ torch.dropout_), native_dropout. Their values are random: test_outputs compares shapes and dtypes
(kind="random"); ember/testing/test_nn_random.py checks statistics, exact edge cases
(p=0, p=1, train=False) and determinism under manual_seed.
"""
from __future__ import annotations

import numpy as np

from .database import EXCLUDED, E, add, f32
from .losses import _data_error
from .samples import DEVICE, DT, FLOAT, OpInfo, Sample, T, fn, make, method


def rfn(name: str):
    """module.<name>: a random op (its Tensor-method twin is not compared value for value)."""
    call = fn(name)
    call.__name__ = f"random.{name}"
    return call


def _prob_samples(rng, dtype):
    p = lambda *shape: make(rng, shape, dtype, low=0.05, high=0.95)      # noqa: E731
    return [Sample((T(p(2, 3)),), desc="2-d"), Sample((T(p(3, 2), "t"),), desc="transposed"),
            Sample((T(p(0, 3)),), desc="empty"), Sample((T(p()),), desc="0-d"),
            Sample((T(p(2, 3), "s"),), desc="strided")]


add(OpInfo("bernoulli", rfn("bernoulli"), _prob_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [
               E((T(make(rng, (2, 3), "int64")),), NotImplementedError, "bernoulli", desc="int64 input"),
               _data_error((T(f32(rng, (2, 3)) + 2),), RuntimeError, "bernoulli",
                           desc="probabilities outside [0, 1]")]))


def _p_samples(rng, dtype):
    return [Sample((T(make(rng, (2, 3), dtype)), 0.3), desc="2-d p=0.3"),
            Sample((T(make(rng, (3, 2), dtype), "t"), 0.5), desc="transposed"),
            Sample((T(make(rng, (0, 3), dtype)), 0.5), desc="empty"),
            Sample((T(make(rng, (), dtype)), 1.0), desc="0-d p=1"),
            Sample((T(make(rng, (2, 3), dtype)), 0.2), desc="method", fn=method("bernoulli"))]


add(OpInfo("bernoulli.p", rfn("bernoulli"), _p_samples, dtypes=FLOAT + ("int64",), kind="random",
           errors=lambda rng: [E((T(f32(rng, (2, 3))), -0.5), RuntimeError, "bernoulli", "p", desc="p < 0"),
                               E((T(f32(rng, (2, 3))), "a"), TypeError, "bernoulli", desc="str p")]))


def _p_inplace_samples(rng, dtype):
    return [Sample((T(make(rng, (2, 3), dtype)), 0.3), desc="2-d p=0.3"),
            Sample((T(make(rng, (3, 2), dtype), "t"),), desc="transposed, default p"),
            Sample((T(make(rng, (0, 3), dtype)), 0.5), desc="empty"),
            Sample((T(make(rng, (), dtype)), 0.0), desc="0-d p=0")]


add(OpInfo("bernoulli_.float", method("bernoulli_"), _p_inplace_samples, dtypes=FLOAT + ("int64", "bool"),
           kind="random", inplace=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 1.5), RuntimeError, "bernoulli_", "p", desc="p > 1"),
                               E((T(f32(rng, (3, 1))), 0.5), RuntimeError, "bernoulli_", desc="expanded self",
                                 fn=lambda m, x, p: x.expand(3, 4).bernoulli_(p))]))


def _multinomial_samples(rng, dtype):
    w = lambda *shape: make(rng, shape, dtype, low=0.1, high=2.0)      # noqa: E731
    zeros = w(2, 5)
    zeros[:, 1] = 0
    return [Sample((T(w(5)), 3), desc="1-d without replacement"),
            Sample((T(w(5)), 8, True), desc="1-d with replacement"),
            Sample((T(w(3, 4)), 4), desc="2-d, every category"),
            Sample((T(w(3, 4)), 6), {"replacement": True}, desc="2-d with replacement"),
            Sample((T(zeros), 2), desc="a zero-probability category"),
            Sample((T(w(4, 3), "t"), 2), desc="transposed"),
            Sample((T(w(0, 3)), 2), desc="no rows"),
            Sample((T(w(4)), 2), desc="method", fn=method("multinomial"))]


add(OpInfo("multinomial", rfn("multinomial"), _multinomial_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [
               E((T(f32(rng, (2, 2, 2)).__abs__()), 1), RuntimeError, "multinomial", desc="3-d input"),
               E((T(np.array([1, 2], np.int64)), 1), RuntimeError, "multinomial", desc="int64 input"),
               E((T(np.array([1.0, 2.0], np.float32)), 0), RuntimeError, "multinomial", desc="no samples"),
               E((T(np.array([1.0, 2.0], np.float32)), 3), RuntimeError, "multinomial",
                 desc="more samples than categories without replacement"),
               _data_error((T(np.array([1.0, -1.0], np.float32)), 1), RuntimeError, "multinomial",
                           desc="negative probability"),
               _data_error((T(np.array([0.0, 0.0], np.float32)), 1), RuntimeError, "multinomial",
                           desc="zero total probability")]))


def _randperm_samples(rng, dtype):
    return [Sample((7,), {"dtype": DT(dtype), "device": DEVICE}, desc="n=7"),
            Sample((0,), {"dtype": DT(dtype), "device": DEVICE}, desc="n=0"),
            Sample((1,), {"dtype": DT(dtype), "device": DEVICE}, desc="n=1"),
            Sample((5,), {"device": DEVICE}, desc="default int64")]


add(OpInfo("randperm", rfn("randperm"), _randperm_samples, dtypes=("int64", "int32", "uint8", "float32", "float64"),
           kind="random",
           errors=lambda rng: [E((-1,), RuntimeError, "randperm", desc="negative n"),
                               E((3,), NotImplementedError, "randperm", kwargs={"dtype": DT("bool")}, desc="bool"),
                               E((5000,), RuntimeError, "randperm", kwargs={"dtype": DT("float16")},
                                 desc="n too large for float16"),
                               E((300,), RuntimeError, "randperm", kwargs={"dtype": DT("uint8")},
                                 desc="n too large for uint8")]))


def _dropout_samples(rng, dtype):
    x = lambda *shape: make(rng, shape, dtype)      # noqa: E731
    return [Sample((T(x(4, 5)), 0.5, True), desc="train p=0.5"),
            Sample((T(x(4, 5)), 0.0, True), desc="p=0"),
            Sample((T(x(4, 5)), 1.0, True), desc="p=1"),
            Sample((T(x(4, 5)), 0.5, False), desc="eval"),
            Sample((T(x(5, 4), "t"), 0.2, True), desc="transposed"),
            Sample((T(x(0, 3)), 0.5, True), desc="empty"),
            Sample((T(x()), 0.5, True), desc="0-d")]


_DROPOUT_ERRORS = lambda name: lambda rng: [         # noqa: E731
    E((T(f32(rng, (2, 3))), 1.5, True), RuntimeError, name, desc="p > 1"),
    E((T(make(rng, (2, 3), "int64")), 0.5, True), RuntimeError, name, desc="int64 input in training")]

add(OpInfo("dropout", rfn("dropout"), _dropout_samples, dtypes=FLOAT, kind="random", errors=_DROPOUT_ERRORS("dropout")))
add(OpInfo("dropout_", rfn("dropout_"), _dropout_samples, dtypes=FLOAT, kind="random", inplace=True,
           errors=_DROPOUT_ERRORS("dropout_")))
EXCLUDED["_dropout_noise"] = ("dropout's training path (0 < p < 1): the dropout OpInfos run it; "
                              "tests/test_array_kernels.py checks the cpu kernel against its explicit kernel bit for bit")
add(OpInfo("native_dropout", fn("native_dropout"),
           lambda rng, dtype: [s if s.desc != "empty" else Sample(s.args, desc="empty (torch's meta and cpu mask "
                                                                   "dtypes differ: cpu's is followed)", meta=False)
                               for s in _dropout_samples(rng, dtype)] + [
               Sample((T(make(rng, (2, 3), dtype)), 0.5, None), desc="train=None")],
           dtypes=FLOAT, kind="random", errors=_DROPOUT_ERRORS("native_dropout")))


def _binomial_samples(rng, dtype):
    count = lambda *shape, high=30.0: np.floor(make(rng, shape, dtype, low=0.0, high=high))     # noqa: E731
    prob = lambda *shape: make(rng, shape, dtype, low=0.05, high=0.95)                         # noqa: E731
    return [Sample((T(count(2, 3)), T(prob(2, 3))), desc="2-d"),
            Sample((T(count(2, 3)), T(prob(3))), desc="prob broadcast to count"),
            Sample((T(count(2, 3), "t"), T(prob(2, 3))), desc="transposed count"),
            Sample((T(count(4, high=5000.0)), T(prob(4))), desc="large counts (transformed rejection)"),
            Sample((T(count(0, 3)), T(prob(0, 3))), desc="empty"),
            Sample((T(count()), T(prob())), desc="0-d")]


def _torch_binomial(m, count, prob, *rest):
    """torch.binomial; torch 2.13 has no meta kernel for it: there, a new tensor of the broadcast shape, which
    is what torch's cpu draw has (a random op's meta check compares shape and dtype only)."""
    if isinstance(count, m.Tensor) and count.device.type == "meta":     # (a mutated count may be no tensor)
        return m.empty(m.broadcast_shapes(count.shape, prob.shape), dtype=count.dtype, device="meta")
    return m.binomial(count, prob, *rest)


add(OpInfo("binomial", rfn("binomial"), _binomial_samples, dtypes=("float32", "float64"), kind="random",
           torch_call=_torch_binomial,
           errors=lambda rng: [
               E((T(np.array([5, 3])), T(f32(rng, (2,)))), ValueError, "binomial", "count", desc="int64 count"),
               E((T(f32(rng, (2,))), T(np.array([True, False]))), ValueError, "binomial", "prob", desc="bool prob"),
               E((T(f32(rng, (2,))), T(np.array([0.5, 0.5]))), RuntimeError, "binomial", "Double",
                 desc="prob of another dtype"),
               E((T(np.array([5.0], np.float16)), T(np.array([0.5], np.float16))), NotImplementedError, "binomial",
                 desc="float16"),
               E((T(f32(rng, (2,))), T(f32(rng, (3,)))), RuntimeError, "binomial", desc="shapes do not broadcast")]))
