"""The Cholesky factorisation and triangular solves in ember ops.

linalg_cholesky_ex and linalg_solve_triangular are explicit kernels for the backends without LAPACK (the
cpu's kernels are numpy's and scipy's, array_kernels/factorizations.py): the factor is built column by
column (column j of L is column j of A less L's first j columns times row j of L, over the square root of
its pivot) and a triangular system is solved row by row, forward for a lower triangle and backward for an
upper one, each step batched over the leading dimensions. Both loop n times over a matrix of order n.
linalg_cholesky, cholesky and triangular_solve are composites of those two; cholesky_solve is two triangular
solves with a formula of its own (torch's, which differentiates the factor as a whole matrix).
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import LinAlgError
from ember.frontend.tensor import holds_data

from . import decomposition, explicit_kernel


def _t(x):
    """The transpose of each matrix of a batch."""
    return F.transpose(x, -2, -1)


def _batch(*shapes) -> tuple[int, ...]:
    """The broadcast of batch shapes (the shape rules have checked that they broadcast)."""
    n = max(len(s) for s in shapes)
    padded = [(1,) * (n - len(s)) + tuple(s) for s in shapes]
    return tuple(max(sizes) if 0 not in sizes else 0 for sizes in zip(*padded))


def check_info(info, name: str, error=LinAlgError.not_positive_definite) -> None:
    """torch's LinAlgError (`error`: not positive-definite, or LinAlgError.singular), naming `name`, for the
    first matrix whose info is not 0 (on a device that holds values: meta tensors have none to read)."""
    if not holds_data(info):
        return
    values = info.reshape(-1).tolist()
    for k, order in enumerate(values):
        if order:
            raise error(name, k if info.dim() else None, order)


@explicit_kernel("linalg_cholesky_ex")
def linalg_cholesky_ex(self, upper=False, check_errors=False):
    a = _t(self) if upper else self                        # the triangle read is a's lower one
    n = a.shape[-1]
    info = F.zeros(tuple(a.shape[:-2]), dtype=_dt.int32, device=a.device)
    rows = F.arange(n, device=a.device)
    columns = []
    done = None                                             # L's first j columns, (..., n, j)
    for j in range(n):
        s = F.select(a, -1, j)
        if done is not None:
            s = F.sub(s, F.squeeze(F.matmul(done, F.unsqueeze(F.select(done, -2, j), -1)), -1))
        pivot = F.select(s, -1, j)
        failed = F.logical_not(F.gt(pivot, 0))              # nan fails too, as LAPACK's check
        info = F.where(F.logical_and(F.eq(info, 0), failed), j + 1, info)
        root = F.sqrt(F.where(failed, 1.0, pivot))
        column = F.where(F.lt(rows, j), 0.0, F.div(s, F.unsqueeze(root, -1)))
        columns.append(column)
        done = F.stack(columns, -1)
    L = done if done is not None else F.zeros(tuple(a.shape), dtype=a.dtype, device=a.device)
    if check_errors:
        check_info(info, "linalg.cholesky_ex")
    return (F.contiguous(_t(L)) if upper else L), info


def _factor(self, upper: bool, name: str):
    L, info = F.linalg_cholesky_ex(self, upper=upper)
    check_info(info, name)
    return L


@decomposition("linalg_cholesky")
def linalg_cholesky(self, upper=False):
    return _factor(self, upper, "linalg.cholesky")


@decomposition("cholesky")
def cholesky(self, upper=False):
    if self.numel() == 0:                   # torch's older spelling returns an empty input as it is, any shape
        return F.clone(self)                # (differentiable, as torch's node)
    return _factor(self, upper, "cholesky")


@explicit_kernel("linalg_solve_triangular")
def linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    a = self
    b = B if B.dtype is a.dtype else F._to_copy(B, dtype=a.dtype)
    if not left:                                            # X A = B  <=>  A^T X^T = B^T
        a, b, upper = _t(a), _t(b), not upper
    n, k = a.shape[-1], b.shape[-1]
    shape = _batch(a.shape[:-2], b.shape[:-2]) + (n, k)
    b = F.expand(b, shape)                                  # every row of X in the broadcast batch
    x_rows: list = [None] * n
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        r = F.select(b, -2, i)
        lo, hi = (i + 1, n) if upper else (0, i)
        if hi > lo:
            solved = F.stack(x_rows[lo:hi], -2)                               # (..., hi - lo, k)
            coefficients = F.unsqueeze(F.slice(F.select(a, -2, i), -1, lo, hi), -2)
            r = F.sub(r, F.squeeze(F.matmul(coefficients, solved), -2))
        if not unitriangular:
            r = F.div(r, F.unsqueeze(F.select(F.select(a, -1, i), -1, i), -1))
        x_rows[i] = r
    if n == 0 or k == 0:
        x = F.zeros(shape, dtype=a.dtype, device=a.device)
    else:
        x = F.stack(x_rows, -2)
    return x if left else F.contiguous(_t(x))


@decomposition("triangular_solve")
def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    coefficient = _t(A) if transpose else A
    solution = F.linalg_solve_triangular(coefficient, self, upper=upper != transpose, unitriangular=unitriangular)
    batch = _batch(self.shape[:-2], A.shape[:-2])
    return solution, F.clone(F.expand(A, batch + tuple(A.shape[-2:])))


@explicit_kernel("cholesky_solve")
def cholesky_solve(self, input2, upper=False):
    lower = _t(input2) if upper else input2                 # A = L L^T
    y = F.linalg_solve_triangular(lower, self, upper=False)
    return F.linalg_solve_triangular(_t(lower), y, upper=True)


@decomposition("trace")
def trace(self):
    return F.sum(F.diagonal(self))


@decomposition("outer")
def outer(self, vec2):
    """self as a column times vec2 as a row: one broadcast product."""
    return F.mul(F.unsqueeze(self, 1), vec2)


def _beta_self_plus(self, product, beta, alpha):
    """beta * self + alpha * product, self ignored (NaNs too) when beta is 0: the add-products' arithmetic."""
    if alpha != 1:
        product = F.mul(product, alpha)
    if beta == 0:
        return F.add(product, F.zeros_like(self))
    return F.add(product, self if beta == 1 else F.mul(self, beta))


