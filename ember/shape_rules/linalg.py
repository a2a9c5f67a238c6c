"""Shape rules of the Cholesky factorisation and the triangular solves (linalg_cholesky_ex, linalg_cholesky,
cholesky, cholesky_solve, linalg_solve_triangular, triangular_solve).

Every input is a batch of matrices (..., m, n); batch dimensions broadcast as torch's. Results are laid out
as torch's LAPACK-backed kernels leave them: each matrix column-major (strides (1, rows) in its last two
dimensions), the batch contiguous around them. Whether a matrix is positive-definite depends on its values,
so that check is the kernels' (they set `info`, or raise ember.errors.LinAlgError when asked to).
"""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.layout import numel
from ember.core.errors import DTypeError, MissingKernelError, ShapeError
from ember.core.type_promotion import result_type

from . import shape_rule
from .common import broadcast_shapes, check_kernel_dtype, check_tensor, type_name

_SOLVABLE = (_dt.float32, _dt.float64)        # the dtypes LAPACK factors and solves in (ember's dtypes are real)


def _public(op) -> str:
    """The op as torch's messages spell it: linalg_cholesky -> linalg.cholesky."""
    return op.name.replace("linalg_", "linalg.", 1)


def matrix_strides(shape) -> tuple[int, ...]:
    """Strides of a batch of column-major matrices of `shape` (..., rows, cols)."""
    rows = max(shape[-2], 1)
    strides, step = [1, rows], rows * max(shape[-1], 1)
    for size in reversed(shape[:-2]):
        strides.insert(0, step)
        step *= max(size, 1)
    return tuple(strides)


def _unsupported(op, dtype, kernel: str) -> None:
    """torch's NotImplementedError for a dtype its LAPACK kernel lacks."""
    if dtype not in _SOLVABLE:
        raise MissingKernelError(f'{_public(op)}: "{kernel}" not implemented for \'{type_name(dtype)}\'')


def _square(op, shape, what: str = "A") -> None:
    if shape[-1] != shape[-2]:
        raise ShapeError(f"{_public(op)}: {what} must be batches of square matrices, but they are "
                         f"{shape[-2]} by {shape[-1]} matrices")


def _factor_input(op, self) -> tuple[int, ...]:
    """The checks of the Cholesky factorisations: a floating batch of square matrices."""
    check_tensor(op, self, "input")
    shape = tuple(self._data.shape)
    if len(shape) < 2:
        raise ShapeError(f"{_public(op)}: The input tensor A must have at least 2 dimensions.")
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{_public(op)}: Expected a floating point or complex tensor as input. "
                         f"Got {type_name(self._dtype)}")
    _square(op, shape)
    _unsupported(op, self._dtype, "cholesky_cpu")
    return shape


@shape_rule("linalg_cholesky_ex")
def linalg_cholesky_ex(op, self, upper=False, check_errors=False):
    """(L, info): the factor in the input's shape and dtype, and an int32 info per matrix of the batch."""
    shape = _factor_input(op, self)
    return ((shape, self._dtype, matrix_strides(shape)), (shape[:-2], _dt.int32))


@shape_rule("cholesky")
def cholesky(op, self, upper=False):
    """linalg_cholesky and cholesky: the factor alone."""
    shape = _factor_input(op, self)
    return (shape, self._dtype, matrix_strides(shape))


@shape_rule("cholesky_legacy")
def cholesky_legacy(op, self, upper=False):
    """torch.cholesky: an empty input of any shape and dtype comes back as it is; otherwise linalg's checks."""
    check_tensor(op, self, "input")
    if numel(tuple(self._data.shape)) == 0:
        return (tuple(self._data.shape), self._dtype)
    return cholesky(op, self, upper)


