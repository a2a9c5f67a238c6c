"""Indexing, scatter and gather in terms of the primitives gather, scatter_add and nonzero.

Every advanced index is turned into one linear index `L` into the flattened input:
reading is `take(flat, L)` (a gather), writing is a scatter_add into the flattened input.
Bounds of index values are data, so they are checked here (and in the cpu native
kernels) with amin/amax of the index; on meta there is no data and, as on PyTorch's meta
device, nothing is checked.
"""
from __future__ import annotations

import numpy as np

from ember._generated import functions as F
from ember.core.errors import ArgumentValueError, IndexOutOfRangeError
from ember.core import dtype as _dt

from ember.frontend.tensor import holds_data

from . import decomposition, explicit_kernel


# ------------------------------------------------------------------------------ helpers
def check_bounds(idx, size: int, error, *, negative: bool) -> None:
    """Raise `error(value)` for the first offending extreme of `idx` outside
    [-size, size) (negative=True) or [0, size)."""
    if not holds_data(idx) or idx.numel() == 0:
        return
    lo, hi = int(F.amin(idx).item()), int(F.amax(idx).item())
    low = -size if negative else 0
    if lo < low:
        raise error(lo)
    if hi >= size:
        raise error(hi)


def _may_repeat(count, device) -> bool:
    """Whether index_put must keep each position's last write (some index repeats). Read from the
    data; without data, no on meta (which then allocates what a run without repeats does), yes in a
    traced program (its graph must be right for any indices)."""
    if not holds_data(count):
        return device.type != "meta"
    return bool(count.numel()) and int(F.amax(count).item()) > 1


def _wrap(idx, size: int):
    """Negative indices counted from the end (as int64)."""
    idx = idx if idx.dtype is _dt.int64 else F._to_copy(idx, dtype=_dt.int64)
    return F.where(F.lt(idx, 0), F.add(idx, size), idx)


def take(flat, L):
    """flat[L] for a 1-D `flat` and an index `L` of any shape: one gather whose result
    has L's shape (no reshape of the output, so it is a fresh tensor, never a view)."""
    shape = tuple(L.shape)
    if len(shape) <= 1:
        return F.gather(flat, 0, L)
    src = F.expand(F.reshape(flat, (flat.shape[0],) + (1,) * (len(shape) - 1)), (flat.shape[0],) + shape[1:])
    return F.gather(src, 0, L)


def _along(t, dim: int, ndim: int):
    """A 1-D tensor viewed along `dim` of an `ndim`-dimensional shape (for broadcasting)."""
    return F.reshape(t, tuple(t.shape[0] if k == dim else 1 for k in range(ndim)))


def _contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def int_indices(self, indices, op_name: str = "index"):
    """`indices` with boolean masks replaced by their nonzero coordinates and integer
    indices checked and wrapped: a list with one entry (None or an int64 tensor) per
    dimension of `self`."""
    out = []
    shape = tuple(self.shape)
    for t in indices:
        if t is None:
            out.append(None)
            continue
        if t.dtype is _dt.bool or t.dtype is _dt.uint8:
            nz = F.nonzero(t if t.dtype is _dt.bool else F.ne(t, 0))
            for j in range(t.dim()):
                out.append(F.select(nz, 1, j))
            continue
        d = len(out)
        size = shape[d]

        def error(v, d=d, size=size):
            return IndexOutOfRangeError(f"{op_name}: index {v} is out of bounds for dimension {d} with size {size}")
        check_bounds(t, size, error, negative=True)
        out.append(_wrap(t, size))
    out += [None] * (len(shape) - len(out))
    return out


