"""Indexing kernels against the array-module API: the primitives gather, scatter_add and
nonzero, and native versions of the hot composite/explicit ops (index, index_put,
index_select, masked_fill, embedding, scatter, scatter_reduce).

Shape rules have validated shapes and dtypes; index *values* are data, so bounds are
checked here, with PyTorch's messages and exception classes. (`ufunc.at` is numpy's; a
cupy backend overrides scatter_add/index_put with cupyx.scatter_add.)
"""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, IndexOutOfRangeError, ShapeError

from .context import ArrayModule


def _bounds(idx, size, error, negative=False):
    """Raise `error(value)` for the smallest or largest index value out of [0, size) (of
    [-size, size) when `negative`)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < (-size if negative else 0):
        raise error(lo)
    if hi >= size:
        raise error(hi)


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _window(a, shape, skip=None):
    """The leading window of `a` with `shape` (dim `skip` kept whole)."""
    return a[tuple(slice(None) if k == skip else slice(0, n) for k, n in enumerate(shape))]


def _coords(am: ArrayModule, index, d):
    """Full index tuple for scatter/gather: index along d, aranges elsewhere."""
    grids = list(am.xp.ogrid[tuple(slice(0, n) for n in index.shape)])
    grids[d] = index
    return tuple(grids)


def gather(am: ArrayModule, spec, a, dim, index, sparse_grad=False):
    xp = am.xp
    out_shape = tuple(spec[0])
    if index.size == 0:
        return xp.empty(out_shape, dtype=a.dtype)
    a1, i1 = _at_least_1d(a), _at_least_1d(index)
    d = dim % a1.ndim
    _bounds(i1, a1.shape[d], lambda v: ArgumentValueError(
        f"gather(): index {v} is out of bounds for dimension {d} with size {a1.shape[d]} (argument 'index')"))
    out = xp.take_along_axis(_window(a1, i1.shape, d), i1, axis=d)
    return xp.ascontiguousarray(out).reshape(out_shape)


def scatter_add(am: ArrayModule, spec, a, dim, index, src):
    out = a.copy()
    if index.size == 0:
        return out
    o1, i1, s1 = _at_least_1d(out), _at_least_1d(index), _at_least_1d(src)
    d = dim % o1.ndim
    _bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
        f"scatter_add(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} (argument 'index')"))
    am.xp.add.at(o1, _coords(am, i1, d), _window(s1, i1.shape))
    return out


def nonzero(am: ArrayModule, spec, a):
    xp = am.xp
    if a.ndim == 0:
        return xp.zeros((1 if bool(a) else 0, 0), dtype=am.int64)
    return xp.ascontiguousarray(xp.stack(xp.nonzero(a), axis=1).astype(am.int64, copy=False))


def scatter(am: ArrayModule, spec, a, dim, index, src):
    """scatter.src and scatter.value: `src` (a tensor, or a Python scalar) written at `index`."""
    out = a.copy()
    if index.size == 0:
        return out
    o1, i1 = _at_least_1d(out), _at_least_1d(index)
    d = dim % o1.ndim
    _bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
        f"scatter(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} "
        "(argument 'index')"))
    if isinstance(src, (bool, int, float)):
        values = am.xp.asarray(src).astype(a.dtype)
    else:
        values = _window(_at_least_1d(src), i1.shape)
    o1[_coords(am, i1, d)] = values
    return out


def scatter_reduce(am: ArrayModule, spec, a, dim, index, src, reduce, include_self=True):
    xp = am.xp
    out = a.copy()
    if index.size == 0:
        return out
    o1, i1, s1 = _at_least_1d(out), _at_least_1d(index), _at_least_1d(src)
    d = dim % o1.ndim
    _bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
        f"scatter_reduce(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} "
        "(argument 'index')"))
    c = _coords(am, i1, d)
    vals = _window(s1, i1.shape)
    count = xp.zeros(o1.shape, dtype=am.int64)
    xp.add.at(count, c, 1)
    touched = count > 0
    if not include_self:
        init = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if init is None:
            if a.dtype.kind == "f":
                init = -xp.inf if reduce == "amax" else xp.inf
            elif a.dtype.kind == "b":
                init = reduce != "amax"
            else:
                info = xp.iinfo(a.dtype)
                init = info.min if reduce == "amax" else info.max
        o1[touched] = init
    ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum,
             "amin": xp.minimum}[reduce]
    ufunc.at(o1, c, vals)
    if reduce == "mean":
        n = count + (1 if include_self else 0)
        n = xp.where(n == 0, 1, n)
        if a.dtype.kind == "f":
            o1[...] = (o1 / n).astype(a.dtype)
        else:
            o1[...] = xp.floor_divide(o1, n).astype(a.dtype)
    return out


# ------------------------------------------------------------------ advanced indexing
def _parts(am: ArrayModule, a, indices, op_name):
    """numpy's index tuple for PyTorch's Tensor?[] indices, with bounds checked."""
    out, dim = [], 0
    for t in indices:
        if t is None:
            out.append(slice(None))
            dim += 1
        elif t.dtype.kind in "bu" and t.dtype.itemsize == 1:
            out.append(t.astype(bool, copy=False))
            dim += t.ndim
        else:
            size = a.shape[dim]
            _bounds(t, size, lambda v, d=dim, n=size: IndexOutOfRangeError(
                f"{op_name}: index {v} is out of bounds for dimension {d} with size {n}"), negative=True)
            out.append(t.astype(am.int64, copy=False))
            dim += 1
    return tuple(out)


def index(am: ArrayModule, spec, a, indices):
    """a[indices] (on a 0-d `a` only masks reach here: 0-d masks add a dim)."""
    return am.xp.ascontiguousarray(a[_parts(am, a, indices, "index")])


def index_put(am: ArrayModule, spec, a, indices, values, accumulate=False):
    xp = am.xp
    out = a.copy()
    p = _parts(am, a, indices, "index_put")
    try:
        if accumulate:
            target_shape = out[p].shape
            xp.add.at(out, p, xp.broadcast_to(values, target_shape))
        else:
            out[p] = values
    except ValueError:
        raise ShapeError(f"index_put: shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                         f"broadcast to indexing result of shape {list(out[p].shape)} (argument 'values')") \
            from None
    return out


def index_put_(am: ArrayModule, spec, a, indices, values, accumulate=False):
    """In place (the shape rule checked that `a` has no overlapping elements)."""
    xp = am.xp
    p = _parts(am, a, indices, "index_put_")
    target_shape = a[p].shape
    try:
        v = xp.broadcast_to(values, target_shape)
    except ValueError:
        raise ShapeError(f"index_put_: shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                         f"broadcast to indexing result of shape {list(target_shape)} (argument 'values')") \
            from None
    if accumulate:
        xp.add.at(a, p, v)
    else:
        a[p] = v
    return a


def masked_fill_(am: ArrayModule, spec, a, mask, value):
    xp = am.xp
    xp.copyto(a, xp.asarray(value).astype(a.dtype), where=xp.broadcast_to(mask, a.shape))
    return a


def index_select(am: ArrayModule, spec, a, dim, index):
    a1 = _at_least_1d(a)
    d = dim % a1.ndim
    size = a1.shape[d]
    _bounds(index, size, lambda v: IndexOutOfRangeError(
        f"index_select(): index out of range in self (index {v}, size {size})"))
    return am.xp.take(a1, index.reshape(-1).astype(am.int64, copy=False), axis=d).reshape(spec[0])


def masked_fill(am: ArrayModule, spec, a, mask, value):
    xp = am.xp
    v = xp.asarray(value).astype(a.dtype)
    return xp.where(mask, v, a)


def embedding(am: ArrayModule, spec, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    n = weight.shape[0]
    _bounds(indices, n, lambda v: IndexOutOfRangeError(
        f"embedding: index out of range in self (index {v}, {n} embeddings) (argument 'indices')"))
    return am.xp.take(weight, indices.astype(am.int64, copy=False), axis=0)


def embedding_dense_backward(am: ArrayModule, spec, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    xp = am.xp
    dim = grad.shape[-1] if grad.ndim else 1
    idx = indices.reshape(-1).astype(am.int64, copy=False)
    g = grad.reshape(-1, dim)
    if padding_idx >= 0 or scale_grad_by_freq:
        g = g.copy()
        if padding_idx >= 0:
            g[idx == padding_idx] = 0
        if scale_grad_by_freq:
            counts = xp.bincount(idx, minlength=num_weights)
            g /= counts[idx][:, None].astype(g.dtype)
    out = xp.zeros((num_weights, dim), dtype=grad.dtype)
    xp.add.at(out, idx, g)             # whole rows per index: numpy's fast path for ufunc.at
    return out


KERNELS = {"gather": gather, "embedding_dense_backward": embedding_dense_backward, "scatter_add": scatter_add,
           "nonzero": nonzero, "scatter.src": scatter, "scatter.value": scatter,
           "scatter_reduce.two": scatter_reduce, "index.Tensor": index, "index_put": index_put,
           "index_put_": index_put_, "masked_fill_.Scalar": masked_fill_, "masked_fill_.Tensor": masked_fill_,
           "index_select": index_select, "masked_fill.Scalar": masked_fill, "masked_fill.Tensor": masked_fill,
           "embedding": embedding}
