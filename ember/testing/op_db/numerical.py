"""OpInfos of torch's numerical functions: trapezoid and trapz (at points x, or dx apart), cumulative_trapezoid,
vander, cov and corrcoef, against torch's."""
from __future__ import annotations

import numpy as np

from ..tolerances import REDUCTION_TOL
from .samples import FLOAT, NP_DTYPE, OpInfo, Sample, T, fn, make
from .database import E, add, f32, off_meta

_INTEGRAL_DTYPES = FLOAT + ("int64", "int32")


def _points(rng, n: int, dtype: str) -> np.ndarray:
    return np.sort(make(rng, (n,), dtype, low=-3, high=3)).astype(NP_DTYPE[dtype])


def _at_points_samples(rng, dtype):
    g = dtype in FLOAT
    y = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample((y((2, 5)), T(_points(rng, 5, dtype), grad=g)), desc="1-d points"),
            Sample((y((4, 3)), T(_points(rng, 4, dtype))), {"dim": 0}, desc="dim 0"),
            Sample((y((2, 5)), T(np.sort(make(rng, (2, 5), dtype), axis=-1).astype(NP_DTYPE[dtype]))),
                   desc="points of y's shape"),
            Sample((y((3, 4), "t"), T(_points(rng, 4, dtype))), desc="transposed"),
            Sample((y((2, 1)), T(_points(rng, 1, dtype))), desc="one sample"),
            Sample((y((2, 0)), T(np.zeros(0, NP_DTYPE[dtype]))), desc="no samples")]


def _apart_samples(rng, dtype):
    g = dtype in FLOAT
    y = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample((y((2, 5)),), desc="dx 1"), Sample((y((4, 3)),), {"dx": 0.5, "dim": 0}, desc="dx 0.5, dim 0"),
            Sample((y((3, 4), "t"),), {"dx": 2}, desc="transposed"), Sample((y((5,)),), desc="1-d"),
            Sample((y((2, 1)),), desc="one sample"), Sample((y((2, 0)),), desc="no samples")]


def _integral_errors(call, cumulative: bool):
    def errors(rng):
        zero_d = ("slice() cannot be applied to a 0-dim tensor" if cumulative else "no dimensions")
        return [E((T(f32(rng, (2, 5))), T(f32(rng, (4,)))), RuntimeError, "one `x` value for each sample point",
                  fn=call, desc="points of another count"),
                E((T(f32(rng, ())),), IndexError, zero_d, fn=call, desc="0-d samples"),
                E((T(f32(rng, (2, 5))),), IndexError, "Dimension out of range", kwargs={"dim": 2}, fn=call,
                  desc="dim out of range")]
    return errors


for _name in ("trapezoid", "trapz", "cumulative_trapezoid"):
    _cumulative = _name == "cumulative_trapezoid"
    add(OpInfo(f"{_name}.x", fn(_name), _at_points_samples, dtypes=_INTEGRAL_DTYPES, grad=True, tol=REDUCTION_TOL,
               errors=_integral_errors(fn(_name), _cumulative)))
    add(OpInfo(f"{_name}.dx", fn(_name), _apart_samples, dtypes=_INTEGRAL_DTYPES, grad=True, tol=REDUCTION_TOL,
               errors=_integral_errors(fn(_name), _cumulative)))


def _vander_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda n, layout="c": T(make(rng, (n,), dtype, low=-1.5, high=1.5), layout, grad=g)    # noqa: E731
    return [Sample((x(4),), desc="square"), Sample((x(3),), {"N": 5, "increasing": True}, desc="N 5, increasing"),
            Sample((x(4, "s"),), {"N": 2}, desc="strided, N 2"), Sample((x(0),), desc="empty"),
            Sample((T(make(rng, (3,), dtype)),), {"N": 0}, desc="N 0")]


def _vander_errors(rng):
    return [E((T(f32(rng, (2, 2))),), RuntimeError, "one-dimensional", desc="2-d"),
            E((T(f32(rng, (3,))),), RuntimeError, "non-negative", kwargs={"N": -1}, desc="negative N")]


