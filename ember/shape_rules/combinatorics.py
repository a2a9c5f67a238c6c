"""Shape rules of block_diag, cartesian_prod and combinations, with torch's checks and messages."""
from __future__ import annotations

import math

from ember.core.errors import ArgumentValueError, DTypeError, ShapeError
from ember.core.type_promotion import result_type

from . import shape_rule
from .common import as_int, check_tensor, shape_of


def block_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """A block's (rows, columns): a 0-d tensor is 1x1, a vector one row."""
    return (1, 1) if not shape else (1, shape[0]) if len(shape) == 1 else shape


@shape_rule("block_diag")
def block_diag(op, tensors):
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        check_tensor(op, t, f"tensors[{i}]")
        if len(shape_of(t)) > 2:
            raise ShapeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                             f"{len(shape_of(t))} dimensions")
    blocks = [block_shape(shape_of(t)) for t in tensors]
    rows, cols = sum(b[0] for b in blocks), sum(b[1] for b in blocks)
    if not tensors:
        return ((1, 0), result_type(1.0))           # torch's result for no blocks
    return ((rows, cols), result_type(*tensors))


def _vectors(op, tensors):
    tensors = list(tensors)
    if not tensors:
        raise ArgumentValueError("meshgrid expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        check_tensor(op, t, f"tensors[{i}]")
        if len(shape_of(t)) != 1:
            raise ShapeError(f"Expect a 1D vector, but got shape {list(shape_of(t))}")
    if len({t._dtype for t in tensors}) > 1:
        raise DTypeError("meshgrid expects all tensors to have the same dtype")
    return tensors


@shape_rule("cartesian_prod")
def cartesian_prod(op, tensors):
    tensors = _vectors(op, tensors)
    if len(tensors) == 1:
        return (shape_of(tensors[0]), tensors[0]._dtype)
    return ((math.prod(shape_of(t)[0] for t in tensors), len(tensors)), tensors[0]._dtype)


def combination_count(n: int, r: int, with_replacement: bool) -> int:
    return math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)


@shape_rule("combinations")
def combinations(op, self, r=2, with_replacement=False):
    check_tensor(op, self, "input")
    if len(shape_of(self)) != 1:
        raise ShapeError(f"Expect a 1D vector, but got shape {list(shape_of(self))}")
    r = as_int(op, r, "r")
    if r < 0:
        raise ArgumentValueError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return ((0,), self._dtype)
    return ((combination_count(shape_of(self)[0], r, with_replacement), r), self._dtype)
