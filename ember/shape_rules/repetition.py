"""Shape rules of the ops whose output is made of copies of the input: repeat and tile (the whole tensor
tiled), repeat_interleave (each element or slice repeated in place, by one count or a tensor of counts)."""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.layout import numel

from . import shape_rule
from .common import as_int, check_int_list, check_tensor, shape_of, type_name, wrap_dim
from .indexing import no_meta


@shape_rule("repeat")
def repeat(op, self, repeats):
    check_tensor(op, self, "input")
    repeats = check_int_list(op, repeats, "repeats")
    shape = shape_of(self)
    if len(repeats) < len(shape):
        raise ArgumentValueError(f"{op.name}(): Number of dimensions of repeat dims can not be smaller than number "
                                 f"of dimensions of tensor (repeats {list(repeats)}, tensor of {len(shape)} dims)")
    padded = (1,) * (len(repeats) - len(shape)) + shape
    out = tuple(r * s for r, s in zip(repeats, padded))
    if any(r < 0 for r in repeats):
        raise ArgumentValueError(f"{op.name}(): Trying to create tensor with negative dimension "
                                 f"{min(out)}: {list(out)}")
    return (out, self._dtype)


@shape_rule("tile")
def tile(op, self, dims):
    check_tensor(op, self, "input")
    dims = check_int_list(op, dims, "dims")
    ndim = len(shape_of(self))
    dims = (1,) * (ndim - len(dims)) + dims
    return repeat(op, self, dims)


# ------------------------------------------------------------------------------------------ repeat_interleave
_INTEGER_REPEATS = (_dt.int64, _dt.int32)


def _repeat_dim(op, self, dim) -> tuple[tuple, int]:
    """(the shape repeated along, its dim): the flattened tensor's dim 0 when `dim` is None."""
    shape = tuple(self._data.shape)
    if dim is None:
        return (numel(shape),), 0
    return shape, wrap_dim(op, dim, len(shape))


def _check_output_size(op, output_size, size: int) -> None:
    if output_size is not None and as_int(op, output_size, "output_size") != size:
        raise ArgumentValueError(f"{op.name}(): repeat_interleave: Invalid output_size, expected {size} but got "
                                 f"{output_size}")


@shape_rule("repeat_interleave_int")
def repeat_interleave_int(op, self, repeats, dim=None, output_size=None):
    check_tensor(op, self, "input")
    repeats = as_int(op, repeats, "repeats")
    if repeats < 0:
        raise ArgumentValueError(f"{op.name}(): Repeats must be non-negative")
    shape, dim = _repeat_dim(op, self, dim)
    _check_output_size(op, output_size, shape[dim] * repeats)
    return (shape[:dim] + (shape[dim] * repeats,) + shape[dim + 1:], self._dtype)


def _check_repeats_dtype(op, repeats) -> None:
    check_tensor(op, repeats, "repeats")
    if repeats._dtype not in _INTEGER_REPEATS:
        raise MissingKernelError(f'{op.name}(): "repeat_interleave_cpu" not implemented for '
                                 f"'{type_name(repeats._dtype)}'")


@shape_rule("repeat_interleave_tensor")
def repeat_interleave_tensor(op, self, repeats, dim=None, output_size=None):
    """The repeated size is the sum of `repeats` (None, a data-dependent size, unless `output_size` gives it)."""
    check_tensor(op, self, "input")
    _check_repeats_dtype(op, repeats)
    if len(repeats._data.shape) > 1:
        raise ShapeError(f"{op.name}(): repeats must be 0-dim or 1-dim tensor")
    shape, dim = _repeat_dim(op, self, dim)
    count = numel(repeats._data.shape)
    if count != 1 and count != shape[dim]:
        raise ShapeError(f"{op.name}(): repeats must have the same size as input along dim, but got "
                         f"repeats.size(0) = {count} and input.size({dim}) = {shape[dim]}")
    if output_size is None:
        no_meta(op, repeats)
    size = None if output_size is None else as_int(op, output_size, "output_size")
    return (shape[:dim] + (size,) + shape[dim + 1:], self._dtype)


@shape_rule("repeat_interleave_indices")
def repeat_interleave_indices(op, repeats, output_size=None):
    _check_repeats_dtype(op, repeats)
    if len(repeats._data.shape) != 1:
        raise ShapeError(f"{op.name}(): repeat_interleave only accept 1D vector as repeat")
    if output_size is None:
        no_meta(op, repeats)
    return ((None if output_size is None else as_int(op, output_size, "output_size"),), repeats._dtype)
