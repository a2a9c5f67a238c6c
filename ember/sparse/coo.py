"""Sparse COO tensors: what one is made of, and the conversions between layouts.

A sparse COO tensor is an `ember.Tensor` whose `_data` is a `SparseCOO` payload instead of a backend
array: an int64 `indices` tensor of shape (sparse_dim, nnz), a `values` tensor of shape
(nnz, *dense_shape) on the tensor's device, the full size, and whether the entries are known to be
coalesced (sorted, each index once). Its key set is its device's backend key plus the Sparse key, so
every op called on it reaches the Sparse kernel (ember/sparse/kernels.py) instead of a backend.

Everything here is built from ember's dense ops on `indices` and `values`, so sparse tensors work on
every backend, the meta device included, where they size what a sparse program allocates. Coalescing
on meta cannot know how many entries merge: it keeps nnz, the most there can be.
"""
from __future__ import annotations

from typing import Sequence

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import ArgumentValueError, ShapeError
from ember.core.layout import contiguous_strides
from ember.dispatcher import keys as K
from ember.frontend.tensor import Storage, Tensor, make_tensor


class SparseCOO:
    """The payload of a sparse COO tensor (its `_data`): indices, values, size, coalesced flag.

    It answers the few questions the frontend asks of any `_data`: `shape`, `strides` (none: zeros, as
    torch reports) and `nbytes` (0: the storages of `indices` and `values` hold the memory)."""

    __slots__ = ("indices", "values", "shape", "coalesced")
    nbytes = 0

    def __init__(self, indices: Tensor, values: Tensor, shape: tuple[int, ...], coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = shape
        self.coalesced = coalesced

    @property
    def strides(self) -> tuple[int, ...]:
        return (0,) * len(self.shape)

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    @property
    def nnz(self) -> int:
        return self.indices.shape[1]


def is_sparse(t) -> bool:
    return isinstance(t, Tensor) and bool(t._keys & K.SPARSE)


def payload(t: Tensor) -> SparseCOO:
    return t._data


def wrap(indices: Tensor, values: Tensor, shape: Sequence[int], coalesced: bool) -> Tensor:
    """A sparse tensor over `indices` and `values` (already checked), on values' device."""
    keys = (values._keys & K.BACKEND_MASK) | K.SPARSE
    data = SparseCOO(indices, values, tuple(int(s) for s in shape), coalesced)
    return make_tensor(data, values._dtype, values._device, keys, Storage(0, values._device))


def _plain(t: Tensor) -> Tensor:
    """`t` without autograd history: the parts of a sparse tensor are plain dense tensors."""
    return t.detach() if t._ag is not None else t


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants=None, is_coalesced=None) -> Tensor:
    """torch.sparse_coo_tensor: a sparse tensor with `values` at `indices` (sparse_dim x nnz).

    The indices are always checked against `size` (torch checks only with check_invariants=True): an
    entry outside the tensor would write out of bounds later, so ember refuses it up front."""
    from ember.frontend.factories import as_tensor

    indices = _plain(as_tensor(indices, device=device))
    values = _plain(as_tensor(values, dtype=dtype, device=device))
    if indices.device != values.device:
        indices = indices.to(values.device)
    if indices._dtype.is_floating_point or indices._dtype is _dt.bool:
        raise ArgumentValueError(f"sparse_coo_tensor(): indices must be an int64 tensor, got {indices._dtype}")
    if indices._dtype is not _dt.int64:
        indices = indices.to(_dt.int64)
    if indices.ndim != 2:
        raise ArgumentValueError(f"sparse_coo_tensor(): indices must be sparse_dim x nnz, but got: "
                                 f"{list(indices.shape)}")
    sparse_dim, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        raise ArgumentValueError(f"sparse_coo_tensor(): indices and values must have same nnz, but got nnz from "
                                 f"indices: {nnz}, nnz from values: {values.shape[0] if values.ndim else 'a 0-d tensor'}")
    dense_shape = tuple(values.shape[1:])
    if size is None:
        if nnz == 0:
            raise ArgumentValueError("sparse_coo_tensor(): cannot infer the size of a tensor with no entries; "
                                     "pass size")
        size = tuple(int(m) + 1 for m in indices.amax(dim=1).tolist()) + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_shape):
        raise ArgumentValueError(f"sparse_coo_tensor(): 'len(size) == sparse_dim + dense_dim' is not satisfied: "
                                 f"len(size) = {len(size)}, sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}")
    if size[sparse_dim:] != dense_shape:
        raise ShapeError(f"sparse_coo_tensor(): values has incorrect size, expected {list(size[sparse_dim:])}, "
                         f"got {list(dense_shape)}")
    if nnz and indices.device.type != "meta":
        _check_bounds(indices, size[:sparse_dim])
    out = wrap(indices, values, size, bool(is_coalesced) or nnz <= 1)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_bounds(indices: Tensor, sizes: tuple[int, ...]) -> None:
    lows, highs = indices.amin(dim=1).tolist(), indices.amax(dim=1).tolist()
    for dim, (low, high, size) in enumerate(zip(lows, highs, sizes)):
        if low < 0:
            raise ArgumentValueError(f"sparse_coo_tensor(): found negative index {low} for dim {dim}")
        if high >= size:
            raise ArgumentValueError(f"sparse_coo_tensor(): size is inconsistent with indices: for dim {dim}, size "
                                     f"is {size} but found index {high}")