def linear_index(self, idx):
    """(L, result shape): the linear index into `self` flattened (contiguously) for the
    advanced index `idx` (one entry per dimension), following PyTorch's placement of the
    broadcast index dimensions (where the first advanced dim is when they are adjacent,
    else first)."""
    shape = tuple(self.shape)
    adv = [d for d, t in enumerate(idx) if t is not None]
    b = tuple(np.broadcast_shapes(*(tuple(idx[d].shape) for d in adv)))
    adjacent = adv == list(range(adv[0], adv[0] + len(adv)))
    rest = [d for d in range(len(shape)) if d not in adv]
    nb = len(b)
    if adjacent:
        p = adv[0]
        result = shape[:p] + b + shape[adv[-1] + 1:]
        pos = {d: (k if k < p else k - len(adv) + nb) for k, d in enumerate(range(len(shape))) if d in rest}
        first = p
    else:
        result = b + tuple(shape[d] for d in rest)
        pos = {d: nb + j for j, d in enumerate(rest)}
        first = 0
    strides = _contiguous_strides(shape)
    n = len(result)
    L = None
    for d in adv:
        t = idx[d]
        t = F.reshape(t, (1,) * (nb - t.dim()) + tuple(t.shape))
        t = F.reshape(t, (1,) * first + tuple(t.shape) + (1,) * (n - first - nb))
        term = F.mul(t, strides[d]) if strides[d] != 1 else t
        L = term if L is None else F.add(L, term)
    for d in rest:
        ar = F.arange(shape[d], dtype=_dt.int64, device=self.device)
        term = _along(F.mul(ar, strides[d]) if strides[d] != 1 else ar, pos[d], n)
        L = F.add(L, term)
    return F.expand(L, result), result


def _flat(self):
    return F.reshape(self, (-1,)) if self.dim() != 1 else self


def _index_dims_error(op_name, values_shape, shape):
    return ArgumentValueError(f"{op_name}: shape mismatch: value tensor of shape {list(values_shape)} cannot be "
                              f"broadcast to indexing result of shape {list(shape)} (argument 'values')")


# ------------------------------------------------------------------------------ index / index_put
@explicit_kernel("index.Tensor")
def index(self, indices):
    idx = int_indices(self, indices)
    if all(t is None for t in idx):
        return F.clone(self)
    L, _ = linear_index(self, idx)
    return take(_flat(self), L)


def _last_occurrence(L):
    """True at each position of the 1-D `L` whose value does not occur later (the write that
    wins when a non-accumulating index_put has duplicate indices, as on PyTorch's cpu)."""
    n = L.shape[0]
    same = F.eq(F.unsqueeze(L, 1), F.unsqueeze(L, 0))
    pos = F.arange(n, dtype=_dt.int64, device=L.device)
    later = F.gt(F.unsqueeze(pos, 0), F.unsqueeze(pos, 1))
    dup_later = F.sum(F.logical_and(same, later), 1)
    return F.eq(dup_later, 0)


@explicit_kernel("index_put")
def index_put(self, indices, values, accumulate=False):
    idx = int_indices(self, indices, "index_put")
    if all(t is None for t in idx):
        out = F.clone(self)
        return F.add(out, values) if accumulate else F.copy_(out, values)
    L, result = linear_index(self, idx)
    try:
        if tuple(np.broadcast_shapes(tuple(values.shape), result)) != tuple(result):
            raise ValueError
    except ValueError:
        raise _index_dims_error("index_put", tuple(values.shape), result) from None
    flat = _flat(self)
    Lf = F.reshape(L, (-1,))
    vf = F.reshape(F.expand(values, result), (-1,))
    if accumulate:
        out = F.scatter_add(flat, 0, Lf, vf)
    else:
        ones = F.ones((Lf.shape[0],), dtype=_dt.int64, device=self.device)
        count = F.scatter_add(F.zeros((flat.shape[0],), dtype=_dt.int64, device=self.device), 0, Lf, ones)
        if _may_repeat(count, self.device):
            vf = F.where(_last_occurrence(Lf), vf, F.zeros((), dtype=vf.dtype, device=vf.device))
        written = F.scatter_add(F.zeros_like(flat), 0, Lf, vf)
        out = F.where(F.gt(count, 0), written, flat)
    return F.clone(F.reshape(out, tuple(self.shape)))


