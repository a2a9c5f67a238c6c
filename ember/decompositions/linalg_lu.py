"""The LU-based ops of torch.linalg in ember ops: inverse, determinant, log-determinant, solve, matrix power.

linalg_inv_ex, linalg_det, linalg_slogdet and linalg_solve_ex are explicit kernels for the backends without
LAPACK (the cpu's kernels are numpy's, array_kernels/factorizations.py). They share one factorisation,
A = P L U with partial pivoting, built column by column and batched over the leading dims: at step k the
row with the largest |value| in column k (at or below the diagonal) is swapped up, the multipliers below the
pivot are stored in L's place and the trailing block takes its rank-one update. A zero pivot (a singular
matrix) sets info to its order, as LAPACK's getrf does, and leaves the column unscaled.

The determinant is the product of U's diagonal times the permutation's sign; a solve applies P to B, then
two triangular solves (linalg_solve_triangular: L with its unit diagonal, then U). linalg_inv, inverse,
det, slogdet, logdet, linalg_solve and the matrix powers are composites over those.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import LinAlgError

from . import decomposition, explicit_kernel
from .linalg import _batch, check_info


def check_singular(info, name: str) -> None:
    """torch's LinAlgError for the first singular matrix of a batch (its info not 0)."""
    check_info(info, name, LinAlgError.singular)


def lu_factor(A):
    """(LU, perm, info, odd): L's multipliers below the diagonal and U on and above it, the rows of A in the
    order P picks them (P A = L U), the first zero pivot's order per matrix (0: none) and whether the
    permutation is odd."""
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    rows = F.arange(n, device=A.device)
    below = F.unsqueeze(rows, -1)                           # as a column: compares row with column indices
    lu = A
    perm = F.expand(rows, batch + (n,))
    info = F.zeros(batch, dtype=_dt.int32, device=A.device)
    odd = F.zeros(batch, dtype=_dt.bool, device=A.device)
    for k in range(n):
        column = F.where(F.lt(rows, k), -1.0, F.abs(F.select(lu, -1, k)))   # rows above k never pivot
        p = F.unsqueeze(F.argmax(column, -1), -1)                             # (..., 1)
        swap = F.where(F.eq(rows, k), p, F.where(F.eq(rows, p), k, rows))     # rows k and p exchanged
        lu = F.gather(lu, -2, F.expand(F.unsqueeze(swap, -1), batch + (n, n)))
        perm = F.gather(perm, -1, swap)
        odd = F.logical_xor(odd, F.ne(F.squeeze(p, -1), k))
        pivot = F.select(F.select(lu, -2, k), -1, k)
        zero = F.eq(pivot, 0)
        info = F.where(F.logical_and(F.eq(info, 0), zero), k + 1, info)
        scale = F.unsqueeze(F.where(zero, 1.0, pivot), -1)
        multipliers = F.where(F.gt(rows, k), F.div(F.select(lu, -1, k), scale), 0.0)      # (..., n)
        u_row = F.where(F.gt(rows, k), F.select(lu, -2, k), 0.0)                           # (..., n)
        lu = F.sub(lu, F.mul(F.unsqueeze(multipliers, -1), F.unsqueeze(u_row, -2)))
        in_column = F.logical_and(F.gt(below, k), F.eq(rows, k))                          # (n, n)
        lu = F.where(in_column, F.unsqueeze(multipliers, -1), lu)
    return lu, perm, F._to_copy(info, dtype=_dt.int32), odd


def _solve_factored(lu, perm, B):
    """X with A X = B for matrices B (..., n, k), from A's factorisation (batches broadcast)."""
    shape = _batch(lu.shape[:-2], B.shape[:-2]) + tuple(B.shape[-2:])
    b = F.expand(B, shape)
    p = F.expand(perm, shape[:-2] + (perm.shape[-1],))
    pb = F.gather(b, -2, F.expand(F.unsqueeze(p, -1), shape))
    y = F.linalg_solve_triangular(lu, pb, upper=False, unitriangular=True)
    return F.linalg_solve_triangular(lu, y, upper=True)


