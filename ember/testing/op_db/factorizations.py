"""OpInfos of the Cholesky factorisation and the triangular solves: linalg_cholesky_ex, linalg_cholesky,
cholesky, linalg_solve_triangular, triangular_solve and cholesky_solve, against torch.linalg's.

The factorisations get well-conditioned symmetric positive-definite matrices and are called on the
symmetrised input (x + x^T) / 2, as torch's own OpInfos do: they read one triangle, so finite differences
of the raw input would disagree with the (symmetric) gradient. The solves get triangles with their
diagonal away from zero (and values in the other triangle, which must not be read); cholesky_solve's
factor is passed through tril/triu for the same reason as the symmetrisation."""
from __future__ import annotations

import numpy as np

from ..tolerances import LINALG_TOL
from .samples import NP_DTYPE, OpInfo, Sample, T
from .database import E, add, f32

_DTYPES = ("float32", "float64")           # LAPACK's: torch has no half or integer kernels


def _spd(rng, batch, n: int, dtype: str) -> np.ndarray:
    x = rng.standard_normal(tuple(batch) + (n, n))
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(NP_DTYPE[dtype])


def _triangle(rng, batch, n: int, dtype: str) -> np.ndarray:
    x = rng.standard_normal(tuple(batch) + (n, n)) * 0.3 + np.eye(n) * (1.5 + rng.uniform(0, 1, tuple(batch) + (n, 1)))
    return x.astype(NP_DTYPE[dtype])


def _symmetrised(name: str):
    def call(m, x, **kw):
        target = m.linalg if "." in name else m
        return getattr(target, name.split(".")[-1])((x + x.mT) / 2, **kw)
    call.__name__ = name
    return call


def _raw(name: str):
    def call(m, x, **kw):
        target = m.linalg if "." in name else m
        return getattr(target, name.split(".")[-1])(x, **kw)
    call.__name__ = name
    return call


def _factor_samples(rng, dtype):
    return [Sample((T(_spd(rng, (), 3, dtype), grad=True),), desc="3x3"),
            Sample((T(_spd(rng, (2,), 4, dtype), grad=True),), {"upper": True}, desc="batch, upper"),
            Sample((T(_spd(rng, (2, 1), 2, dtype), "t", grad=True),), desc="transposed batch"),
            Sample((T(_spd(rng, (), 1, dtype), grad=True),), {"upper": False}, desc="1x1"),
            Sample((T(np.zeros((2, 0, 0), NP_DTYPE[dtype]), grad=True),), desc="empty matrices")]


def _factor_errors(name: str):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))),), RuntimeError, "cholesky", "square", fn=_raw(name), desc="not square"),
                E((T(f32(rng, (3,))),), RuntimeError, "cholesky", "2 dimensions", fn=_raw(name), desc="1-d"),
                E((T(np.ones((2, 2), np.int64)),), RuntimeError, "cholesky", "floating point", fn=_raw(name),
                  desc="int64"),
                E((T(np.eye(2, dtype=np.float16)),), NotImplementedError, "cholesky_cpu", fn=_raw(name),
                  desc="float16")]
    return errors


for _op, _name in (("linalg_cholesky_ex", "linalg.cholesky_ex"), ("linalg_cholesky", "linalg.cholesky")):
    add(OpInfo(_op, _symmetrised(_name), _factor_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
               errors=_factor_errors(_name)))


def _legacy_cholesky(m, x, upper=False):
    return m.cholesky((x + x.mT) / 2, upper)


def _legacy_cholesky_raw(m, x):
    return m.cholesky(x)


_legacy_cholesky.__name__ = "cholesky"


def _cholesky_errors(rng):
    return [E((T(f32(rng, (2, 3))),), RuntimeError, "cholesky", "square", fn=_legacy_cholesky_raw, desc="not square"),
            E((T(np.eye(2, dtype=np.float16)),), NotImplementedError, "cholesky_cpu", fn=_legacy_cholesky_raw,
              desc="float16")]


add(OpInfo("cholesky", _legacy_cholesky, _factor_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
           errors=_cholesky_errors))


