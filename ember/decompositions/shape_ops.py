"""Views, joins, copies and matrix products in terms of primitives.

Every view op's explicit kernel is `as_strided` with the strides its shape rule computed,
so a backend implementing the `as_strided` primitive gets all views for free.
"""
from __future__ import annotations

import math

from ember._generated import functions as F
from ember.dispatcher.operator import ALL_OPS
from ember.core import dtype as _dt
from ember.core.device import as_device
from ember.core.errors import ArgumentValueError, IndexOutOfRangeError
from ember.frontend.tensor import holds_data
from ember.shape_rules.reorder import rot90_dims
from ember.shape_rules.views import movedim_order, view_strides
from ember.shape_rules.common import strides_of

from . import decomposition, explicit_kernel


def _as_strided_view(op_name: str, self, *args):
    """The view `op_name` as as_strided with the strides its shape rule computes."""
    op = ALL_OPS[op_name]
    shape, _, strides, offset = op.shape_rule(op, self, *args)
    return F.as_strided(self, shape, strides, offset)


@explicit_kernel("view")
def view(self, size):
    return _as_strided_view("view", self, size)


@explicit_kernel("permute")
def permute(self, dims):
    return _as_strided_view("permute", self, dims)


@explicit_kernel("transpose.int")
def transpose(self, dim0, dim1):
    return _as_strided_view("transpose.int", self, dim0, dim1)


@explicit_kernel("expand")
def expand(self, size):
    return _as_strided_view("expand", self, size)


@explicit_kernel("squeeze.dims")
def squeeze(self, dim=None):
    return _as_strided_view("squeeze.dims", self, dim)


@explicit_kernel("unsqueeze")
def unsqueeze(self, dim):
    return _as_strided_view("unsqueeze", self, dim)


@explicit_kernel("slice.Tensor")
def slice_(self, dim=0, start=None, end=None, step=1):
    return _as_strided_view("slice.Tensor", self, dim, start, end, step)


@explicit_kernel("select.int")
def select(self, dim, index):
    return _as_strided_view("select.int", self, dim, index)


@decomposition("reshape")
def reshape(self, shape):
    op = ALL_OPS["reshape"]
    size = op.shape_rule(op, self, shape)[0]
    if view_strides(tuple(self.shape), strides_of(self), size) is not None:
        return F.view(self, size)
    return F.view(_contiguous_copy(self), size)


@decomposition("t")
def t(self):
    return F.transpose(self, 0, self.dim() - 1 if self.dim() else 0)


def _contiguous_copy(self):
    """A contiguous copy (clone keeps a dense input's strides, as PyTorch's does)."""
    return F.copy_(F.empty(tuple(self.shape), dtype=self.dtype, device=self.device), self)


@decomposition("contiguous")
def contiguous(self):
    return self if self.is_contiguous() else _contiguous_copy(self)


@decomposition("stack")
def stack(tensors, dim=0):
    ndim = tensors[0].dim() + 1
    dim = dim + ndim if dim < 0 else dim
    return F.cat([F.unsqueeze(t, dim) for t in tensors], dim)


@explicit_kernel("clone")
def clone(self):
    return F.copy_(F.empty_like(self), self)


@explicit_kernel("cat")
def cat(tensors, dim=0):
    op = ALL_OPS["cat"]
    shape, dtype = op.shape_rule(op, tensors, dim)
    out = F.empty(shape, dtype=dtype, device=tensors[0].device)
    d = dim % len(shape)
    offset = 0
    for t in tensors:
        if tuple(t.shape) == (0,) and len(shape) != 1:
            continue
        n = t.shape[d]
        F.copy_(F.slice(out, d, offset, offset + n, 1), t)
        offset += n
    return out


@explicit_kernel("slice_scatter")
def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    out = F.clone(self)
    F.copy_(F.slice(out, dim, start, end, step), src)
    return out


@explicit_kernel("select_scatter")
def select_scatter(self, src, dim, index):
    out = F.clone(self)
    F.copy_(F.select(out, dim, index), src)
    return out


