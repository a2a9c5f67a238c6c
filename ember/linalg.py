"""`ember.linalg` (torch.linalg): the Cholesky factorisation and triangular solves, under torch.linalg's names.

Each is a registry op (linalg_cholesky_ex, linalg_cholesky, linalg_solve_triangular), batched over leading
dimensions with broadcasting and differentiable twice: LAPACK on the cpu, ember ops on other devices. A
matrix that is not positive-definite raises `LinAlgError` (a RuntimeError, as torch.linalg.LinAlgError)
from `cholesky`; `cholesky_ex` reports it in `info` instead, unless asked to raise.
"""
from __future__ import annotations

from ember._generated import functions as _F
from ember.core.errors import LinAlgError

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "solve_triangular"]


def cholesky(A, *, upper: bool = False):
    """The Cholesky factor of each symmetric positive-definite matrix of `A` (..., n, n): lower L with
    A = L L^T, read from A's lower triangle; with `upper`, U = L^T read from the upper triangle.
    Raises LinAlgError when a matrix is not positive-definite."""
    return _F.linalg_cholesky(A, upper=upper)


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):
    """(L, info): `cholesky` without the check, info holding per matrix 0 or the order of the first leading
    minor that is not positive-definite (L is then unspecified). With `check_errors`, raises as `cholesky`."""
    return _F.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors)


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """X with A X = B (X A = B when not `left`) for a triangular A (..., n, n), upper or lower; only that
    triangle is read, and with `unitriangular` its diagonal is taken as ones. Batches broadcast."""
    return _F.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
