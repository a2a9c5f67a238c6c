"""OpInfos of the LU-based ops of torch.linalg: linalg_inv_ex, linalg_inv, inverse, linalg_det, det,
linalg_slogdet, slogdet, logdet, linalg_solve_ex, linalg_solve, linalg_matrix_power and matrix_power,
against torch's.

The matrices are well conditioned (random values plus a multiple of the identity), so that finite
differences and torch's own results are stable; singular matrices appear without gradients (their inverse
is unspecified, and ember's determinant gradient there is NaN where torch's goes through an SVD:
docs/architecture.md), and the info of a singular matrix is checked directly in tests/test_linalg_lu.py."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..tolerances import LINALG_TOL
from .samples import NP_DTYPE, OpInfo, Sample, T, make
from .database import E, add, f32

_DTYPES = ("float32", "float64")           # LAPACK's: torch has no half or integer kernels


def _well_conditioned(rng, batch, n: int, dtype: str, sign: float = 1.0) -> np.ndarray:
    x = rng.standard_normal(tuple(batch) + (n, n)) * 0.5 + sign * n * np.eye(n)
    return x.astype(NP_DTYPE[dtype])


def _call(name: str, index: int | None = None, **fixed):
    """module.linalg.name (or module.name when `name` has no 'linalg.'), its output `index` for a tuple."""
    def call(m, *a, **k):
        target = m.linalg if name.startswith("linalg.") else m
        out = getattr(target, name.split(".")[-1])(*a, **fixed, **k)
        return out if index is None else out[index]
    call.__name__ = name
    return call


def _square_samples(rng, dtype):
    return [Sample((T(_well_conditioned(rng, (), 3, dtype), grad=True),), desc="3x3"),
            Sample((T(_well_conditioned(rng, (2,), 4, dtype), grad=True),), desc="batch"),
            Sample((T(_well_conditioned(rng, (2, 1), 2, dtype), "t", grad=True),), desc="transposed batch"),
            Sample((T(_well_conditioned(rng, (), 3, dtype, -1.0), grad=True),), desc="negative determinant"),
            Sample((T(_well_conditioned(rng, (), 1, dtype), grad=True),), desc="1x1"),
            Sample((T(np.zeros((2, 0, 0), NP_DTYPE[dtype]), grad=True),), desc="empty matrices")]


def _singular(dtype) -> Sample:
    return Sample((T(np.array([[1.0, 2.0], [2.0, 4.0]], NP_DTYPE[dtype])),), desc="singular, no gradient")


def _square_errors(call, name: str, half_exc=RuntimeError, half_match="Low precision"):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))),), RuntimeError, name, "square", fn=call, desc="not square"),
                E((T(f32(rng, (3,))),), RuntimeError, name, "2 dimensions", fn=call, desc="1-d"),
                E((T(np.ones((2, 2), np.int64)),), RuntimeError, name, "floating point", fn=call, desc="int64"),
                E((T(np.eye(2, dtype=np.float16)),), half_exc, half_match, fn=call, desc="float16")]
    return errors


for _op, _name, _fn in (("linalg_inv_ex", "linalg.inv", _call("linalg.inv_ex", 0)),
                        ("linalg_inv", "linalg.inv", _call("linalg.inv")),
                        ("inverse", "linalg.inv", _call("inverse"))):
    add(OpInfo(_op, _fn, _square_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
               errors=_square_errors(_fn, _name)))

for _op, _fn in (("linalg_det", _call("linalg.det")), ("det", _call("det"))):
    add(OpInfo(_op, _fn, lambda rng, d: _square_samples(rng, d) + [_singular(d)], dtypes=_DTYPES, grad=True,
               tol=LINALG_TOL, errors=_square_errors(_fn, "linalg.det", NotImplementedError, "lu_cpu")))

for _op, _fn in (("linalg_slogdet", _call("linalg.slogdet")), ("slogdet", _call("slogdet"))):
    add(OpInfo(_op, _fn, lambda rng, d: _square_samples(rng, d) + [_singular(d)], dtypes=_DTYPES, grad=True,
               tol=LINALG_TOL, errors=_square_errors(_fn, "linalg.slogdet")))


def _logdet_samples(rng, dtype):
    """A negative determinant's log is NaN (so are finite differences through it: no gradcheck there)."""
    return [dataclasses.replace(s, gradcheck=False) if s.desc == "negative determinant" else s
            for s in _square_samples(rng, dtype)] + [_singular(dtype)]


