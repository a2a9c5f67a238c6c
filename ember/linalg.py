"""`ember.linalg` (torch.linalg): the Cholesky factorisation and triangular solves, the vector and matrix norms,
and the vector and matrix products, under torch.linalg's names.

The factorisations and solves are registry ops (linalg_cholesky_ex, linalg_cholesky, linalg_solve_triangular), batched over leading
dimensions with broadcasting and differentiable twice: LAPACK on the cpu, ember ops on other devices. A
matrix that is not positive-definite raises `LinAlgError` (a RuntimeError, as torch.linalg.LinAlgError)
from `cholesky`; `cholesky_ex` reports it in `info` instead, unless asked to raise.

The inverse, determinants and solve are registry ops too (linalg_inv_ex, linalg_det, linalg_slogdet,
linalg_solve_ex): numpy's batched LAPACK on the cpu, an LU factorisation with partial pivoting in ember ops
elsewhere. A singular matrix raises LinAlgError from `inv` and `solve`; the `_ex` forms report it in `info`.

The norms and products are registry composites (linalg_vector_norm, linalg_matrix_norm, linalg_vecdot,
linalg_cross, linalg_multi_dot) over reductions, elementwise ops and matmul; `norm` picks the vector or the
matrix norm from `ord` and `dim` as torch's does. Matrix norms that need singular values (ord 2, -2, 'nuc')
raise NotImplementedError: ember computes no singular values.
"""
from __future__ import annotations

from ember._generated import functions as _F
from ember.core.errors import ArgumentValueError, LinAlgError, ShapeError

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "inv", "inv_ex", "matmul",
           "matrix_norm", "matrix_power", "multi_dot", "norm", "slogdet", "solve", "solve_ex", "solve_triangular",
           "vecdot", "vector_norm"]


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


def vector_norm(x, ord: float = 2, dim=None, keepdim: bool = False, *, dtype=None):
    """The ord-norm of the vectors along `dim` of a floating `x` (of all its elements when None):
    sum(|x|^ord)^(1/ord); inf/-inf the largest/smallest |x|, 0 the count of non-zeros. With `dtype`, x is
    converted to it first (a widening only)."""
    return _F.linalg_vector_norm(x, ord, dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """The ord-norm of the matrices over the two dims `dim` of a floating `A`: 'fro' (Frobenius), 1/-1 the
    largest/smallest column sum of |A|, inf/-inf the largest/smallest row sum. 2, -2 and 'nuc' need singular
    values, which ember does not compute: NotImplementedError."""
    if isinstance(ord, str):
        return _F._dispatch_linalg_matrix_norm_str_ord((A, ord, dim, keepdim, dtype))
    return _F._dispatch_linalg_matrix_norm((A, ord, dim, keepdim, dtype))


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or over every element of A when neither `ord` nor `dim`
    is given), a matrix norm over two dims (or of a 2-D A when only `ord` is given). A string ord is a
    matrix norm's; ord None is the 2-norm of vectors and the Frobenius norm of matrices."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if len(dims) not in (1, 2):
            raise ArgumentValueError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dims}")
    elif ord is not None:
        if A.dim() not in (1, 2):
            raise ShapeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                             f"Got {A.dim()}D.")
        dims = None
    else:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dims is not None and len(dims) == 2) or (dims is None and A.dim() == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dims is None else dims, keepdim,
                           dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def vecdot(x, y, *, dim: int = -1):
    """The dot products of the vectors along `dim` of x and y (broadcast against each other)."""
    return _F.linalg_vecdot(x, y, dim=dim)


def cross(input, other, *, dim: int = -1):
    """The cross products of the 3-vectors along `dim` of input and other (broadcast against each other)."""
    return _F.linalg_cross(input, other, dim=dim)


def multi_dot(tensors):
    """The product of a chain of matrices (the first may be a row vector, the last a column vector),
    multiplied in the order that needs the fewest scalar multiplications."""
    return _F.linalg_multi_dot(list(tensors))


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """The diagonals of the matrices of A (a view): torch.diagonal with the matrices' dims last by default."""
    return _F.diagonal(A, offset, dim1, dim2)


def matmul(input, other):
    """torch.matmul."""
    return _F.matmul(input, other)


def inv(A):
    """The inverse of each square matrix of A (..., n, n); LinAlgError names the first singular one."""
    return _F.linalg_inv(A)


def inv_ex(A, *, check_errors: bool = False):
    """(inverse, info): `inv` without the check, info holding per matrix 0 or the order of the first zero pivot
    of its LU factorisation (the inverse is then unspecified). With `check_errors`, raises as `inv`."""
    return _F.linalg_inv_ex(A, check_errors=check_errors)


def det(A):
    """The determinant of each square matrix of A."""
    return _F.linalg_det(A)


def slogdet(A):
    """(sign, logabsdet) of each square matrix's determinant: sign -1, 0 or 1, and log |det|."""
    return _F.linalg_slogdet(A)


def solve(A, B, *, left: bool = True):
    """X with A X = B (X A = B when not `left`), batches broadcast; B is a vector (or a batch of vectors)
    when it is 1-D or has A's shape less its last dim. LinAlgError names the first singular matrix."""
    return _F.linalg_solve(A, B, left=left)


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """(result, info): `solve` without the check (info per matrix of A: 0, or its first zero pivot)."""
    return _F.linalg_solve_ex(A, B, left=left, check_errors=check_errors)


def matrix_power(A, n: int):
    """A^n of each square matrix (n = 0: the identity; n < 0: the inverse's power)."""
    return _F.linalg_matrix_power(A, n)
