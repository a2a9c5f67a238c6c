"""embedding_bag: reductions of embedding rows over bags, from index_select, scatter_add and gather.

Bags are the contiguous runs of `indices` that `offsets` starts. `offset2bag` (the bag of every
index) is the cumulative sum of a scatter_add of ones at the offsets; sum and mean are then
one scatter_add of the looked-up rows into the bags (O(indices * dim) memory). max lays the
bags out padded to the longest one, (bags, longest, dim), takes the first maximum per column
and reads the result with a gather of `weight`, so the gradient reaches exactly the selected
rows as in PyTorch. Composite: differentiated through these ops.

The auxiliary outputs follow PyTorch's meta device (shapes the same on every device):
offset2bag (len(indices),), bag_size (len(offsets),) counting the non-padding indices of each
bag, max_indices (bags, dim) for max and (0,) otherwise. PyTorch's cpu kernel leaves some of
them empty or zero depending on the mode (an implementation detail); only the first output
is a documented result.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.core.errors import ArgumentValueError
from ember.core import dtype as _dt

from ember.frontend.tensor import holds_data

from . import decomposition
from .indexing import check_bounds

SUM, MEAN, MAX = 0, 1, 2


def _long(t):
    return t if t.dtype is _dt.int64 else F._to_copy(t, dtype=_dt.int64)


def _check_offsets(off, n_indices: int, include_last_offset: bool) -> None:
    """offsets[0] == 0, non-decreasing, offsets[-1] <= len(indices) (data: not on meta)."""
    nb = off.shape[0]
    if nb == 0 or not holds_data(off):
        return
    first = int(F.select(off, 0, 0).item())
    if first != 0:
        raise ArgumentValueError(f"_embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the "
                                 f"mini-batch has to start from position 0. However, got {first} (argument 'offsets')")
    last = int(F.select(off, 0, nb - 1).item())
    if last > n_indices:
        raise ArgumentValueError(f"_embedding_bag: offsets[-1] can not be greater than input's length "
                                 f"{n_indices} but got offsets[-1] of {last} (argument 'offsets')")
    if nb > 1 and bool(F.any(F.lt(F.slice(off, 0, 1, nb), F.slice(off, 0, 0, nb - 1))).item()):
        raise ArgumentValueError("_embedding_bag: offsets has to be non-decreasing (argument 'offsets')")


def _scaled_by_freq(rows, idx, num_weights: int):
    """`rows` unchanged in value, with the gradient of row i divided by how often idx[i]
    occurs in `idx` (scale_grad_by_freq, as embedding's)."""
    counts = F.scatter_add(F.zeros((num_weights,), dtype=_dt.int64, device=idx.device), 0, idx, F.ones_like(idx))
    scale = F.reciprocal(F._to_copy(F.gather(counts, 0, idx), dtype=rows.dtype))
    fixed = rows.detach()
    return F.add(fixed, F.mul(F.sub(rows, fixed), F.unsqueeze(scale, 1)))


@decomposition("_embedding_bag")
def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    num_weights, dim = weight.shape
    n = indices.shape[0]
    nb = offsets.shape[0]
    bags = nb - 1 if include_last_offset else nb
    dev, dtype = weight.device, weight.dtype
    idx, off = _long(indices), _long(offsets)
    check_bounds(idx, num_weights, lambda v: ArgumentValueError(
        f"_embedding_bag: index {v} of input is not in the valid range [0, {num_weights}) (argument 'indices')"),
        negative=False)
    _check_offsets(off, n, include_last_offset)
    if nb == 0:         # no bags: an empty result, as torch's, still connected to the weight for autograd
        out = F.add(F.zeros((0, dim), dtype=dtype, device=dev), F.mul(F.sum(weight), 0))
        max_indices = F.zeros((0, dim) if mode == MAX else (0,), dtype=_dt.int64, device=dev)
        return out, F.zeros((n,), dtype=_dt.int64, device=dev), F.zeros((0,), dtype=_dt.int64, device=dev), max_indices

    # offset2bag: the bag of every index (indices past the last offset of include_last_offset go to slot nb - 1)
    bump = F.scatter_add(F.zeros((n + 1,), dtype=_dt.int64, device=dev), 0, off, F.ones_like(off))
    offset2bag = F.sub(F.cumsum(F.slice(bump, 0, 0, n), 0), 1)
    keep = F.ne(idx, padding_idx) if padding_idx >= 0 else F.ones((n,), dtype=_dt.bool, device=dev)
    bag_size = F.scatter_add(F.zeros((nb,), dtype=_dt.int64, device=dev), 0, offset2bag, _long(keep))

    if mode == MAX:
        out, max_indices = _bag_max(weight, idx, off, keep, n, bags)
        return out, offset2bag, bag_size, max_indices

    rows = F.index_select(weight, 0, idx)                                   # (n, dim)
    if scale_grad_by_freq:
        rows = _scaled_by_freq(rows, idx, num_weights)
    if per_sample_weights is not None:
        rows = F.mul(rows, F.unsqueeze(per_sample_weights, 1))
    if padding_idx >= 0:
        rows = F.where(F.unsqueeze(keep, 1), rows, F.zeros((), dtype=dtype, device=dev))
    target = F.expand(F.unsqueeze(offset2bag, 1), (n, dim))
    out = F.scatter_add(F.zeros((nb, dim), dtype=dtype, device=dev), 0, target, rows)
    if mode == MEAN:
        count = F._to_copy(F.clamp(bag_size, 1), dtype=dtype)
        out = F.div(out, F.unsqueeze(count, 1))
    out = F.slice(out, 0, 0, bags)
    return out, offset2bag, bag_size, F.zeros((0,), dtype=_dt.int64, device=dev)


def _bag_max(weight, idx, off, keep, n: int, bags: int):
    """(out, max_indices) of mode max: per bag and column the first maximum over the
    non-padding indices; empty bags give 0 and index 0 (as PyTorch's cpu kernel)."""
    dim, dev, dtype = weight.shape[1], weight.device, weight.dtype
    starts = F.slice(off, 0, 0, bags)
    ends = F.cat([F.slice(off, 0, 1, bags + 1), F.full((1,), n, dtype=_dt.int64, device=dev)])
    ends = F.slice(ends, 0, 0, bags)
    lengths = F.sub(ends, starts)
    if not (bags and n):
        max_indices = F.zeros((bags, dim), dtype=_dt.int64, device=dev)
        zero = F.zeros((), dtype=dtype, device=dev)
        if weight.shape[0] == 0:
            return F.add(F.zeros((bags, dim), dtype=dtype, device=dev), F.sum(weight) * 0), max_indices
        # every bag empty: zeros that still depend on weight, as PyTorch's output requires grad
        return F.where(F.zeros((bags, dim), dtype=_dt.bool, device=dev), F.gather(weight, 0, max_indices), zero), \
            max_indices
    # the longest bag (data); on meta (autograd's trace) any length gives the right shapes
    if holds_data(lengths):
        longest = int(F.amax(lengths).item())
    elif dev.type == "meta":
        longest = n
    else:
        raise NotImplementedError("embedding_bag(mode='max') cannot be traced into a graph: its intermediate "
                                  "shapes depend on the bag lengths, which are data")
    steps = F.arange(longest, dtype=_dt.int64, device=dev)
    valid = F.lt(F.unsqueeze(steps, 0), F.unsqueeze(lengths, 1))                       # (bags, longest)
    pos = F.where(valid, F.add(F.unsqueeze(starts, 1), F.unsqueeze(steps, 0)), 0)
    flat = F.reshape(pos, (-1,))
    bag_idx = F.reshape(F.index_select(idx, 0, flat), (bags, longest))
    valid = F.logical_and(valid, F.reshape(F.index_select(keep, 0, flat), (bags, longest)))
    plain = weight.detach()                                                 # selection only: no gradient
    rows = F.reshape(F.index_select(plain, 0, F.reshape(bag_idx, (-1,))), (bags, longest, dim))
    vals = F.where(F.unsqueeze(valid, 2), rows, F.full((), float("-inf"), dtype=dtype, device=dev))
    arg = F.max(vals, 1)[1]                                                 # (bags, dim), first maximum
    chosen = F.gather(F.expand(F.unsqueeze(bag_idx, 2), (bags, longest, dim)), 1, F.unsqueeze(arg, 1))
    nonempty = F.unsqueeze(F.any(valid, 1), 1)
    max_indices = F.where(nonempty, F.squeeze(chosen, 1), 0)
    out = F.where(nonempty, F.gather(weight, 0, max_indices), F.zeros((), dtype=dtype, device=dev))
    return out, max_indices


@decomposition("embedding_bag")
def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False):
    return F._embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                            include_last_offset, -1)


@decomposition("embedding_bag.padding_idx")
def embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                              include_last_offset, padding_idx):
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += weight.shape[0]
    return F._embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                            include_last_offset, padding_idx)
