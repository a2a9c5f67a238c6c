"""The Cholesky factorisation and triangular solves against the array-module API: numpy's batched LAPACK
Cholesky and scipy's triangular solve on the cpu; on another array module (cupy), or where LAPACK stops
(a matrix that is not positive-definite, a singular triangle), a column-by-column factorisation and a
row-by-row substitution vectorised over the batch. Results are column-major per matrix, as torch's.

float32 and float64 only: the shape rules refuse the other dtypes with torch's errors.
"""
from __future__ import annotations

import importlib

import numpy as np

from ember.core.errors import LinAlgError

from .context import ArrayModule, quiet

_MODULES: dict = {}


def _scipy_linalg():
    module = _MODULES.get("scipy.linalg")
    if module is None:
        module = _MODULES["scipy.linalg"] = importlib.import_module("scipy.linalg")
    return module


def _column_major(am: ArrayModule, x):
    """`x` copied so each matrix is column-major (strides (1, rows)), the batch contiguous around them."""
    return am.xp.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)


def _factor_by_columns(am: ArrayModule, a):
    """(L, info) of the symmetric matrices whose lower triangles `a` holds: L column by column, info the
    order of the first leading minor that is not positive-definite (0 when none; the rest of that L is
    left as computed with its failed pivots taken as 1, as torch leaves a failed factor unspecified)."""
    xp = am.xp
    n = a.shape[-1]
    L = xp.zeros_like(a)
    info = xp.zeros(a.shape[:-2], dtype=xp.int32)
    for j in range(n):
        row = L[..., j, :j]
        d = a[..., j, j] - (row * row).sum(-1)
        failed = ~(d > 0)                                      # nan fails too, as LAPACK's check
        info = xp.where((info == 0) & failed, j + 1, info).astype(xp.int32)
        pivot = xp.sqrt(xp.where(failed, 1, d))
        L[..., j, j] = pivot
        below = a[..., j + 1:, j] - (L[..., j + 1:, :j] @ row[..., :, None])[..., 0]
        L[..., j + 1:, j] = below / pivot[..., None]
    return L, info


def _raise_for(info, name: str) -> None:
    """torch's LinAlgError for the first matrix that is not positive-definite (check_errors)."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        raise LinAlgError.not_positive_definite(name, int(bad[0]) if info.ndim else None, int(flat[bad[0]]))


def linalg_cholesky_ex(am: ArrayModule, specs, a, upper=False, check_errors=False):
    """(L, info): lower factors read from the lower triangles (upper ones from the upper triangles, U = L^T)."""
    xp = am.xp
    m = a.swapaxes(-1, -2) if upper else a                # the triangle read is m's lower one
    sym = xp.tril(m) + xp.tril(m, -1).swapaxes(-1, -2)
    L = None
    if am.is_numpy:
        try:
            L = xp.linalg.cholesky(sym)
            info = xp.zeros(a.shape[:-2], dtype=xp.int32)
        except xp.linalg.LinAlgError:
            L = None
        if L is not None and xp.isnan(xp.diagonal(L, axis1=-2, axis2=-1)).any():
            L = None                                      # LAPACK let a nan pivot through: find its order
    if L is None:
        L, info = _factor_by_columns(am, sym)
    if check_errors:
        _raise_for(info if am.is_numpy else info.get(), "linalg.cholesky_ex")
    return (L.swapaxes(-1, -2) if upper else _column_major(am, L)), info


def _substitute(am: ArrayModule, a, b, upper: bool, unitriangular: bool):
    """X with A X = B, row by row (forward substitution for lower A, back substitution for upper), batched;
    a zero pivot gives inf/nan as BLAS's trsm does."""
    xp = am.xp
    n = a.shape[-1]
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:]
    x = xp.zeros(shape, dtype=a.dtype)
    order = range(n - 1, -1, -1) if upper else range(n)
    with quiet(xp, divide="ignore", invalid="ignore"):      # a singular triangle gives inf/nan, as torch's
        for i in order:
            done = slice(i + 1, n) if upper else slice(0, i)
            r = b[..., i, :] - (a[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = r if unitriangular else r / a[..., i, i][..., None]
    return x


def linalg_solve_triangular(am: ArrayModule, spec, a, b, upper, left=True, unitriangular=False):
    """X with A X = B (X A = B when not `left`), A triangular: scipy's solve, B converted to A's dtype."""
    b = b.astype(a.dtype, copy=False)
    if not left:                                          # X A = B  <=>  A^T X^T = B^T
        a, b, upper = a.swapaxes(-1, -2), b.swapaxes(-1, -2), not upper
    x = None
    if am.is_numpy and a.size and b.size:              # scipy refuses empty batches
        try:
            x = _scipy_linalg().solve_triangular(a, b, lower=not upper, unit_diagonal=unitriangular, check_finite=False)
        except am.xp.linalg.LinAlgError:               # a zero on the diagonal: substitute, giving inf/nan
            x = None
    if x is None:
        x = _substitute(am, a, b, upper, unitriangular)
    return _column_major(am, x) if left else am.xp.ascontiguousarray(x).swapaxes(-1, -2)


KERNELS = {"linalg_cholesky_ex": linalg_cholesky_ex, "linalg_solve_triangular": linalg_solve_triangular}
