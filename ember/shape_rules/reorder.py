"""Shape rules of the ops that reorder a tensor's elements: flip, fliplr, flipud, rot90 and roll."""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DimensionError, ShapeError
from ember.core.layout import contiguous_strides, numel

from . import shape_rule
from .common import check_int_list, check_tensor, dense_like, shape_of, with_layout, wrap_dim


@shape_rule("flip")
def flip(op, self, dims):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    dims = check_int_list(op, dims, "dims")
    wrapped = tuple(wrap_dim(op, d, len(shape), "dims") for d in dims)
    if len(set(wrapped)) != len(wrapped):
        d = next(d for d in wrapped if wrapped.count(d) > 1)
        raise ArgumentValueError(f"{op.name}(): dim {d} appears multiple times in the list of dims")
    return dense_like(self, self._dtype)


@shape_rule("roll")
def roll(op, self, shifts, dims=()):
    check_tensor(op, self, "input")
    shifts = check_int_list(op, shifts, "shifts")
    dims = check_int_list(op, dims, "dims")
    if not shifts:
        raise ArgumentValueError(f"{op.name}(): `shifts` required")
    if not dims and len(shifts) != 1:
        raise ArgumentValueError(f"{op.name}(): shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    if dims and len(shifts) != len(dims):
        raise ArgumentValueError(f"{op.name}(): shifts and dimensions must align. shifts: {len(shifts)}, "
                                 f"dims:{len(dims)}")
    if numel(shape_of(self)) == 0:         # torch returns an empty input's copy before it reads the dims
        return (shape_of(self), self._dtype)
    if dims and not shape_of(self):
        raise DimensionError(f"{op.name}(): Dimension specified as {dims[0]} but tensor has no dimensions")
    for d in dims:
        wrap_dim(op, d, len(shape_of(self)), "dims")
    return (shape_of(self), self._dtype)


@shape_rule("fliplr")
def fliplr(op, self):
    check_tensor(op, self, "input")
    if len(shape_of(self)) < 2:
        raise ShapeError(f"{op.name}(): Input must be >= 2-d.")
    return flip(op, self, [1])


@shape_rule("flipud")
def flipud(op, self):
    check_tensor(op, self, "input")
    if len(shape_of(self)) < 1:
        raise ShapeError(f"{op.name}(): Input must be >= 1-d.")
    return flip(op, self, [0])


def rot90_dims(op, self, k, dims) -> tuple[int, int, int]:
    """(k mod 4, the two wrapped rotation dims), with torch's checks."""
    dims = check_int_list(op, dims, "dims")
    ndim = len(shape_of(self))
    if len(dims) != 2:
        raise ArgumentValueError(f"{op.name}(): expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise ArgumentValueError(f"{op.name}(): expected total dims >= 2, but got total dims = {ndim}")
    d0, d1 = (wrap_dim(op, d, ndim, "dims") for d in dims)
    if d0 == d1:
        raise ArgumentValueError(f"{op.name}(): expected rotation dims to be different, but got dim0 = {d0} and "
                                 f"dim1 = {d1}")
    return k % 4, d0, d1


@shape_rule("rot90")
def rot90(op, self, k=1, dims=(0, 1)):
    """No turn: a contiguous copy; a half turn: a flip's copy (laid out as its input); a quarter turn either
    way: a flip's copy seen transposed (torch's layouts)."""
    check_tensor(op, self, "input")
    turns, d0, d1 = rot90_dims(op, self, k, dims)
    if turns == 0:
        return (shape_of(self), self._dtype)
    dense = dense_like(self, self._dtype)
    if turns == 2:
        return dense
    shape = list(dense[0])
    strides = list(dense[2] if len(dense) > 2 else contiguous_strides(dense[0]))
    shape[d0], shape[d1] = shape[d1], shape[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return with_layout(tuple(shape), self._dtype, tuple(strides))
