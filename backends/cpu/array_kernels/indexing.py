"""Indexing kernels against the array-module API: the primitives gather, scatter_add and
nonzero, and native versions of the hot composite/explicit ops (index, index_put,
index_select, masked_fill, embedding, scatter, scatter_reduce).

Shape rules have validated shapes and dtypes; index *values* are data, so bounds are
checked here, with PyTorch's messages and exception classes. (`ufunc.at` is numpy's; a
cupy backend overrides scatter_add/index_put with cupyx.scatter_add.)
"""
from __future__ import annotations

from typing import Callable

from ember.core.errors import ArgumentValueError, IndexOutOfRangeError, ShapeError


def make(xp, native: Callable) -> dict[str, Callable]:
    i64 = xp.dtype("int64")

    def bounds(idx, size, error, negative=False):
        if idx.size == 0:
            return
        lo, hi = int(idx.min()), int(idx.max())
        if lo < (-size if negative else 0):
            raise error(lo)
        if hi >= size:
            raise error(hi)

    def at_least_1d(a):
        return a.reshape(1) if a.ndim == 0 else a

    def window(a, shape, skip=None):
        """The leading window of `a` with `shape` (dim `skip` kept whole)."""
        return a[tuple(slice(None) if k == skip else slice(0, n) for k, n in enumerate(shape))]

    def coords(index, d):
        """Full index tuple for scatter/gather: index along d, aranges elsewhere."""
        grids = list(xp.ogrid[tuple(slice(0, n) for n in index.shape)])
        grids[d] = index
        return tuple(grids)

    def gather(spec, a, dim, index, sparse_grad=False):
        out_shape = tuple(spec[0])
        if index.size == 0:
            return xp.empty(out_shape, dtype=a.dtype)
        a1, i1 = at_least_1d(a), at_least_1d(index)
        d = dim % a1.ndim
        bounds(i1, a1.shape[d], lambda v: ArgumentValueError(
            f"gather(): index {v} is out of bounds for dimension {d} with size {a1.shape[d]} (argument 'index')"))
        out = xp.take_along_axis(window(a1, i1.shape, d), i1, axis=d)
        return xp.ascontiguousarray(out).reshape(out_shape)

    def scatter_add(spec, a, dim, index, src):
        out = a.copy()
        if index.size == 0:
            return out
        o1, i1, s1 = at_least_1d(out), at_least_1d(index), at_least_1d(src)
        d = dim % o1.ndim
        bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
            f"scatter_add(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} (argument 'index')"))
        xp.add.at(o1, coords(i1, d), window(s1, i1.shape))
        return out

    def nonzero(spec, a):
        if a.ndim == 0:
            return xp.zeros((1 if bool(a) else 0, 0), dtype=i64)
        return xp.ascontiguousarray(xp.stack(xp.nonzero(a), axis=1).astype(i64, copy=False))

    def scatter_with(reduce_ufunc):
        def kernel(spec, a, dim, index, src):
            out = a.copy()
            if index.size == 0:
                return out
            o1, i1 = at_least_1d(out), at_least_1d(index)
            d = dim % o1.ndim
            bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
                f"scatter(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} "
                "(argument 'index')"))
            if isinstance(src, (bool, int, float)):
                values = xp.asarray(src).astype(a.dtype)
            else:
                values = window(at_least_1d(src), i1.shape)
            o1[coords(i1, d)] = values
            return out
        return kernel

    def scatter_reduce(spec, a, dim, index, src, reduce, include_self=True):
        out = a.copy()
        if index.size == 0:
            return out
        o1, i1, s1 = at_least_1d(out), at_least_1d(index), at_least_1d(src)
        d = dim % o1.ndim
        bounds(i1, o1.shape[d], lambda v: ArgumentValueError(
            f"scatter_reduce(): index {v} is out of bounds for dimension {d} with size {o1.shape[d]} "
            "(argument 'index')"))
        c = coords(i1, d)
        vals = window(s1, i1.shape)
        count = xp.zeros(o1.shape, dtype=i64)
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
    def parts(a, indices, op_name):
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
                bounds(t, size, lambda v, d=dim, n=size: IndexOutOfRangeError(
                    f"{op_name}: index {v} is out of bounds for dimension {d} with size {n}"), negative=True)
                out.append(t.astype(i64, copy=False))
                dim += 1
        return tuple(out)

    def index(spec, a, indices):
        if a.ndim == 0:                      # only masks reach here (0-d masks add a dim)
            return xp.ascontiguousarray(a[parts(a, indices, "index")])
        return xp.ascontiguousarray(a[parts(a, indices, "index")])

    def index_put(spec, a, indices, values, accumulate=False):
        out = a.copy()
        p = parts(a, indices, "index_put")
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

    def index_put_(spec, a, indices, values, accumulate=False):
        """In place (the shape rule checked that `a` has no overlapping elements)."""
        p = parts(a, indices, "index_put_")
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

    def masked_fill_(spec, a, mask, value):
        xp.copyto(a, xp.asarray(value).astype(a.dtype), where=xp.broadcast_to(mask, a.shape))
        return a

    def index_select(spec, a, dim, index):
        a1 = at_least_1d(a)
        d = dim % a1.ndim
        size = a1.shape[d]
        bounds(index, size, lambda v: IndexOutOfRangeError(
            f"index_select(): index out of range in self (index {v}, size {size})"))
        return xp.take(a1, index.reshape(-1).astype(i64, copy=False), axis=d).reshape(spec[0])

    def masked_fill(spec, a, mask, value):
        v = xp.asarray(value).astype(a.dtype)
        return xp.where(mask, v, a)

    def embedding(spec, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        n = weight.shape[0]
        bounds(indices, n, lambda v: IndexOutOfRangeError(
            f"embedding: index out of range in self (index {v}, {n} embeddings) (argument 'indices')"))
        return xp.take(weight, indices.astype(i64, copy=False), axis=0)

    def embedding_dense_backward(spec, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
        dim = grad.shape[-1] if grad.ndim else 1
        idx = indices.reshape(-1).astype(i64, copy=False)
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

    return {"gather": gather, "embedding_dense_backward": embedding_dense_backward, "scatter_add": scatter_add, "nonzero": nonzero, "scatter.src": scatter_with(None),
            "scatter.value": scatter_with(None), "scatter_reduce.two": scatter_reduce, "index.Tensor": index,
            "index_put": index_put, "index_put_": index_put_, "masked_fill_.Scalar": masked_fill_,
            "masked_fill_.Tensor": masked_fill_, "index_select": index_select, "masked_fill.Scalar": masked_fill,
            "masked_fill.Tensor": masked_fill, "embedding": embedding}
