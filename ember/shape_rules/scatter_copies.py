"""Shape rules of diagonal_scatter, narrow_copy, renorm and isreal, with torch's checks and messages."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, DTypeError, ShapeError

from . import shape_rule
from .common import NUMBER_TYPES, as_int, check_tensor, dense_like, strides_of, wrap_dim
from .shape_ops import diagonal_window


@shape_rule("diagonal_scatter")
def diagonal_scatter(op, self, src, offset=0, dim1=0, dim2=1):
    """self's shape, dtype and layout; src has the diagonal's shape (its dtype is converted)."""
    check_tensor(op, self, "input")
    check_tensor(op, src, "src")
    size, _, _ = diagonal_window(op, tuple(self._data.shape), strides_of(self), 0, as_int(op, offset, "offset"),
                                 dim1, dim2)
    if tuple(src._data.shape) != tuple(size):
        raise ShapeError(f"expected src to have a size equal to the slice of self. src size = "
                         f"{list(src._data.shape)}, slice size = {list(size)}")
    return dense_like(self, self._dtype)


@shape_rule("narrow_copy")
def narrow_copy(op, self, dim, start, length):
    """narrow's window, contiguous."""
    check_tensor(op, self, "input")
    shape = list(self._data.shape)
    if not shape:
        raise ShapeError(f"{op.name}(): narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(op, dim, len(shape))
    start, length = as_int(op, start, "start"), as_int(op, length, "length")
    size = shape[d]
    if start < 0:
        start += size
    if start < 0 or start > size:
        raise ShapeError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if length < 0 or start + length > size:
        raise ShapeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape[d] = length
    return (tuple(shape), self._dtype)


@shape_rule("renorm")
def renorm(op, self, p, dim, maxnorm):
    check_tensor(op, self, "input")
    for name, v in (("p", p), ("maxnorm", maxnorm)):
        if v.__class__ is bool or not isinstance(v, NUMBER_TYPES):
            raise ArgumentValueError(f"{op.name}(): argument '{name}' must be Number, not {type(v).__name__}")
    if p <= 0:
        raise ArgumentValueError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise ArgumentValueError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    ndim = len(self._data.shape)
    if ndim < 2:
        raise ShapeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    wrap_dim(op, dim, ndim)
    if not self._dtype.is_floating_point:
        raise DTypeError(f"renorm: expected a floating point input, got {self._dtype.name}")
    return (tuple(self._data.shape), self._dtype)                  # contiguous, as torch's


@shape_rule("isreal")
def isreal(op, self):
    check_tensor(op, self, "input")
    return dense_like(self, _dt.bool)
