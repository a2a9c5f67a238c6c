"""Shape rules of the LU-based ops of torch.linalg: linalg_inv_ex (and linalg_inv, inverse), linalg_det (det),
linalg_slogdet (slogdet, logdet), linalg_solve_ex (linalg_solve) and linalg_matrix_power (matrix_power).

Inputs are batches of square matrices (..., n, n) of float32 or float64 (torch's LAPACK dtypes; ember's
dtypes are real). Results are laid out as torch's: an inverse, and a solution of A X = B, column-major per
matrix; a solution of X A = B row-major. Whether a matrix is singular depends on its values, so that check
is the kernels' (they set `info`, or raise ember.errors.LinAlgError when asked to)."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import DTypeError, ShapeError
from ember.core.layout import contiguous_strides

from . import shape_rule
from .common import as_int, broadcast_shapes, check_tensor, type_name
from .linalg import _unsupported, matrix_strides

_LOW_PRECISION = (_dt.float16, _dt.bfloat16)


def _square_input(op, A, name: str, low_precision_kernel: str | None = None) -> tuple[int, ...]:
    """A floating batch of square matrices: torch's checks in its order, its messages naming `name`. Half and
    bfloat16 are refused as torch refuses them: a RuntimeError naming the op, or (`low_precision_kernel`) its
    LU kernel's NotImplementedError."""
    check_tensor(op, A, "A")
    shape = tuple(A._data.shape)
    if len(shape) < 2:
        raise ShapeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise ShapeError(f"{name}: A must be batches of square matrices, but they are {shape[-2]} by "
                         f"{shape[-1]} matrices")
    if not A._dtype.is_floating_point:
        raise DTypeError(f"{name}: Expected a floating point or complex tensor as input. Got {type_name(A._dtype)}")
    if A._dtype in _LOW_PRECISION:
        if low_precision_kernel is not None:
            _unsupported(op, A._dtype, low_precision_kernel)
        raise DTypeError(f"{name}: Low precision dtypes not supported. Got {type_name(A._dtype)}")
    return shape


@shape_rule("linalg_inv_ex")
def linalg_inv_ex(op, A, check_errors=False):
    """(inverse, info): the inverse column-major per matrix, an int32 info per matrix of the batch."""
    shape = _square_input(op, A, "linalg.inv")
    return ((shape, A._dtype, matrix_strides(shape)), (shape[:-2], _dt.int32))


@shape_rule("linalg_inv")
def linalg_inv(op, A):
    return linalg_inv_ex(op, A)[0]


@shape_rule("linalg_det")
def linalg_det(op, A):
    """One determinant per matrix of the batch."""
    shape = _square_input(op, A, "linalg.det", "lu_cpu")
    return (shape[:-2], A._dtype)


@shape_rule("linalg_slogdet")
def linalg_slogdet(op, A):
    """(sign, logabsdet), one of each per matrix of the batch."""
    shape = _square_input(op, A, "linalg.slogdet")
    return ((shape[:-2], A._dtype), (shape[:-2], A._dtype))


@shape_rule("logdet")
def logdet(op, A):
    shape = _square_input(op, A, "logdet")
    return (shape[:-2], A._dtype)


def is_vector_rhs(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """Whether linalg.solve takes B as (a batch of) vectors: 1-D, or A's shape less its last dim."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])


@shape_rule("linalg_solve_ex")
def linalg_solve_ex(op, A, B, left=True, check_errors=False):
    """(result, info): X with A X = B (X A = B when not `left`), batches broadcast, B a vector (or a batch of
    them) when `is_vector_rhs`; the result column-major per matrix for A X = B, row-major for X A = B."""
    check_tensor(op, A, "A")
    check_tensor(op, B, "B")
    if not A._dtype.is_floating_point:
        raise DTypeError(f"linalg.solve: Expected a floating point or complex tensor as input. "
                         f"Got {type_name(A._dtype)}")
    if A._dtype is not B._dtype:
        raise DTypeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                         f"{type_name(A._dtype)} and B of type {type_name(B._dtype)} instead")
    a, b = tuple(A._data.shape), tuple(B._data.shape)
    vector = is_vector_rhs(a, b)
    bm = b + (1,) if vector else b
    if len(a) < 2:
        raise ShapeError("linalg.solve: The input tensor A must have at least 2 dimensions.")
    if a[-1] != a[-2]:
        raise ShapeError(f"linalg.solve: A must be batches of square matrices, but they are {a[-2]} by {a[-1]} "
                         "matrices")
    if len(bm) < 2:
        raise ShapeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    if (a[-2] != bm[-2]) if left else (a[-1] != bm[-1]):
        raise ShapeError(f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'}"
                         f" ({a[-2]}x{a[-1]} and {bm[-2]}x{bm[-1]})")
    batch = broadcast_shapes(op, [bm[:-2], a[:-2]])
    if not left and vector:
        raise ShapeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                         "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    _unsupported(op, A._dtype, "lu_cpu")
    shape = batch + bm[-2:-1] if vector else batch + bm[-2:]
    strides = (matrix_strides(shape) if len(shape) >= 2 else (1,) * len(shape)) if left else contiguous_strides(shape)
    return ((shape, A._dtype, strides), (a[:-2], _dt.int32))


@shape_rule("linalg_solve")
def linalg_solve(op, A, B, left=True):
    return linalg_solve_ex(op, A, B, left)[0]


@shape_rule("linalg_matrix_power")
def linalg_matrix_power(op, self, n):
    """A^n of each square matrix (contiguous); a negative n inverts first (linalg.inv's checks then)."""
    check_tensor(op, self, "input")
    n = as_int(op, n, "n")
    shape = tuple(self._data.shape)
    if len(shape) < 2:
        raise ShapeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if shape[-1] != shape[-2]:
        raise ShapeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {shape[-2]} by "
                         f"{shape[-1]} matrices")
    if n < 0:
        _square_input(op, self, "linalg.inv")
    if n == -1:                                 # linalg.inv's result as it is: column-major
        return (shape, self._dtype, matrix_strides(shape))
    return (shape, self._dtype)


