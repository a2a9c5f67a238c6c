"""The Cholesky factorisation, triangular solves and the LU-based ops (inverse, determinant, log-determinant,
solve) against the array-module API: numpy's batched LAPACK Cholesky, inverse, determinants and solve, and
scipy's triangular solve on the cpu; on another array module (cupy), or where LAPACK stops
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


def _raise_for(info, name: str, error=LinAlgError.not_positive_definite) -> None:
    """torch's LinAlgError (`error`: not positive-definite, or singular) for the first matrix whose info is not
    0 (check_errors)."""
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        raise error(name, int(bad[0]) if info.ndim else None, int(flat[bad[0]]))


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


# ------------------------------------------------------------------------------------------ LU-based
def lu_pivots_info(am: ArrayModule, a):
    """info per matrix of a batch as LAPACK's getrf reports it: 0, or the order of the first zero pivot of the
    LU factorisation with partial pivoting (computed column by column, vectorised over the batch; only
    called once LAPACK has found some matrix singular)."""
    xp = am.xp
    n = a.shape[-1]
    lu = a.reshape((-1, n, n)).copy()
    info = xp.zeros(lu.shape[0], dtype=xp.int32)
    rows = xp.arange(lu.shape[0])
    for k in range(n):
        p = k + xp.argmax(xp.abs(lu[:, k:, k]), axis=1)
        top, chosen = lu[rows, k].copy(), lu[rows, p].copy()
        lu[rows, k], lu[rows, p] = chosen, top
        pivot = lu[:, k, k]
        info = xp.where((info == 0) & (pivot == 0), k + 1, info).astype(xp.int32)
        safe = xp.where(pivot == 0, 1, pivot)
        lu[:, k + 1:, k] /= safe[:, None]
        lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return info.reshape(a.shape[:-2])


def _lapack(am: ArrayModule, fn, *arrays):
    """fn(*arrays), or None where numpy's LAPACK refuses a singular matrix (cupy's returns inf/nan instead)."""
    try:
        with quiet(am.xp, divide="ignore", invalid="ignore"):
            return fn(*arrays)
    except am.xp.linalg.LinAlgError:
        return None


def _info(am: ArrayModule, a, result):
    """info for a batch LAPACK served (`result`) or refused (None): zeros, unless it refused or gave non-finite
    values, which the factorisation then explains."""
    xp = am.xp
    if result is not None and (am.is_numpy or bool(xp.isfinite(result).all())):
        return xp.zeros(a.shape[:-2], dtype=xp.int32)
    return lu_pivots_info(am, a)


def linalg_inv_ex(am: ArrayModule, specs, a, check_errors=False):
    """(inverse, info): numpy's batched inverse, column-major per matrix; a singular matrix's inverse is left as
    the matrices solved one by one give it (inf/nan), its info the first zero pivot."""
    xp = am.xp
    inv = _lapack(am, xp.linalg.inv, a) if a.size else xp.empty(a.shape, a.dtype)
    info = _info(am, a, inv)
    if check_errors:
        _raise_for(info if am.is_numpy else info.get(), "linalg.inv_ex", LinAlgError.singular)
    if inv is None:                                        # singular somewhere: each matrix on its own
        flat = a.reshape((-1,) + a.shape[-2:])
        inv = xp.stack([_lapack(am, xp.linalg.inv, m) if not bad else xp.full(m.shape, xp.nan, a.dtype)
                        for m, bad in zip(flat, info.reshape(-1).tolist())]).reshape(a.shape)
    return _column_major(am, inv), info


def linalg_det(am: ArrayModule, spec, a):
    """numpy's batched determinant (1 for a 0x0 matrix)."""
    xp = am.xp
    if not a.shape[-1]:
        return xp.ones(a.shape[:-2], a.dtype)
    return xp.asarray(xp.linalg.det(a), dtype=a.dtype).reshape(a.shape[:-2])      # a 0-d array for one matrix


def linalg_slogdet(am: ArrayModule, specs, a):
    """(sign, logabsdet): numpy's batched slogdet (a singular matrix: sign 0, logabsdet -inf)."""
    xp = am.xp
    if not a.shape[-1]:
        return xp.ones(a.shape[:-2], a.dtype), xp.zeros(a.shape[:-2], a.dtype)
    sign, logabsdet = xp.linalg.slogdet(a)
    batch = a.shape[:-2]
    return xp.asarray(sign, dtype=a.dtype).reshape(batch), xp.asarray(logabsdet, dtype=a.dtype).reshape(batch)


def linalg_solve_ex(am: ArrayModule, specs, a, b, left=True, check_errors=False):
    """(X, info) with A X = B (X A = B when not `left`: A^T X^T = B^T), batches broadcast, B a vector or a batch
    of vectors where the shape rule's result says so (its dims one fewer than a matrix B's)."""
    xp = am.xp
    shape = specs[0][0]
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])      # the shape rule's test
    bm = b[..., None] if vector else b
    am_, bm_ = (a, bm) if left else (a.swapaxes(-1, -2), bm.swapaxes(-1, -2))
    full = tuple(shape) + ((1,) if vector else ())
    batch = full[:-2]
    am_ = xp.broadcast_to(am_, batch + am_.shape[-2:])
    bm_ = xp.broadcast_to(bm_, batch + (am_.shape[-1], full[-1] if left else full[-2]))
    x = _lapack(am, xp.linalg.solve, am_, bm_) if am_.size and bm_.size else xp.zeros(bm_.shape, a.dtype)
    info = _info(am, a, x)
    if check_errors:
        _raise_for(info if am.is_numpy else info.get(), "linalg.solve_ex", LinAlgError.singular)
    if x is None:                                          # singular somewhere: NaN where it is
        with quiet(xp, divide="ignore", invalid="ignore"):
            x = xp.full(bm_.shape, xp.nan, a.dtype)
            ok = xp.broadcast_to(info.reshape(info.shape + (1, 1)) == 0, batch + (1, 1)).reshape(-1)
            fa, fb, fx = am_.reshape((-1,) + am_.shape[-2:]), bm_.reshape((-1,) + bm_.shape[-2:]), x.reshape(
                (-1,) + x.shape[-2:])
            for k in range(fx.shape[0]):
                if bool(ok[k]):
                    fx[k] = xp.linalg.solve(fa[k], fb[k])
    if not left:
        return xp.ascontiguousarray(x.swapaxes(-1, -2)), info
    x = x[..., 0] if vector else x
    return (_column_major(am, x) if x.ndim >= 2 else xp.ascontiguousarray(x)), info


KERNELS = {"linalg_cholesky_ex": linalg_cholesky_ex, "linalg_solve_triangular": linalg_solve_triangular,
           "linalg_inv_ex": linalg_inv_ex, "linalg_det": linalg_det, "linalg_slogdet": linalg_slogdet,
           "linalg_solve_ex": linalg_solve_ex}