# ------------------------------------------------------------------------------ gather family
@explicit_kernel("index_select")
def index_select(self, dim, index):
    size = self.shape[dim] if self.dim() else 1
    check_bounds(index, size, lambda v: IndexOutOfRangeError(
        f"index_select(): index out of range in self (index {v}, size {size})"), negative=False)
    idx = F.reshape(index, (-1,))
    idx = idx if idx.dtype is _dt.int64 else F._to_copy(idx, dtype=_dt.int64)
    if self.dim() == 0:
        return take(F.reshape(self, (1,)), F.reshape(idx, ()))
    d = dim % self.dim()
    out_shape = tuple(self.shape[:d]) + (idx.shape[0],) + tuple(self.shape[d + 1:])
    return F.gather(self, d, F.expand(_along(idx, d, self.dim()), out_shape))


def _pad_to(g, shape):
    """`g` padded with zeros at the end of each dimension to `shape`."""
    if tuple(g.shape) == tuple(shape):
        return g
    out = F.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    return _place(out, g)


def _place(out, g, dim: int = 0):
    """`out` with its leading window of g's shape replaced by `g` (nested slice_scatter)."""
    if dim == g.dim():
        return g
    inner = _place(F.slice(out, dim, 0, g.shape[dim]), g, dim + 1)
    return F.slice_scatter(out, inner, dim, 0, g.shape[dim])


def _gather_bounds(op_name, self, d, index):
    size = self.shape[d] if self.dim() else 1
    check_bounds(index, size, lambda v: ArgumentValueError(
        f"{op_name}(): index {v} is out of bounds for dimension {d} with size {size} (argument 'index')"),
        negative=False)


@explicit_kernel("scatter.src")
def scatter_src(self, dim, index, src):
    if index.numel() == 0:
        return F.clone(self)
    nd = max(self.dim(), 1)
    d = dim % nd
    _gather_bounds("scatter", self, d, index)
    x = self if self.dim() else F.reshape(self, (1,))
    ix = index if index.dim() else F.reshape(index, (1,))
    s = src if src.dim() else F.reshape(src, (1,))
    s = _window(s, tuple(ix.shape))
    coords = [ix if k == d else _along(F.arange(ix.shape[k], dtype=_dt.int64, device=self.device), k, nd)
              for k in range(nd)]
    out = F.index_put(x, coords, s)
    return out if self.dim() else F.clone(F.reshape(out, ()))


def _window(t, shape):
    """The leading window of `t` with `shape` (a view)."""
    for k, n in enumerate(shape):
        if t.shape[k] != n:
            t = F.slice(t, k, 0, n)
    return t


@explicit_kernel("scatter.value")
def scatter_value(self, dim, index, value):
    src = F.full(tuple(index.shape), value, dtype=self.dtype, device=self.device)
    return scatter_src(self, dim, index, src)


@decomposition("index_add")
def index_add(self, dim, index, source, alpha=1):
    size = self.shape[dim] if self.dim() else 1
    check_bounds(index, size, lambda v: IndexOutOfRangeError(
        f"index_add(): index out of range in self (index {v}, size {size})"), negative=False)
    src = source if alpha == 1 else F.mul(source, alpha)
    idx = F.reshape(index, (-1,))
    idx = idx if idx.dtype is _dt.int64 else F._to_copy(idx, dtype=_dt.int64)
    if self.dim() == 0:
        out = F.scatter_add(F.reshape(self, (1,)), 0, idx, F.reshape(src, (-1,)))
        return F.reshape(out, ())
    d = dim % self.dim()
    return F.scatter_add(self, d, F.expand(_along(idx, d, self.dim()), tuple(src.shape)), src)


def _slice_positions(self, dim, index, error):
    """(wrapped dim, index as a 1-D int64 vector), its values checked against the dim's size."""
    size = self.shape[dim] if self.dim() else 1
    check_bounds(index, size, error, negative=True)
    idx = F.reshape(index, (-1,))
    d = dim % self.dim() if self.dim() else 0
    return d, F.remainder(idx, size) if size else idx          # negative indices count from the end