@decomposition("addmm")
def addmm(self, mat1, mat2, beta=1, alpha=1):
    return _beta_self_plus(self, F.mm(mat1, mat2), beta, alpha)


@decomposition("mv")
def mv(self, vec):
    return F.squeeze(F.mm(self, F.unsqueeze(vec, 1)), [1])


@decomposition("addmv")
def addmv(self, mat, vec, beta=1, alpha=1):
    return _beta_self_plus(self, mv(mat, vec), beta, alpha)


@decomposition("addr")
def addr(self, vec1, vec2, beta=1, alpha=1):
    return _beta_self_plus(self, F.outer(vec1, vec2), beta, alpha)


@decomposition("baddbmm")
def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    return _beta_self_plus(self, F.bmm(batch1, batch2), beta, alpha)


@decomposition("addbmm")
def addbmm(self, batch1, batch2, beta=1, alpha=1):
    return _beta_self_plus(self, F.sum(F.bmm(batch1, batch2), [0]), beta, alpha)


@decomposition("inner")
def inner(self, other):
    """One product of the operands' rows (their last dims), reshaped to self.shape[:-1] + other.shape[:-1]."""
    if self.dim() == 0 or other.dim() == 0:
        return F.mul(self, other)
    k = self.shape[-1]
    rows = F.mm(F.reshape(self, (-1, k)), F.t(F.reshape(other, (-1, k))))
    return F.reshape(rows, tuple(self.shape[:-1]) + tuple(other.shape[:-1]))


@decomposition("kron")
def kron(self, other):
    """Each operand viewed with its dims interleaved with ones, multiplied (broadcast), the pairs merged."""
    n = max(self.dim(), other.dim())
    a = (1,) * (n - self.dim()) + tuple(self.shape)
    b = (1,) * (n - other.dim()) + tuple(other.shape)
    spread_a = F.reshape(self, tuple(s for size in a for s in (size, 1)))
    spread_b = F.reshape(other, tuple(s for size in b for s in (1, size)))
    return F.reshape(F.mul(spread_a, spread_b), tuple(x * y for x, y in zip(a, b)))


def _triangle(row, col, offset, dtype, device, lower: bool):
    """The coordinates where col - row is on the triangle's side of `offset`, row-major (nonzero's order)."""
    rows = F.unsqueeze(F.arange(0, row, 1, device=device), 1)
    cols = F.unsqueeze(F.arange(0, col, 1, device=device), 0)
    gap = F.sub(cols, rows)
    inside = F.le(gap, offset) if lower else F.ge(gap, offset)
    coordinates = F.contiguous(F.t(F.nonzero(inside)))
    return coordinates if dtype in (None, _dt.int64) else F._to_copy(coordinates, dtype=dtype)


@decomposition("tril_indices")
def tril_indices(row, col, offset=0, dtype=None, device=None, requires_grad=False):
    return _triangle(row, col, offset, dtype, device, True)


@decomposition("triu_indices")
def triu_indices(row, col, offset=0, dtype=None, device=None, requires_grad=False):
    return _triangle(row, col, offset, dtype, device, False)
