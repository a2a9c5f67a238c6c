"""The backward formulas of torch.linalg's factorisations and solves (registry data: ops_registry.yaml names them
in its `autograd:` entries; formulas.py imports them, so the generated nodes reach them as its helpers).

Each is written in differentiable ember ops, so a backward with create_graph differentiates it again and
second derivatives match torch's. Gradients of batched inputs come out with the broadcast batch shape; the
engine sums them to each input's shape.
"""
from __future__ import annotations

from ember._generated import functions as F


def _matrix_t(x):
    """The transpose of each matrix of a batch."""
    return F.transpose(x, -2, -1)


def cholesky_backward(grad, upper, L):
    """The gradient of A from that of its Cholesky factor L (A = L L^T; with `upper`, U = L^T is given):
    Phi = tril(L^T gL) with its diagonal halved, symmetrised, then gA = L^-T Phi_sym L^-1 by two
    triangular solves. Only the lower triangle of A is read, but the gradient is symmetric, as torch's."""
    if upper:
        L, grad = _matrix_t(L), _matrix_t(grad)
    phi = F.tril(F.matmul(_matrix_t(L), grad))
    sym = F.mul(F.add(phi, _matrix_t(F.tril(phi, -1))), 0.5)
    left = F.linalg_solve_triangular(_matrix_t(L), sym, upper=True)            # L^-T Phi_sym
    return F.linalg_solve_triangular(L, left, upper=False, left=False)        # ... L^-1


def solve_triangular_backward(grad, A, X, upper, left, unitriangular, grad_input_mask):
    """The gradients of A and B from that of X (A X = B, or X A = B when not `left`): gB solves the transposed
    system, gA = -gB X^T (or -X^T gB) kept to A's triangle (its diagonal dropped when unitriangular)."""
    grad_b = F.linalg_solve_triangular(_matrix_t(A), grad, upper=not upper, left=left, unitriangular=unitriangular)
    grad_a = None
    if grad_input_mask[0]:
        grad_a = F.neg(F.matmul(grad_b, _matrix_t(X)) if left else F.matmul(_matrix_t(X), grad_b))
        offset = (1 if upper else -1) if unitriangular else 0
        grad_a = F.triu(grad_a, offset) if upper else F.tril(grad_a, offset)
    return grad_a, grad_b if grad_input_mask[1] else None


def cholesky_solve_backward(grad, factor, X, upper, grad_input_mask):
    """The gradients of B and of the factor L of X = (L L^T)^-1 B (U^T U with `upper`): gB = A^-1 gX, and with
    C = gB X^T + X gB^T, gL = -C L (gU = -U C), the factor differentiated as a whole matrix, as torch's."""
    grad_b = F.cholesky_solve(grad, factor, upper)
    grad_factor = None
    if grad_input_mask[1]:
        common = F.matmul(grad_b, _matrix_t(X))
        common = F.add(common, _matrix_t(common))
        grad_factor = F.neg(F.matmul(factor, common) if upper else F.matmul(common, factor))
    return grad_b if grad_input_mask[0] else None, grad_factor


def inv_backward(grad, inverse):
    """gA = -X^T gX X^T for X = A^-1."""
    xt = _matrix_t(inverse)
    return F.neg(F.matmul(F.matmul(xt, grad), xt))


def _per_matrix(values):
    """A value per matrix of a batch, shaped to scale each matrix (..., 1, 1)."""
    return F.unsqueeze(F.unsqueeze(values, -1), -1)


def det_backward(grad, A, det):
    """gA = g det(A) A^-T. A singular matrix has no inverse, and its gradient comes out NaN or inf (torch's
    goes through an SVD there)."""
    return F.mul(_matrix_t(F.linalg_inv_ex(A)[0]), _per_matrix(F.mul(grad, det)))


def slogdet_backward(grad, A):
    """The log absolute determinant's gradient g A^-T (the sign's is zero: None when only it arrived)."""
    if grad is None:
        return None
    return F.mul(_matrix_t(F.linalg_inv_ex(A)[0]), _per_matrix(grad))


def solve_backward(grad, A, X, left, grad_input_mask):
    """The gradients of A and B from that of X (A X = B, or X A = B when not `left`): gB solves the transposed
    system, gA = -gB X^T (-X^T gB when not `left`; the outer product for vector right-hand sides)."""
    grad_b = F.linalg_solve(_matrix_t(A), grad, left=left)
    grad_a = None
    if grad_input_mask[0]:
        a, x = tuple(A.shape), tuple(X.shape)
        if left and (len(x) == 1 or (len(x) == len(a) - 1 and x == a[:-1])):     # vectors (is_vector_rhs)
            grad_a = F.neg(F.mul(F.unsqueeze(grad_b, -1), F.unsqueeze(X, -2)))
        elif left:
            grad_a = F.neg(F.matmul(grad_b, _matrix_t(X)))
        else:
            grad_a = F.neg(F.matmul(_matrix_t(X), grad_b))
    return grad_a, grad_b if grad_input_mask[1] else None