@decomposition("index_copy")
def index_copy(self, dim, index, source):
    size = self.shape[dim] if self.dim() else 1
    d, idx = _slice_positions(self, dim, index, lambda v: IndexOutOfRangeError(
        f"index_copy_(): index {v} is out of bounds for dimension {dim % max(self.dim(), 1)} with size {size}"))
    if self.dim() == 0:
        return F.reshape(F.scatter(F.reshape(self, (1,)), 0, idx, F.reshape(source, (-1,))), ())
    src = source if source.dim() else F.reshape(source, (1,) * self.dim())      # a 0-d slice of a vector
    return F.scatter(self, d, F.expand(_along(idx, d, self.dim()), tuple(src.shape)), src)


def _index_fill(self, dim, index, value):
    size = self.shape[dim] if self.dim() else 1
    d, idx = _slice_positions(self, dim, index, lambda v: IndexOutOfRangeError(
        f"index {v} is out of bounds for dimension {dim % max(self.dim(), 1)} with size {size}"))
    hit = F.any(F.eq(F.unsqueeze(F.arange(size, device=self.device), 1), idx), [1]) if idx.numel() else \
        F.zeros((size,), dtype=_dt.bool, device=self.device)
    mask = _along(hit, d, self.dim()) if self.dim() else F.reshape(hit, ())
    fill = value if not hasattr(value, "dtype") else F._to_copy(value, dtype=self.dtype)
    if not hasattr(fill, "dtype"):
        fill = F.full((), fill, dtype=self.dtype, device=self.device)
    return F.where(mask, fill, self)


@decomposition("index_fill.int_Scalar")
def index_fill_scalar(self, dim, index, value):
    return _index_fill(self, dim, index, value)


@decomposition("index_fill.int_Tensor")
def index_fill_tensor(self, dim, index, value):
    return _index_fill(self, dim, index, value)


@decomposition("take_along_dim")
def take_along_dim(self, indices, dim=None):
    if dim is None:
        return F.gather(_flat(self), 0, F.reshape(indices, (-1,)))
    if self.dim() == 0:
        return F.gather(self, 0, indices)
    d = dim % self.dim()
    shape = list(np.broadcast_shapes(tuple(1 if k == d else n for k, n in enumerate(self.shape)),
                                     tuple(1 if k == d else n for k, n in enumerate(indices.shape))))
    s_shape = tuple(self.shape[d] if k == d else n for k, n in enumerate(shape))
    i_shape = tuple(indices.shape[d] if k == d else n for k, n in enumerate(shape))
    return F.gather(F.expand(self, s_shape), d, F.expand(indices, i_shape))


# ------------------------------------------------------------------------------ masks
def _value_tensor(self, value):
    if hasattr(value, "dtype"):
        return value if value.dtype is self.dtype else F._to_copy(value, dtype=self.dtype)
    return F.full((), value, dtype=self.dtype, device=self.device)


@explicit_kernel("masked_fill.Scalar")
def masked_fill_scalar(self, mask, value):
    return F.where(mask, _value_tensor(self, value), self)


@explicit_kernel("masked_fill.Tensor")
def masked_fill_tensor(self, mask, value):
    return F.where(mask, _value_tensor(self, value), self)


