"""Sorting, scans and extra reductions over the primitives (sort.stable and cumsum among them).

sort/argsort/topk are views of one stable sort; cumprod and prod are log-depth products of
slices (a Hillis-Steele scan and a pairwise tree), so autograd differentiates them through
`mul` and gets exact gradients where inputs are zero; var/std, norm and logsumexp are
explicit kernels with PyTorch's backward formulas.
"""
from __future__ import annotations

from ember._generated import functions as F
from ember.dispatcher.operator import ALL_OPS
from ember.core import dtype as _dt
from ember.frontend.tensor import Tensor

from . import as_opmath, decomposition, explicit_kernel

INF = float("inf")


def _sort_stable(self, stable, dim, descending):
    return ALL_OPS["sort.stable"](self, stable, dim, descending)


def _wrap(dim: int, ndim: int) -> int:
    return dim % ndim if ndim else 0


def _dims(dim, ndim: int) -> tuple[int, ...]:
    """Wrapped reduction dims; None or [] means all."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if not isinstance(dim, (tuple, list)):
        dim = (dim,)
    return tuple(_wrap(d, ndim) for d in dim)


def _accumulate_dtype(self, dtype):
    """Output dtype of sum-like ops: `dtype`, else int64 for integers and bools."""
    if dtype is not None:
        return dtype
    return _dt.int64 if not self.dtype.is_floating_point else self.dtype


# ------------------------------------------------------------------------------- sorting
@decomposition("sort")
def sort(self, dim=-1, descending=False):
    return _sort_stable(self, False, dim, descending)


@decomposition("argsort")
def argsort(self, dim=-1, descending=False):
    return _sort_stable(self, False, dim, descending)[1]


@decomposition("argsort.stable")
def argsort_stable(self, stable, dim=-1, descending=False):
    return _sort_stable(self, stable, dim, descending)[1]


@decomposition("topk")
def topk(self, k, dim=-1, largest=True, sorted=True):
    values, indices = _sort_stable(self, False, dim, largest)
    if self.dim() == 0:
        return values, indices
    d = _wrap(dim, self.dim())
    return F.slice(values, d, 0, k, 1), F.slice(indices, d, 0, k, 1)


# --------------------------------------------------------------------------------- scans
@decomposition("cumprod")
def cumprod(self, dim, dtype=None):
    """Hillis-Steele scan: log2(n) rounds of x[i] *= x[i - s] (ones shifted in)."""
    x = F._to_copy(self, dtype=_accumulate_dtype(self, dtype))
    if x.dim() == 0:
        return x
    d = _wrap(dim, x.dim())
    n = x.shape[d]
    step = 1
    while step < n:
        pad_shape = list(x.shape)
        pad_shape[d] = step
        ones = F.ones(tuple(pad_shape), dtype=x.dtype, device=x.device)
        x = F.mul(x, F.cat([ones, F.slice(x, d, 0, n - step, 1)], d))
        step *= 2
    return x


def _prod_along(x, d: int, keepdim: bool):
    """Product along `d` by a pairwise tree of slices (x already has the output dtype)."""
    n = x.shape[d]
    if n == 0:
        out = F.add(F.mul(F.sum(x, d, True, dtype=x.dtype), 0), 1)    # 1, still connected to x
    else:
        while n > 1:
            h = n // 2
            y = F.mul(F.slice(x, d, 0, h, 1), F.slice(x, d, h, 2 * h, 1))
            if n % 2:
                y = F.cat([y, F.slice(x, d, 2 * h, n, 1)], d)
            x, n = y, h + n % 2
        out = x
    return out if keepdim else F.squeeze(out, d)


@decomposition("prod")
def prod(self, dtype=None):
    x = F._to_copy(self, dtype=_accumulate_dtype(self, dtype))
    return _prod_along(F.reshape(x, (-1,)), 0, False)


@decomposition("prod.dim_int")
def prod_dim(self, dim, keepdim=False, dtype=None):
    x = F._to_copy(self, dtype=_accumulate_dtype(self, dtype))
    if x.dim() == 0:
        return x
    return _prod_along(x, _wrap(dim, x.dim()), keepdim)


# ---------------------------------------------------------------------------- reductions
@explicit_kernel("logsumexp")
def logsumexp(self, dim, keepdim=False):
    x = self if self.dtype.is_floating_point else F._to_copy(self, dtype=_dt.get_default_dtype())
    dims = _dims(dim, x.dim())
    if x.numel() == 0:
        return F.log(F.sum(F.exp(x), dims if x.dim() else None, keepdim))
    red = dims if x.dim() else ()
    m = F.amax(x, red, True)
    m = F.where(F.isinf(m), F.zeros((), dtype=m.dtype, device=m.device), m)
    out = F.add(F.log(F.sum(F.exp(F.sub(x, m)), red if x.dim() else None, True)), m)
    if not keepdim and x.dim():
        out = F.squeeze(out, dims)
    return out


def _truth(self):
    return F.ne(self, F.zeros((), dtype=self.dtype, device=self.device))


def _any_all(self, dim, keepdim, is_any: bool):
    mask = _truth(self)
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:     # no dims: each element's truth
        return F._to_copy(mask, dtype=_dt.uint8) if self.dtype is _dt.uint8 else mask
    if not is_any:
        mask = F.logical_not(mask)
    count = F.sum(mask, dim, keepdim)
    out = F.gt(count, 0) if is_any else F.eq(count, 0)
    return F._to_copy(out, dtype=_dt.uint8) if self.dtype is _dt.uint8 else out


@decomposition("any")
def any_(self):
    return _any_all(self, None, False, True)


@decomposition("any.dim")
def any_dim(self, dim, keepdim=False):
    return _any_all(self, dim, keepdim, True)


@decomposition("any.dims")
def any_dims(self, dim=None, keepdim=False):
    return _any_all(self, dim, keepdim, True)


@decomposition("all")
def all_(self):
    return _any_all(self, None, False, False)


@decomposition("all.dim")
def all_dim(self, dim, keepdim=False):
    return _any_all(self, dim, keepdim, False)


@decomposition("all.dims")
def all_dims(self, dim=None, keepdim=False):
    return _any_all(self, dim, keepdim, False)


def reduced_count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


@explicit_kernel("var.correction")
def var(self, dim=None, correction=None, keepdim=False):
    x = as_opmath(self)
    dims = _dims(dim, x.dim()) if x.dim() else ()
    red = dims if x.dim() else None
    c = 1 if correction is None else correction
    centred = F.sub(x, F.mean(x, red, True))
    total = F.sum(F.mul(centred, centred), red, keepdim)
    n = reduced_count(tuple(x.shape), dims)
    out = F.div(total, max(0, n - c) if n else 0)      # no element, or a NaN correction: divided by 0, as torch
    return F._to_copy(out, dtype=self.dtype) if out.dtype is not self.dtype else out


@explicit_kernel("std.correction")
def std(self, dim=None, correction=None, keepdim=False):
    v = var(as_opmath(self), dim, correction, keepdim)
    out = F.sqrt(v)
    return F._to_copy(out, dtype=self.dtype) if out.dtype is not self.dtype else out


def _unbiased(unbiased: bool) -> int:
    return 1 if unbiased else 0


@decomposition("var.dim")
def var_dim(self, dim, unbiased=True, keepdim=False):
    return ALL_OPS["var.correction"](self, dim, _unbiased(unbiased), keepdim)


@decomposition("var")
def var_all(self, unbiased=True):
    return ALL_OPS["var.correction"](self, None, _unbiased(unbiased), False)


@decomposition("std.dim")
def std_dim(self, dim, unbiased=True, keepdim=False):
    return ALL_OPS["std.correction"](self, dim, _unbiased(unbiased), keepdim)


@decomposition("std")
def std_all(self, unbiased=True):
    return ALL_OPS["std.correction"](self, None, _unbiased(unbiased), False)


@decomposition("var_mean.correction")
def var_mean(self, dim=None, correction=None, keepdim=False):
    return ALL_OPS["var.correction"](self, dim, correction, keepdim), F.mean(self, dim, keepdim)


@decomposition("norm.Scalar")
def norm_all(self, p=2):
    return ALL_OPS["norm.ScalarOpt_dim"](self, p, [], False)


@explicit_kernel("norm.ScalarOpt_dim")
def norm(self, p, dim, keepdim=False):
    p = 2 if p is None else p
    x = as_opmath(self)
    red = _dims(dim, x.dim()) if x.dim() else None
    if p == 0:
        out = F._to_copy(F.sum(_truth(x), red, keepdim), dtype=x.dtype)
    elif p == 1:
        out = F.sum(F.abs(x), red, keepdim)
    elif p == 2:
        out = F.sqrt(F.sum(F.mul(x, x), red, keepdim))
    elif p == INF:
        out = F.amax(F.abs(x), red or (), keepdim)
    elif p == -INF:
        out = F.amin(F.abs(x), red or (), keepdim)
    else:
        out = F.pow(F.sum(F.pow(F.abs(x), p), red, keepdim), 1.0 / p)
    return F._to_copy(out, dtype=self.dtype) if out.dtype is not self.dtype else out


# ------------------------------------------------------------------------------------------ searches
def _search(rows, values, right: bool, out_int32: bool):
    """How many of each row's (sorted) elements come before each value, by one stable sort of the row and
    its values together: the values placed before the row's elements (left: before equal ones) or after
    them (right: after equal ones), a value's sorted position less the values ahead of it is the count of
    row elements ahead of it. O((n + m) log(n + m)), no n x m comparison."""
    shape = tuple(values.shape)
    if rows.dim() == 1:
        rows, values = F.reshape(rows, (1, -1)), F.reshape(values, (1, -1))
    n, m = rows.shape[-1], values.shape[-1]
    merged = F.cat([rows, values] if right else [values, rows], -1)
    order = F.argsort(merged, stable=True, dim=-1)
    is_value = F.ge(order, n) if right else F.lt(order, m)
    values_ahead = F.sub(F.cumsum(is_value, -1), is_value.long())
    ahead = F.sub(F.arange(0, n + m, 1, device=rows.device), values_ahead)
    counts = F.scatter(F.zeros_like(ahead), -1, order, ahead)
    found = F.slice(counts, -1, n, n + m) if right else F.slice(counts, -1, 0, m)
    found = F.reshape(found, shape)
    return F._to_copy(found, dtype=_dt.int32) if out_int32 else found


@decomposition("searchsorted.Tensor")
def searchsorted(sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        sorted_sequence = F.gather(sorted_sequence, -1, sorter)
    return _search(sorted_sequence, self, bool(right) or side == "right", out_int32)


@decomposition("bucketize.Tensor")
def bucketize(self, boundaries, out_int32=False, right=False):
    return _search(boundaries, self, right, out_int32)


@decomposition("isin")
def isin(elements, test_elements, assume_unique=False, invert=False):
    """Each element searched among the sorted test elements: found where the search stops on an equal one."""
    like = elements if isinstance(elements, Tensor) else test_elements
    values = elements if isinstance(elements, Tensor) else F.full((), elements, device=like.device)
    tests = test_elements if isinstance(test_elements, Tensor) else F.full((), test_elements, device=like.device)
    pool = F.sort(F.reshape(tests, (-1,)), stable=True, dim=0)[0]
    n = pool.shape[0]
    if n == 0:
        found = F.zeros_like(values, dtype=_dt.bool)
    else:
        at = _search(pool, values, False, False)
        found = F.logical_and(F.lt(at, n), F.eq(F.reshape(F.index_select(pool, 0, F.reshape(F.clamp_max(at, n - 1), (-1,))),
                                                             tuple(values.shape)), values))
    return F.logical_not(found) if invert else found


@decomposition("std_mean.correction")
def std_mean(self, dim=None, correction=None, keepdim=False):
    return ALL_OPS["std.correction"](self, dim, correction, keepdim), F.mean(self, dim, keepdim)


@decomposition("aminmax")
def aminmax(self, dim=None, keepdim=False):
    """(amin, amax) over `dim`; every element when None (keepdim then keeps every dim as 1)."""
    dims = [] if dim is None else [dim]
    if dim is None and keepdim:
        dims = list(range(self.dim()))
    return F.amin(self, dims, keepdim), F.amax(self, dims, keepdim)


@decomposition("msort")
def msort(self):
    return F.sort(self, 0)[0]