@explicit_kernel("linalg_inv_ex")
def linalg_inv_ex(A, check_errors=False):
    n = A.shape[-1]
    lu, perm, info, _ = lu_factor(A)
    eye = F.eye(n, dtype=A.dtype, device=A.device)
    inverse = _solve_factored(lu, perm, F.expand(eye, tuple(A.shape)))
    if check_errors:
        check_singular(info, "linalg.inv_ex")
    return inverse, info


def _diagonal(lu):
    return F.diagonal(lu, 0, -2, -1)


@explicit_kernel("linalg_det")
def linalg_det(A):
    lu, _, _, odd = lu_factor(A)
    return F.mul(F.prod(_diagonal(lu), -1), F.where(odd, -1.0, 1.0))


@explicit_kernel("linalg_slogdet")
def linalg_slogdet(A):
    lu, _, _, odd = lu_factor(A)
    d = _diagonal(lu)
    sign = F.mul(F.prod(F.sign(d), -1), F.where(odd, -1.0, 1.0))
    return F._to_copy(sign, dtype=A.dtype), F.sum(F.log(F.abs(d)), [-1])


@explicit_kernel("linalg_solve_ex")
def linalg_solve_ex(A, B, left=True, check_errors=False):
    a, b = tuple(A.shape), tuple(B.shape)
    vector = len(b) == 1 or (len(b) == len(a) - 1 and b == a[:-1])        # the shape rule's is_vector_rhs
    rhs = F.unsqueeze(B, -1) if vector else B
    if not left:                                                           # X A = B  <=>  A^T X^T = B^T
        A, rhs = F.transpose(A, -2, -1), F.transpose(rhs, -2, -1)
    lu, perm, info, _ = lu_factor(A)
    x = _solve_factored(lu, perm, rhs)
    if check_errors:
        check_singular(info, "linalg.solve_ex")
    if not left:
        return F.contiguous(F.transpose(x, -2, -1)), info
    return (F.squeeze(x, -1) if vector else x), info


@decomposition("linalg_inv")
def linalg_inv(A):
    inverse, info = F.linalg_inv_ex(A)
    check_singular(info, "linalg.inv")
    return inverse


@decomposition("inverse")
def inverse(self):
    return F.linalg_inv(self)


@decomposition("det")
def det(self):
    return F.linalg_det(self)


@decomposition("slogdet")
def slogdet(self):
    return F.linalg_slogdet(self)


@decomposition("logdet")
def logdet(self):
    sign, logabsdet = F.linalg_slogdet(self)
    return F.where(F.lt(sign, 0), float("nan"), logabsdet)


@decomposition("linalg_solve")
def linalg_solve(A, B, left=True):
    result, info = F.linalg_solve_ex(A, B, left=left)
    check_singular(info, "linalg.solve")
    return result


def _power(self, n: int):
    """A^n by repeated squaring; n = 0 the identity, n < 0 the inverse's power; a contiguous result."""
    if n == 0:                  # the identity, still a function of A (its gradient zero), as torch's copy
        eye = F.eye(self.shape[-1], dtype=self.dtype, device=self.device)
        return F.where(F.ones(tuple(self.shape), dtype=_dt.bool, device=self.device), eye, self)
    if n == -1:
        return F.linalg_inv(self)              # the inverse as linalg.inv lays it out
    base = F.linalg_inv(self) if n < 0 else self
    n = abs(n)
    result = None
    while True:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if not n:
            break
        base = F.matmul(base, base)
    if result is self:                          # A^1: a contiguous copy, never the input itself
        result = F.clone(F.contiguous(self)) if self.is_contiguous() else F.contiguous(self)
    return F.contiguous(result)


@decomposition("linalg_matrix_power")
def linalg_matrix_power(self, n):
    return _power(self, n)


@decomposition("matrix_power")
def matrix_power(self, n):
    return _power(self, n)