add(OpInfo("vander", fn("vander"), _vander_samples, dtypes=FLOAT + ("int64", "int32", "uint8", "bool"), grad=True,
           tol=REDUCTION_TOL, errors=_vander_errors,
           xfail={("grad", None): "torch's vander runs cumprod_ in place on a tensor its backward needs, so torch's "
                                  "backward raises; gradcheck checks ember's gradient"}))


#: torch's cov and corrcoef do not run on meta tensors (aten::equal has no meta kernel), so their meta outputs have
#: no oracle; tests/test_numerical_functions.py checks ember's meta shapes and dtypes against torch's cpu results
_NO_TORCH_META = {("meta", None): "torch's cov/corrcoef raise on meta tensors (aten::equal has no meta kernel)"}


def _cov_samples(rng, dtype):
    g = dtype in FLOAT
    m = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    S = [Sample((m((3, 5)),), desc="3 variables"), Sample((m((5,)),), desc="one variable"),
         Sample((m((3, 5)),), {"correction": 0}, desc="correction 0"),
         Sample((m((3, 5), "t"),), {"fweights": T(np.array([1, 2, 1, 1, 3]))}, desc="frequency weights"),
         Sample((m((2, 4), "s"),), {"correction": 2}, desc="strided, correction 2"), Sample((m((0, 3)),), desc="no variables")]
    if dtype in FLOAT:
        aw = T(make(rng, (5,), dtype, domain="positive"))
        S += [Sample((m((3, 5)),), {"aweights": aw}, desc="observation weights"),
              Sample((m((3, 5)),), {"fweights": T(np.array([2, 1, 1, 3, 1])), "aweights": aw}, desc="both weights")]
    return S


def _values_checked(err):
    """An error input that depends on the weights' values (not raised on meta, which has none)."""
    err.sample.meta = False
    return err


def _cov_errors(rng):
    m = lambda: T(f32(rng, (3, 5)))           # noqa: E731
    return [E((T(f32(rng, (2, 3, 4))),), RuntimeError, "cov", "two or fewer dimensions", desc="3-d"),
            E((T(np.ones((2, 3), bool)),), RuntimeError, "cov", "bool", desc="bool"),
            E((m(),), RuntimeError, "fweights", "integral", kwargs={"fweights": T(f32(rng, (5,)))}, desc="float fweights"),
            E((m(),), RuntimeError, "aweights", "floating point", kwargs={"aweights": T(np.ones(5, np.int64))},
              desc="integer aweights"),
            E((m(),), RuntimeError, "fweights", "same numel", kwargs={"fweights": T(np.ones(4, np.int64))},
              desc="weights of another count"),
            E((m(),), RuntimeError, "fweights", "one or fewer", kwargs={"fweights": T(np.ones((1, 5), np.int64))},
              desc="2-d weights"),
            _values_checked(E((m(),), RuntimeError, "fweights cannot be negative",
                              kwargs={"fweights": T(np.array([1, -2, 1, 1, 1]))}, desc="negative weights")),
            E((m(),), TypeError, "correction", kwargs={"correction": 1.5}, desc="float correction")]


add(OpInfo("cov", fn("cov"), off_meta(_cov_samples), xfail=_NO_TORCH_META, dtypes=FLOAT + ("int64",), grad=True,
           tol=REDUCTION_TOL,
           errors=_cov_errors))


def _corrcoef_samples(rng, dtype):
    g = dtype in FLOAT
    m = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample((m((3, 6)),), desc="3 variables"), Sample((m((6, 3), "t"),), desc="transposed"),
            Sample((m((6,)),), desc="one variable", gradcheck=False)]


add(OpInfo("corrcoef", fn("corrcoef"), off_meta(_corrcoef_samples), xfail=_NO_TORCH_META, dtypes=FLOAT + ("int64",),
           grad=True, tol=REDUCTION_TOL,
           errors=lambda rng: [E((T(f32(rng, (2, 3, 4))),), RuntimeError, "corrcoef", "two or fewer", desc="3-d")]))
