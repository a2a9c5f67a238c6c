"""OpInfos of quantile and nanquantile (q a tensor or a number; each interpolation), against torch's."""
from __future__ import annotations

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import NP_DTYPE, OpInfo, Sample, T, fn, make
from .database import E, add, f32

_DTYPES = ("float32", "float64")             # torch's quantile takes float and double only
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _samples(tensor_q: bool):
    def samples(rng, dtype):
        x = lambda shape, layout="c", g=True: T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
        q = (lambda v: T(np.asarray(v, NP_DTYPE[dtype]))) if tensor_q else (lambda v: float(np.asarray(v).flat[0]))
        S = [Sample((x((2, 5)), q(0.3)), {"dim": 1}, desc="dim 1"),
             Sample((x((3, 4)), q(0.5)), desc="every element"),
             Sample((x((4, 3), "t"), q(0.75)), {"dim": 0, "keepdim": True}, desc="transposed, keepdim"),
             Sample((x((2, 5)), q(0.4)), {"keepdim": True}, desc="every element, keepdim"),
             Sample((x(()), q(0.5)), desc="0-d")]
        S += [Sample((x((2, 5)), q(0.35)), {"dim": -1, "interpolation": i}, desc=f"{i}") for i in _INTERPOLATIONS]
        nan = make(rng, (2, 5), dtype)
        nan[1, 2] = np.nan
        S.append(Sample((T(nan), q(0.5)), {"dim": 1}, desc="a NaN in a slice"))
        if tensor_q:
            S.append(Sample((x((2, 5)), T(np.array([0.0, 0.3, 1.0], NP_DTYPE[dtype]))), {"dim": 1}, desc="1-d q"))
        return S
    return samples


def _errors(name: str, tensor_q: bool):
    def errors(rng):
        q = (lambda v, d="float32": T(np.asarray(v, NP_DTYPE[d]))) if tensor_q else (lambda v, d=None: v)
        errs = [E((T(np.zeros((0, 3), np.float32)), q(0.5)), RuntimeError, "non-empty", desc="empty input"),
                E((T(make(rng, (3,), "int64")), q(0.5)), RuntimeError, "float or double", desc="int64 input"),
                E((T(f32(rng, (3,))), q(0.5)), RuntimeError, "interpolation", kwargs={"interpolation": "foo"},
                  desc="unknown interpolation")]
        if tensor_q:
            errs += [E((T(f32(rng, (3,))), T(np.zeros((1, 1), np.float32))), RuntimeError, "1D tensor", desc="2-d q"),
                     E((T(f32(rng, (3,))), q(0.5, "float64")), RuntimeError, "same dtype", desc="q's dtype")]
        else:
            errs.append(E((T(f32(rng, (3,))), 1.5), RuntimeError, "range [0, 1]", desc="q past 1"))
        return errs
    return errors


for _name in ("quantile", "nanquantile"):
    add(OpInfo(_name, fn(_name), _samples(True), dtypes=_DTYPES, grad=True, tol=REDUCTION_TOL,
               errors=_errors(_name, True)))
    add(OpInfo(f"{_name}.scalar", fn(_name), _samples(False), dtypes=_DTYPES, grad=True, tol=REDUCTION_TOL,
               errors=_errors(_name, False)))