@explicit_kernel("as_strided_scatter")
def as_strided_scatter(self, src, size, stride, storage_offset=None):
    out = F.copy_(F.empty(tuple(self.shape), dtype=self.dtype, device=self.device), self)   # contiguous
    F.copy_(F.as_strided(out, size, stride, 0 if storage_offset is None else storage_offset), src)
    return out


@explicit_kernel("_to_copy")
def to_copy(self, dtype=None, device=None, non_blocking=False):
    out = F.empty_like(self, dtype=dtype or self.dtype, device=self.device if device is None else as_device(device))
    return F.copy_(out, self)


@decomposition("dot")
@decomposition("vdot")
def dot(self, other):
    """A (1, n) x (n, 1) product (BLAS's dot where the backend's mm is BLAS), seen as 0-d."""
    return F.reshape(F.mm(F.reshape(self, (1, -1)), F.reshape(other, (-1, 1))), ())


@decomposition("matmul")
def matmul(self, other):
    a, b = self.dim(), other.dim()
    if a == 1 and b == 1:
        return F.reshape(F.mm(F.reshape(self, (1, -1)), F.reshape(other, (-1, 1))), ())
    if a == 2 and b == 2:
        return F.mm(self, other)
    if a == 1 and b == 2:
        return F.squeeze(F.mm(F.unsqueeze(self, 0), other), 0)
    if a == 2 and b == 1:
        return F.squeeze(F.mm(self, F.unsqueeze(other, 1)), 1)
    if b <= 2 and a >= 3:
        # fold the batch of `self` into the rows of one mm
        rhs = other if b == 2 else F.unsqueeze(other, 1)
        lead = tuple(self.shape[:-1])
        rows = 1
        for n in lead:                  # counted: -1 is ambiguous beside a zero-size last dim
            rows *= n
        out = F.mm(F.reshape(self, (rows, self.shape[-1])), rhs)
        out = F.reshape(out, lead + (rhs.shape[-1],))
        return out if b == 2 else F.squeeze(out, -1)
    # general batched case with broadcasting of the batch dimensions
    lhs = F.unsqueeze(self, 0) if a == 1 else self
    rhs = F.unsqueeze(other, 1) if b == 1 else other
    op = ALL_OPS["matmul"]
    out_shape = op.shape_rule(op, self, other)[0]
    batch = tuple(out_shape[: len(out_shape) - (a > 1) - (b > 1)])
    n, k, m = lhs.shape[-2], lhs.shape[-1], rhs.shape[-1]
    products = math.prod(batch)             # counted: -1 is ambiguous beside a zero-size dim
    lhs = F.reshape(F.expand(lhs, batch + (n, k)), (products, n, k))
    rhs = F.reshape(F.expand(rhs, batch + (k, m)), (products, k, m))
    return F.reshape(F.bmm(lhs, rhs), out_shape)


@decomposition("fill.Scalar")
def fill(self, value):
    return F.fill_(F.clone(self), value)          # clone keeps self's layout; fill_ zeroes its grad


@decomposition("zero_")
def zero_(self):
    return F.fill_(self, 0)


@decomposition("copy")
def copy(self, src, non_blocking=False):
    return F.copy_(F.clone(self), src, non_blocking)


@decomposition("movedim.intlist")
def movedim(self, source, destination):
    """permute by the order movedim's rule works out (a view)."""
    return F.permute(self, movedim_order(ALL_OPS["movedim.intlist"], self.dim(), source, destination))


# ------------------------------------------------------------------------------------------ repeat_interleave
def _flat_if_no_dim(self, dim):
    """(self, dim), the flattened tensor and dim 0 when `dim` is None."""
    return (F.reshape(self, (-1,)), 0) if dim is None else (self, dim if dim >= 0 else dim + self.dim())


@decomposition("repeat_interleave.self_int")
def repeat_interleave_int(self, repeats, dim=None, output_size=None):
    """Each slice along `dim` expanded `repeats` times beside itself, then the two dims merged (a copy)."""
    self, dim = _flat_if_no_dim(self, dim)
    shape = tuple(self.shape)
    expanded = F.expand(F.unsqueeze(self, dim + 1), shape[:dim + 1] + (repeats,) + shape[dim + 1:])
    return F.reshape(expanded, shape[:dim] + (shape[dim] * repeats,) + shape[dim + 1:])


