"""block_diag, cartesian_prod and combinations in ember ops: block_diag joins each block's row band (zeros
left and right of it) along the rows; cartesian_prod flattens the ij-meshgrid of its vectors into columns;
combinations gathers the tensor's elements at the index tuples itertools lists (their count known from the
shape, so meta tensors follow too)."""
from __future__ import annotations

import itertools

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.type_promotion import result_type
from ember.frontend.factories import tensor

from . import decomposition


@decomposition("block_diag")
def block_diag(tensors):
    tensors = list(tensors)
    if not tensors:
        return F.zeros((1, 0), dtype=result_type(1.0))
    dtype = result_type(*tensors)
    blocks = [F.reshape(t, (1, 1) if t.dim() == 0 else (1, t.shape[0]) if t.dim() == 1 else tuple(t.shape))
              for t in tensors]
    blocks = [b if b.dtype is dtype else F._to_copy(b, dtype=dtype) for b in blocks]
    width, left, bands = sum(b.shape[1] for b in blocks), 0, []
    for b in blocks:
        rows, cols = b.shape
        pieces = [F.zeros((rows, left), dtype=dtype, device=b.device), b,
                  F.zeros((rows, width - left - cols), dtype=dtype, device=b.device)]
        bands.append(F.cat(pieces, 1))
        left += cols
    return F.cat(bands, 0)


@decomposition("cartesian_prod")
def cartesian_prod(tensors):
    tensors = list(tensors)
    if len(tensors) == 1:
        return F.clone(tensors[0])
    grid = tuple(t.shape[0] for t in tensors)
    columns = []
    for i, t in enumerate(tensors):             # the ij-meshgrid's i-th grid, flattened
        view = tuple(t.shape[0] if k == i else 1 for k in range(len(tensors)))
        columns.append(F.reshape(F.expand(F.reshape(t, view), grid), (-1,)))
    return F.stack(columns, 1)


@decomposition("combinations")
def combinations(self, r=2, with_replacement=False):
    if r == 0:
        return F.zeros((0,), dtype=self.dtype, device=self.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(self.shape[0]), r))
    index = tensor(rows, dtype=_dt.int64, device=self.device) if rows else \
        F.zeros((0, r), dtype=_dt.int64, device=self.device)
    return F.reshape(F.index_select(self, 0, F.reshape(index, (-1,))), (len(rows), r))