@shape_rule("linalg_solve_triangular")
def linalg_solve_triangular(op, self, B, upper, left=True, unitriangular=False):
    """X with A X = B (left) or X A = B, A = self triangular: in A's dtype (B is converted), batches broadcast."""
    check_tensor(op, self, "input")
    check_tensor(op, B, "B")
    ashape, bshape = tuple(self._data.shape), tuple(B._data.shape)
    for name, shape in (("A", ashape), ("B", bshape)):
        if len(shape) < 2:
            raise ShapeError(f"{_public(op)}: The input tensor {name} must have at least 2 dimensions.")
    _square(op, ashape)
    n = ashape[-1]
    if (bshape[-2] if left else bshape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise ShapeError(f"{_public(op)}: Incompatible shapes of A and B for the equation {equation} "
                         f"({n}x{n} and {bshape[-2]}x{bshape[-1]})")
    _unsupported(op, self._dtype, "triangular_solve_cpu")
    shape = broadcast_shapes(op, [bshape[:-2], ashape[:-2]]) + bshape[-2:]
    return (shape, self._dtype, matrix_strides(shape))


def _legacy_solve(op, self, A, kernel: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """triangular_solve's and cholesky_solve's checks (right-hand sides `self`, coefficient `A` of one dtype);
    the broadcast shapes of the solution and of the coefficient."""
    check_tensor(op, self, "input")
    check_tensor(op, A, "A")
    bshape, ashape = tuple(self._data.shape), tuple(A._data.shape)
    if len(bshape) < 2:
        raise ShapeError(f"{op.name}: b should have at least 2 dimensions, but has {len(bshape)} dimensions instead")
    if len(ashape) < 2:
        raise ShapeError(f"{op.name}: u should have at least 2 dimensions, but has {len(ashape)} dimensions instead")
    if self._dtype is not A._dtype:
        raise DTypeError(f"{op.name}: Expected b and A to have the same dtype, but found b of type "
                         f"{type_name(self._dtype)} and A of type {type_name(A._dtype)} instead.")
    _square(op, ashape)
    if ashape[-1] != bshape[-2]:
        raise ShapeError(f"Incompatible matrix sizes for {op.name}: each A matrix is {ashape[-1]} by "
                         f"{ashape[-1]} but each b matrix is {bshape[-2]} by {bshape[-1]}")
    _unsupported(op, self._dtype, kernel)
    batch = broadcast_shapes(op, [bshape[:-2], ashape[:-2]])
    return batch + bshape[-2:], batch + ashape[-2:]


@shape_rule("triangular_solve")
def triangular_solve(op, self, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient): X with op(A) X = self, and A broadcast to the batch."""
    solution, coefficient = _legacy_solve(op, self, A, "triangular_solve_cpu")
    return ((solution, self._dtype, matrix_strides(solution)), (coefficient, A._dtype, matrix_strides(coefficient)))


@shape_rule("cholesky_solve")
def cholesky_solve(op, self, input2, upper=False):
    """X with (L L^T) X = self given the factor L = input2 (U^T U with upper)."""
    solution, _ = _legacy_solve(op, self, input2, "cholesky_solve_cpu")
    return (solution, self._dtype, matrix_strides(solution))


@shape_rule("trace", reads=("dtypes",))
def trace(op, self):
    """A matrix's diagonal sum: a 0-d result, integers as int64 (sum's promotion)."""
    check_tensor(op, self, "input")
    if len(self._data.shape) != 2:
        raise ShapeError(f"{op.name}(): trace: expected a matrix, but got tensor with dim {len(self._data.shape)}")
    check_kernel_dtype(op, self._dtype)
    return ((), self._dtype if self._dtype.is_floating_point else _dt.int64)


@shape_rule("outer")
def outer(op, self, vec2):
    """Two vectors: (len(self), len(vec2)), their dtypes promoted as a product promotes them."""
    for name, t in (("self", self), ("vec2", vec2)):
        check_tensor(op, t, name)
        if len(t._data.shape) != 1:
            raise ShapeError(f"{op.name}(): outer: Expected 1-D argument {name}, but got {len(t._data.shape)}-D")
    return ((self._data.shape[0], vec2._data.shape[0]), result_type(self, vec2))