@decomposition("repeat_interleave.Tensor")
def repeat_interleave_indices(repeats, output_size=None):
    """i repeated repeats[i] times: a count of the slices begun so far, the cumulative sum of a marker at each
    slice's start (the running totals of `repeats`; a zero repeat puts two markers at one place). The total
    is read from the data unless `output_size` gives it."""
    counts = F._to_copy(repeats, dtype=_dt.int64)
    if holds_data(counts) and counts.numel() and F.amin(counts).item() < 0:
        raise ArgumentValueError("repeat_interleave(): repeats can not be negative")
    total = int(F.sum(counts).item()) if output_size is None else output_size
    if output_size is not None and holds_data(counts) and int(F.sum(counts).item()) != output_size:
        raise ArgumentValueError("repeat_interleave(): allocated size does not match required size")
    starts = F.slice(F.cumsum(counts, 0), 0, 0, max(counts.numel() - 1, 0))
    marks = F.index_add(F.zeros((total + 1,), dtype=_dt.int64, device=counts.device), 0, starts, F.ones_like(starts))
    return F._to_copy(F.cumsum(F.slice(marks, 0, 0, total), 0), dtype=repeats.dtype)


@decomposition("repeat_interleave.self_Tensor")
def repeat_interleave_tensor(self, repeats, dim=None, output_size=None):
    """A 0-d or one-element `repeats` repeats every slice alike (the int overload); else the slices are
    gathered at repeat_interleave(repeats)'s indices."""
    if repeats.numel() == 1 and holds_data(repeats):
        return repeat_interleave_int(self, int(F.reshape(repeats, ()).item()), dim, output_size)
    self, dim = _flat_if_no_dim(self, dim)
    return F.index_select(self, dim, repeat_interleave_indices(repeats, output_size))


@decomposition("ravel")
def ravel(self):
    return F.reshape(self, (-1,))


# ------------------------------------------------------------------------------------------ reorderings, differences
@decomposition("fliplr")
def fliplr(self):
    return F.flip(self, [1])


@decomposition("flipud")
def flipud(self):
    return F.flip(self, [0])


@decomposition("rot90")
def rot90(self, k=1, dims=(0, 1)):
    """A contiguous copy (no turn), a flip of both dims (a half turn), or a flip of one seen transposed."""
    turns, d0, d1 = rot90_dims(ALL_OPS["rot90"], self, k, dims)
    if turns == 0:
        return F.copy_(F.empty(tuple(self.shape), dtype=self.dtype, device=self.device), self)
    if turns == 2:
        return F.flip(self, [d0, d1])
    return F.transpose(F.flip(self, [d1] if turns == 1 else [d0]), d0, d1)


@decomposition("diff")
def diff(self, n=1, dim=-1, prepend=None, append=None):
    """n times: the later slice along `dim` less the earlier (xor for bool), after prepend/append are joined."""
    parts = [t for t in (prepend, self, append) if t is not None]
    x = F.cat(parts, dim) if len(parts) > 1 else self
    for _ in range(min(n, x.shape[dim])):
        size = x.shape[dim]
        later, earlier = F.slice(x, dim, 1, size), F.slice(x, dim, 0, size - 1)
        x = F.logical_xor(later, earlier) if x.dtype is _dt.bool else F.sub(later, earlier)
    return F.clone(x) if x is self else x                 # (n = 0: a copy, as torch)


@decomposition("take")
def take(self, index):
    """The flattened tensor's elements at `index`, negative ones counted from the end; bounds checked on a
    backend holding data, with torch's message."""
    count = self.numel()
    flat_index = F.reshape(index, (-1,))
    if holds_data(index) and index.numel():
        for bound in (F.amin(flat_index).item(), F.amax(flat_index).item()):
            if not -count <= bound < count:
                raise IndexOutOfRangeError(f"take(): out of range: tried to access index {bound} on a tensor of "
                                           f"{count} elements.")
    wrapped = F.where(F.lt(flat_index, 0), F.add(flat_index, count), flat_index)
    return F.reshape(F.index_select(F.reshape(self, (-1,)), 0, wrapped), tuple(index.shape))