add(OpInfo("logdet", _call("logdet"), _logdet_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
           errors=_square_errors(_call("logdet"), "logdet")))


def _solve_samples(rng, dtype):
    A = lambda batch, n, layout="c": T(_well_conditioned(rng, batch, n, dtype), layout, grad=True)    # noqa: E731
    B = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=True)                      # noqa: E731
    return [Sample((A((), 3), B((3, 2))), desc="matrix right-hand side"),
            Sample((A((), 3), B((3,))), desc="vector"),
            Sample((A((2,), 3), B((3,))), desc="one vector for a batch"),
            Sample((A((2,), 3), B((2, 3))), desc="a batch of vectors"),
            Sample((A((2,), 3), B((4, 1, 3, 2))), desc="batches broadcast"),
            Sample((A((), 3), B((2, 3))), {"left": False}, desc="X A = B"),
            Sample((A((2,), 3, "t"), B((3, 2), "t")), desc="transposed"),
            Sample((A((), 0), B((0, 2))), desc="empty")]


def _solve_errors(call):
    def errors(rng):
        return [E((T(f32(rng, (3, 3))), T(make(rng, (3,), "float64"))), RuntimeError, "linalg.solve", "same dtype",
                  fn=call, desc="dtypes differ"),
                E((T(f32(rng, (3, 3))), T(f32(rng, (4,)))), RuntimeError, "linalg.solve", "Incompatible shapes",
                  fn=call, desc="sizes differ"),
                E((T(f32(rng, (3,))), T(f32(rng, (3,)))), RuntimeError, "linalg.solve", "2 dimensions", fn=call,
                  desc="1-d A"),
                E((T(f32(rng, (2, 3))), T(f32(rng, (2,)))), RuntimeError, "linalg.solve", "square", fn=call,
                  desc="A not square"),
                E((T(f32(rng, (3, 3))), T(f32(rng, (3,)))), RuntimeError, "linalg.solve", "XA = B (3x3 and 3x1)",
                  kwargs={"left": False}, fn=call, desc="vector with left=False"),
                E((T(f32(rng, (1, 1))), T(f32(rng, (1,)))), RuntimeError, "linalg.solve", "left=False",
                  kwargs={"left": False}, fn=call, desc="a 1x1 system's vector with left=False"),
                E((T(np.eye(3, dtype=np.int64)), T(np.ones(3, np.int64))), RuntimeError, "floating point", fn=call,
                  desc="int64"),
                E((T(np.eye(3, dtype=np.float16)), T(np.ones(3, np.float16))), NotImplementedError, "lu_cpu",
                  fn=call, desc="float16")]
    return errors


for _op, _fn in (("linalg_solve_ex", _call("linalg.solve_ex", 0)), ("linalg_solve", _call("linalg.solve"))):
    add(OpInfo(_op, _fn, _solve_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL, errors=_solve_errors(_fn)))


def _power_samples(rng, dtype):
    x = lambda batch, n, layout="c": T(_well_conditioned(rng, batch, n, dtype), layout, grad=True)    # noqa: E731
    return [Sample((x((), 3), n), desc=f"n={n}") for n in (0, 1, 2, 3, 5, -1, -2)] + [
        Sample((x((2,), 3, "t"), 2), desc="transposed batch"), Sample((x((2,), 3, "t"), 1), desc="transposed, n=1"),
        Sample((T(np.zeros((0, 0), NP_DTYPE[dtype]), grad=True), 2), desc="empty")]


def _power_int_samples(rng, dtype):
    if dtype not in _DTYPES:
        return [Sample((T(make(rng, (3, 3), dtype)), n), desc=f"integers, n={n}") for n in (0, 1, 2, 3)]
    return _power_samples(rng, dtype)


def _power_errors(call):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))), 2), RuntimeError, "linalg.matrix_power", "square", fn=call, desc="not square"),
                E((T(np.ones((3, 3), np.int64)), -1), RuntimeError, "linalg.inv", "floating point", fn=call,
                  desc="inverse of integers"),
                E((T(f32(rng, (3, 3))), 1.5), TypeError, "'n'", fn=call, desc="float power")]
    return errors


for _op, _fn in (("linalg_matrix_power", _call("linalg.matrix_power")), ("matrix_power", _call("matrix_power"))):
    add(OpInfo(_op, _fn, _power_int_samples, dtypes=_DTYPES + ("int64",), grad=True, tol=LINALG_TOL,
               errors=_power_errors(_fn)))