def _solve_samples(rng, dtype):
    t = lambda *batch_n: T(_triangle(rng, batch_n[:-1], batch_n[-1], dtype), grad=True)  # noqa: E731
    b = lambda *shape: T(rng.standard_normal(shape).astype(NP_DTYPE[dtype]), grad=True)  # noqa: E731
    return [Sample((t(3), b(3, 2)), {"upper": False}, desc="lower"),
            Sample((t(3), b(3, 2)), {"upper": True}, desc="upper"),
            Sample((t(2, 3), b(2, 4, 3)), {"upper": True, "left": False}, desc="right, upper, batch"),
            Sample((t(2, 1, 3), b(3, 3, 1)), {"upper": False, "unitriangular": True}, desc="unit, broadcast"),
            Sample((T(_triangle(rng, (), 3, dtype), "t", grad=True), b(2, 3)),
                   {"upper": False, "left": False, "unitriangular": True}, desc="transposed A, right, unit"),
            Sample((t(3), T(rng.standard_normal((3, 2)).astype(NP_DTYPE[dtype]), "t", grad=True)), {"upper": True},
                   desc="transposed B"),
            Sample((t(0, 3), b(3, 2)), {"upper": False}, desc="empty batch")]


def _solve_triangular(m, a, b, **kw):
    return m.linalg.solve_triangular(a, b, **kw)


_solve_triangular.__name__ = "linalg.solve_triangular"

add(OpInfo("linalg_solve_triangular", _solve_triangular, _solve_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 2)))), RuntimeError, "solve_triangular", "square",
                 kwargs={"upper": True}, desc="A not square"),
               E((T(f32(rng, (2, 2))), T(f32(rng, (3, 2)))), RuntimeError, "solve_triangular", "Incompatible",
                 kwargs={"upper": True}, desc="sizes"),
               E((T(f32(rng, (2, 2))), T(f32(rng, (2,)))), RuntimeError, "solve_triangular", "2 dimensions",
                 kwargs={"upper": True}, desc="1-d B"),
               E((T(f32(rng, (3, 2, 2))), T(f32(rng, (4, 2, 1)))), RuntimeError, "solve_triangular",
                 kwargs={"upper": True}, desc="batches do not broadcast"),
               E((T(np.eye(2, dtype=np.int64)), T(f32(rng, (2, 2)))), NotImplementedError, "triangular_solve_cpu",
                 kwargs={"upper": True}, desc="int64 A")]))


def _legacy_solve(m, b, a, *args):
    return m.triangular_solve(b, a, *args)


_legacy_solve.__name__ = "triangular_solve"


def _legacy_solve_samples(rng, dtype):
    t = lambda *batch_n: T(_triangle(rng, batch_n[:-1], batch_n[-1], dtype), grad=True)  # noqa: E731
    b = lambda *shape: T(rng.standard_normal(shape).astype(NP_DTYPE[dtype]), grad=True)  # noqa: E731
    return [Sample((b(3, 2), t(3)), desc="upper"),
            Sample((b(2, 1, 3, 2), t(3, 3), False, True), desc="lower, transposed, broadcast"),
            Sample((b(3, 4), t(3), True, False, True), desc="unit")]


add(OpInfo("triangular_solve", _legacy_solve, _legacy_solve_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 2))), T(f32(rng, (2, 3)))), RuntimeError, "triangular_solve", "square",
                 desc="A not square"),
               E((T(f32(rng, (2, 2))), T(rng.standard_normal((2, 2)))), RuntimeError, "triangular_solve", "dtype",
                 desc="dtypes differ")]))


def _cholesky_solve(m, b, factor, upper=False):
    return m.cholesky_solve(b, factor.triu() if upper else factor.tril(), upper)


_cholesky_solve.__name__ = "cholesky_solve"


def _cholesky_solve_samples(rng, dtype):
    def factor(batch, n, upper):
        lower = np.linalg.cholesky(_spd(rng, batch, n, "float64"))
        return T((np.swapaxes(lower, -1, -2) if upper else lower).astype(NP_DTYPE[dtype]), grad=True)
    b = lambda *shape: T(rng.standard_normal(shape).astype(NP_DTYPE[dtype]), grad=True)  # noqa: E731
    return [Sample((b(3, 2), factor((), 3, False)), desc="lower"),
            Sample((b(2, 1, 3, 2), factor((3,), 3, True), True), desc="upper, broadcast")]


add(OpInfo("cholesky_solve", _cholesky_solve, _cholesky_solve_samples, dtypes=_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (3, 2))), T(f32(rng, (2, 2)))), RuntimeError, "cholesky_solve", "Incompatible",
                 desc="sizes"),
               E((T(f32(rng, (3,))), T(f32(rng, (3, 3)))), RuntimeError, "cholesky_solve", "2 dimensions",
                 desc="1-d b")]))
