"""OpInfos of heaviside, float_power, ldexp, logcumsumexp, cummax and cummin against torch's."""
from __future__ import annotations

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import ALL, FLOAT, NP_DTYPE, NUM, OpInfo, Sample, T, fn, make, method
from .database import E, add, f32

INF = float("inf")


def _heaviside_samples(rng, dtype):
    x = lambda shape, layout="c": T(np.where(make(rng, shape, dtype) > 0, make(rng, shape, dtype), 0).astype(    # noqa: E731
        NP_DTYPE[dtype]) if dtype != "bool" else make(rng, shape, dtype), layout)
    v = lambda shape: T(make(rng, shape, dtype))        # noqa: E731
    return [Sample((x((2, 3)), v((3,))), desc="broadcast values"), Sample((x((3, 2), "t"), v((3, 2))), desc="transposed"),
            Sample((x(()), v(())), desc="0-d"), Sample((x((0, 3)), v((3,))), desc="empty"),
            Sample((x((2, 3)), v((2, 3))), desc="method", fn=method("heaviside"))]


def _heaviside_errors(rng):
    return [E((T(f32(rng, (3,))), T(make(rng, (3,), "float64"))), RuntimeError, "different dtypes", desc="dtypes differ"),
            E((T(f32(rng, (3,))), 0.5), TypeError, "values", desc="a number for values"),
            E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "size", desc="shapes do not broadcast")]


add(OpInfo("heaviside", fn("heaviside"), _heaviside_samples, dtypes=ALL, errors=_heaviside_errors))


def _float_power_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda shape, layout="c", d=dtype: T(make(rng, shape, d, domain="positive"), layout, grad=g and d in FLOAT)  # noqa
    return [Sample((x((2, 3)), x((3,))), desc="broadcast"), Sample((x((2, 3)), 2), desc="integer exponent"),
            Sample((x((2, 3)), 0.5), desc="float exponent"), Sample((1.5, x((2, 3))), desc="number base"),
            Sample((x((3, 2), "t"), x((3, 2), d="float64" if dtype == "float32" else "float32")),
                   desc="transposed, mixed dtypes"),
            Sample((x(()), x(())), desc="0-d"), Sample((x((0, 3)), 2.0), desc="empty"),
            Sample((x((2, 3)), 3), desc="method", fn=method("float_power"))]


def _float_power_errors(rng):
    return [E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "size", desc="shapes do not broadcast"),
            E((T(f32(rng, (3,))), "x"), TypeError, "float_power", desc="str exponent")]


add(OpInfo("float_power", fn("float_power"), _float_power_samples, dtypes=NUM, grad=True, errors=_float_power_errors))


def _ldexp_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    e = lambda shape, d="int64": T(rng.integers(-3, 4, shape).astype(NP_DTYPE[d]))    # noqa: E731
    return [Sample((x((2, 3)), e((3,))), desc="broadcast"), Sample((x((3, 2), "t"), e((3, 2), "int32")),
                                                                   desc="transposed, int32 exponents"),
            Sample((x(()), e(())), desc="0-d"), Sample((x((0, 3)), e((3,))), desc="empty"),
            Sample((x((2, 3)), T(make(rng, (2, 3), "float32"))), desc="float exponents"),
            Sample((x((2, 3)), e((2, 3))), desc="method", fn=method("ldexp"))]


add(OpInfo("ldexp", fn("ldexp"), _ldexp_samples, dtypes=NUM, grad=True,
           torch_grad_wrong={0: "torch's gradient multiplies by pow(2, other) in integers, 0 for a negative "
                                "exponent; gradcheck checks ember's 2 ** other"},
           errors=lambda rng: [E((T(f32(rng, (3,))), 3), TypeError, "other", desc="a number"),
                               E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "size",
                                 desc="shapes do not broadcast")]))


def _scan_samples(floating_only: bool):
    def samples(rng, dtype):
        g = dtype in FLOAT
        x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
        S = [Sample((x((2, 5)), 1), desc="rows"), Sample((x((4, 3)), 0), desc="columns"),
             Sample((x((3, 4), "t"), -1), desc="transposed"), Sample((x(()), 0), desc="0-d"),
             Sample((x((0, 3)), 0), desc="empty dim"), Sample((x((3, 1)), 1), desc="one element along dim")]
        if dtype in FLOAT:
            special = np.array([[1.0, -INF, 2.0, np.nan, 3.0], [-INF, -INF, 0.5, 0.5, INF]], NP_DTYPE[dtype])
            S.append(Sample((T(special), 1), desc="inf and NaN"))
        if not floating_only and dtype != "bool":
            S.append(Sample((T(np.array([[1, 3, 3, 2, 3]], NP_DTYPE[dtype])), 1), desc="ties: the later index"))
        return S
    return samples


def _scan_errors(name: str, floating_only: bool):
    def errors(rng):
        errs = [E((T(f32(rng, (2, 3))), 2), IndexError, "Dimension out of range", desc="dim out of range"),
                E((T(f32(rng, (2, 3))), 0.5), TypeError, name, desc="float dim")]
        if floating_only:
            errs.append(E((T(make(rng, (3,), "int64")), 0), NotImplementedError, "logcumsumexp", desc="int64"))
        return errs
    return errors


add(OpInfo("logcumsumexp", fn("logcumsumexp"), _scan_samples(True), dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_scan_errors("logcumsumexp", True)))
for _name in ("cummax", "cummin"):
    add(OpInfo(_name, fn(_name), _scan_samples(False), dtypes=ALL, grad=True, errors=_scan_errors(_name, False)))