def _broadcast_pair(self, mask):
    shape = tuple(np.broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    return F.expand(self, shape), F.expand(mask, shape), shape


@decomposition("masked_select")
def masked_select(self, mask):
    s, m, _ = _broadcast_pair(self, mask)
    pos = F.select(F.nonzero(F.reshape(m, (-1,))), 1, 0)
    return F.index_select(F.reshape(s, (-1,)), 0, pos)


@explicit_kernel("masked_scatter")
def masked_scatter(self, mask, source):
    s, m, shape = _broadcast_pair(self, mask)
    pos = F.select(F.nonzero(F.reshape(m, (-1,))), 1, 0)
    k = pos.shape[0]
    if source.numel() < k:
        raise ArgumentValueError(f"masked_scatter: Number of elements of source < number of ones in mask "
                                 f"({source.numel()} < {k}) (argument 'source')")
    src = F.slice(F.reshape(source, (-1,)), 0, 0, k)
    out = F.index_put(F.reshape(s, (-1,)), [pos], src)
    return F.reshape(out, shape)


# ------------------------------------------------------------------------------ embedding
@explicit_kernel("embedding")
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    n, dim = weight.shape
    check_bounds(indices, n, lambda v: IndexOutOfRangeError(
        f"embedding: index out of range in self (index {v}, {n} embeddings) (argument 'indices')"), negative=False)
    idx = indices if indices.dtype is _dt.int64 else F._to_copy(indices, dtype=_dt.int64)
    cols = F.arange(dim, dtype=_dt.int64, device=weight.device)
    L = F.add(F.mul(F.unsqueeze(idx, -1), dim), cols)
    return take(_flat(weight), L)


@explicit_kernel("embedding_dense_backward")
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    dim = grad_output.shape[-1]
    idx = F.reshape(indices, (-1,))
    idx = idx if idx.dtype is _dt.int64 else F._to_copy(idx, dtype=_dt.int64)
    g = F.reshape(grad_output, (-1, dim))
    zero = F.zeros((), dtype=g.dtype, device=g.device)
    if padding_idx >= 0:
        g = F.where(F.unsqueeze(F.eq(idx, padding_idx), 1), zero, g)
    if scale_grad_by_freq:
        counts = F.scatter_add(F.zeros((num_weights,), dtype=_dt.int64, device=g.device), 0, idx, F.ones_like(idx))
        g = F.div(g, F.unsqueeze(F.gather(counts, 0, idx), 1))
    out = F.zeros((num_weights, dim), dtype=g.dtype, device=g.device)
    return F.scatter_add(out, 0, F.expand(F.unsqueeze(idx, 1), (idx.shape[0], dim)), g)


# ------------------------------------------------------------------------------ nonzero variants
@decomposition("argwhere")
def argwhere(self):
    return F.nonzero(self)


@decomposition("nonzero_numpy")
def nonzero_numpy(self):
    """One 1-D tensor of indices per dimension (a 0-d input is treated as 1-D, as PyTorch)."""
    rows = F.nonzero(self if self.dim() else F.reshape(self, (1,)))
    return [F.select(rows, 1, d) for d in range(rows.shape[1])]


@decomposition("where")
def where_condition(condition):
    """torch.where(condition): nonzero(condition, as_tuple=True), a tuple."""
    return tuple(nonzero_numpy(condition))


from . import indexing_reduce  # noqa: E402,F401  (scatter_reduce)


@decomposition("one_hot")
def one_hot(self, num_classes=-1):
    """`self[..., None] == arange(num_classes)` as int64, after torch's checks of the class values (on a
    backend holding data; num_classes -1 reads the largest value, a data-dependent shape)."""
    if holds_data(self) and self.numel():
        if F.amin(self).item() < 0:
            raise ArgumentValueError("one_hot(): Class values must be non-negative.")
        largest = F.amax(self).item()
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise ArgumentValueError("one_hot(): Class values must be smaller than num_classes.")
    classes = F.arange(0, num_classes, 1, device=self.device)
    return F._to_copy(F.eq(F.unsqueeze(self, -1), classes), dtype=_dt.int64)


@decomposition("bincount")
def bincount(self, weights=None, minlength=0):
    """index_add of ones (or the weights) into max(minlength, largest value + 1) zeros; the values'
    sign checked with torch's message."""
    if self.numel() and F.amin(self).item() < 0:
        raise ArgumentValueError("bincount(): bincount only supports 1-d non-negative integral inputs.")
    bins = max(minlength, F.amax(self).item() + 1 if self.numel() else 0)
    if self.dtype not in (_dt.int64, _dt.int32):            # index_add takes int32/int64 indices
        self = F._to_copy(self, dtype=_dt.int64)
    if weights is None:
        return F.index_add(F.zeros((bins,), dtype=_dt.int64, device=self.device), 0, self,
                           F.ones((self.numel(),), dtype=_dt.int64, device=self.device))
    dtype = _dt.float32 if weights.dtype is _dt.float32 else _dt.float64
    return F.index_add(F.zeros((bins,), dtype=dtype, device=self.device), 0, self, F._to_copy(weights, dtype=dtype))