def linear_index(indices: Tensor, sizes: Sequence[int]) -> Tensor:
    """Each entry's row-major position among the sparse dims' `sizes` (int64, length nnz)."""
    strides = contiguous_strides(tuple(sizes))
    flat = indices[0] * strides[0]
    for d in range(1, len(strides)):
        flat = flat + indices[d] * strides[d]
    return flat


def unflatten_index(flat: Tensor, sizes: Sequence[int]) -> Tensor:
    """The inverse of `linear_index`: (len(sizes), n) indices of row-major positions."""
    rows = []
    for stride, size in zip(contiguous_strides(tuple(sizes)), sizes):
        rows.append(F.remainder(F.floor_divide(flat, stride), size))
    return F.stack(rows) if rows else flat.reshape(0, flat.shape[0])


def coalesce(t: Tensor) -> Tensor:
    """The same tensor with its entries sorted by index and duplicates summed (torch's coalesce)."""
    data = payload(t)
    if data.coalesced:
        return t
    sizes = data.shape[:data.sparse_dim]
    flat = linear_index(data.indices, sizes)
    order = F.argsort(flat, stable=True)
    flat_sorted = flat[order]
    values_sorted = data.values[order]
    if t._device.type == "meta":
        # how many entries merge depends on the data: size for the most there can be (none merge)
        return wrap(unflatten_index(flat_sorted, sizes), values_sorted, data.shape, True)
    starts = F.ones((data.nnz,), dtype=_dt.bool, device=t._device)
    if data.nnz > 1:
        starts[1:] = F.ne(flat_sorted[1:], flat_sorted[:-1])
    group = F.cumsum(starts, 0) - 1
    n = int(starts.sum().item())
    summed = F.zeros((n,) + tuple(data.values.shape[1:]), dtype=data.values._dtype, device=t._device)
    summed = F.index_add(summed, 0, group, values_sorted)
    return wrap(unflatten_index(flat_sorted[starts], sizes), summed, data.shape, True)


def to_dense(t: Tensor) -> Tensor:
    """The dense tensor a sparse one stands for (duplicate entries add up)."""
    data = payload(t)
    out = F.zeros(data.shape, dtype=t._dtype, device=t._device)
    if data.nnz == 0:
        return out
    return F.index_put(out, list(data.indices.unbind(0)), data.values, True)


def to_sparse(t: Tensor, sparse_dim: int | None = None) -> Tensor:
    """A coalesced sparse tensor of a dense one's non-zero entries (all dims sparse unless `sparse_dim`)."""
    if is_sparse(t):
        return t
    sparse_dim = t.ndim if sparse_dim is None else sparse_dim
    if not 0 <= sparse_dim <= t.ndim:
        raise ArgumentValueError(f"to_sparse(): sparse_dim argument must be in [0, {t.ndim}] range, but "
                                 f"{sparse_dim} is given")
    if sparse_dim == 0 and t.ndim:
        raise ArgumentValueError("to_sparse(): sparse_dim argument must be > 0 when the tensor has dims")
    t = _plain(t)
    if sparse_dim == 0:
        # a 0-d tensor: one entry, no index
        indices = F.zeros((0, 1), dtype=_dt.int64, device=t._device)
        return wrap(indices, t.unsqueeze(0), t.shape, True)
    mask = F.ne(t, 0)
    if sparse_dim < t.ndim:
        mask = mask.reshape(tuple(t.shape[:sparse_dim]) + (-1,)).any(-1)
    indices = F.nonzero(mask).t()
    return wrap(indices.contiguous(), t[tuple(indices.unbind(0))], t.shape, True)
