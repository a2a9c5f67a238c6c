"""Reduction and softmax kernels against the array-module API."""
from __future__ import annotations

import math
import operator

from .context import ArrayModule, Family, column_sums, ones, out, row_sums

#: A float sum of a C-contiguous numpy array is a product with a cached vector of ones where it reduces the
#: trailing dims (`row_sums`), the leading dims (`column_sums`) or all of them: BLAS's vector loops run 2x to
#: 7x faster than `add.reduce`, whose pairwise sum waits on one chain of additions per 8 elements (256 x 256
#: float32 on one core of an AMD EPYC: 9.4 us for all of it, 12.6 us per row, 7.2 us per column; the
#: products 3.4, 3.4, 3.1 us). A whole-array sum goes block by block: a block is rows of FULL_SUM_ROW
#: elements whose sums one product forms, then adds pairwise; the blocks' sums add up in float64. Its error
#: stays near the pairwise sum's (about 1e-6 relative in float32, where add.reduce's grows to 3e-5 over
#: 4096 x 4096 normal values), and its scratch is one block's row sums. Below FULL_SUM_MIN elements
#: add.reduce's one call costs less.
FULL_SUM_MIN = 4096
FULL_SUM_ROW = 1024
FULL_SUM_BLOCK = FULL_SUM_ROW * 256


def _axis(a, dim):
    """numpy's axis for a registry `dim`: None/[] reduce everything (also on 0-d arrays)."""
    if dim is None or a.ndim == 0:
        return None
    if not isinstance(dim, (tuple, list)):
        return operator.index(dim)          # ints, numpy ints, 0-dim integer tensors
    return tuple(operator.index(d) for d in dim) if len(dim) else None


def sum_(am: ArrayModule, spec, a, dim=None, keepdim=False, dtype=None):
    dt = am.native_of[spec[1]]
    axis = _axis(a, dim)
    if a.dtype is dt and dt.kind == "f" and am.is_numpy and a.flags.c_contiguous and a.size \
            and dt not in am.lowp:
        r = _sum_as_product(am, a, axis, keepdim)
        if r is not None:
            return r
    add_reduce = am.add_reduce      # read as an attribute, then called (a slot called as a method is a slow lookup)
    return out(am, add_reduce(a, axis=axis, keepdims=keepdim, dtype=am.compute_of[dt]), dt)


def mean(am: ArrayModule, spec, a, dim=None, keepdim=False, dtype=None):
    """The decomposition's steps in one kernel: the sum in the result dtype, divided by the number of
    elements each output sums (0 for an empty input: NaN, as in PyTorch)."""
    dt = am.native_of[spec[1]]
    total = sum_(am, spec, a, dim, keepdim, dtype)
    count = a.size // max(total.size, 1) if a.size else 0
    cdt = am.compute_of[dt]
    return out(am, am.xp.true_divide(total if total.dtype is cdt else total.astype(cdt), count), dt)


def _sum_as_product(am: ArrayModule, a, axis, keepdim: bool):
    """The sum of the non-empty C-contiguous float array `a` over `axis` (numpy's: None, an int or a tuple)
    as products with ones (see FULL_SUM_MIN), or None where the reduced dims are neither leading nor
    trailing (or the array is too small to gain)."""
    nd = a.ndim
    shape = a.shape
    if axis is None:
        k = nd
        dims = None
    else:
        dims = sorted({d % nd for d in axis}) if axis.__class__ is tuple else [axis % nd]
        k = len(dims)
    if k == nd:                                     # every dim: the whole array
        if a.size < FULL_SUM_MIN:
            return None
        total = _whole_sum(am, a.reshape(-1))
        return total.reshape((1,) * nd) if keepdim else total
    if dims[0] == nd - k and dims[-1] == nd - 1:    # the trailing dims: a sum per row
        kept = shape[:nd - k]
        r = row_sums(am, a.reshape(-1, a.size // math.prod(kept)))
    elif dims[-1] == k - 1:                         # the leading dims: a sum per column
        kept = shape[k:]
        r = column_sums(am, a.reshape(a.size // math.prod(kept), -1))
    else:
        return None
    if keepdim:
        return r.reshape(tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return r.reshape(kept)


def _whole_sum(am: ArrayModule, flat):
    """The sum of a flat float array of at least FULL_SUM_ROW elements, as a 0-d array of its dtype."""
    n = flat.size
    if n > FULL_SUM_BLOCK:
        total = 0.0
        for start in range(0, n, FULL_SUM_BLOCK):
            total += float(_whole_sum(am, flat[start:start + FULL_SUM_BLOCK]))
        return am.xp.asarray(total, flat.dtype)
    rows = n // FULL_SUM_ROW
    head = rows * FULL_SUM_ROW
    total = am.add_reduce(row_sums(am, flat[:head].reshape(rows, FULL_SUM_ROW)))
    if head != n:
        total += am.add_reduce(flat[head:])
    return am.xp.asarray(total, flat.dtype)


def amax(am: ArrayModule, spec, a, dim=(), keepdim=False):
    max_reduce = am.max_reduce
    return out(am, max_reduce(a, axis=_axis(a, dim), keepdims=keepdim), am.native_of[spec[1]])


def amin(am: ArrayModule, spec, a, dim=(), keepdim=False):
    min_reduce = am.min_reduce
    return out(am, min_reduce(a, axis=_axis(a, dim), keepdims=keepdim), am.native_of[spec[1]])


def arg_reduction(am: ArrayModule, fn, spec, a, dim=None, keepdim=False):
    """argmax/argmin: `fn` over one dim, or over the flattened array when `dim` is None."""
    if dim is None or a.ndim == 0:
        return out(am, am.xp.reshape(fn(a.reshape(-1)), spec[0]), am.int64)
    return out(am, fn(a, axis=dim, keepdims=keepdim), am.int64)


def softmax(am: ArrayModule, spec, a, dim, dtype=None):
    """exp(x - max) / sum along `dim`, computed in the array that becomes the result: along the last dim of a
    numpy array a block of rows at a time (`_row_blocks`), elsewhere over the whole array."""
    xp = am.xp
    dt, cdt, x, done = _softmax_operand(am, spec, a, 1.0)
    if done is not None:
        return done
    if not _by_rows(am, dim, x):
        e = xp.subtract(x, am.max_reduce(x, axis=dim, keepdims=True))
        x = None
        xp.exp(e, out=e)
        e /= am.add_reduce(e, axis=dim, keepdims=True)
        return out(am, e, dt)
    e = xp.empty(x.shape, cdt)
    ones_n = ones(am, x.shape[-1], cdt)
    for rows, into in _row_blocks(am, x, e):
        xp.subtract(rows, am.max_reduce(rows, axis=1, keepdims=True), out=into)
        xp.exp(into, out=into)
        into /= (into @ ones_n)[:, None]
    rows = into = x = None              # a float16/bfloat16 call rounds the result without its float32 input
    return out(am, e, dt)


def log_softmax(am: ArrayModule, spec, a, dim, dtype=None):
    """x - max - log(sum(exp(x - max))) along `dim`, in the array that becomes the result, the exponentials
    scratch: along the last dim of a numpy array a block of rows at a time (`_row_blocks`: the block's
    exponentials are the only scratch), elsewhere over the whole array."""
    xp = am.xp
    dt, cdt, x, done = _softmax_operand(am, spec, a, 0.0)
    if done is not None:
        return done
    if not _by_rows(am, dim, x):
        shifted = xp.subtract(x, am.max_reduce(x, axis=dim, keepdims=True))
        x = None
        shifted -= xp.log(am.add_reduce(xp.exp(shifted), axis=dim, keepdims=True))
        return out(am, shifted, dt)
    result = xp.empty(x.shape, cdt)
    ones_n = ones(am, x.shape[-1], cdt)
    scratch = None
    for rows, into in _row_blocks(am, x, result):
        xp.subtract(rows, am.max_reduce(rows, axis=1, keepdims=True), out=into)
        if scratch is None:                     # the first block is the largest
            scratch = xp.empty(into.shape, cdt)
        e = xp.exp(into, out=scratch[:into.shape[0]])
        total = e @ ones_n
        into -= xp.log(total, out=total)[:, None]
        total = None                    # not beside the next block's maxima
    rows = into = e = scratch = x = None     # nor the scratch and the copy beside the rounded result
    return out(am, result, dt)


def _softmax_backward_data(am: ArrayModule, spec, g, y, dim, input_dtype):
    """y * (g - sum(g * y)) along `dim` in one array of the compute dtype: g * y, its sums, then g less them
    and times y in place; along the last dim of numpy arrays a block of rows at a time (`_row_blocks`)."""
    xp = am.xp
    dt, cdt, ga, ya = _backward_operands(am, spec, g, y)
    result = xp.multiply(ga, ya, out=xp.empty(g.shape, cdt))      # an array for a 0-d one too
    if not _by_rows(am, dim, ga, ya):
        xp.subtract(ga, am.add_reduce(result, axis=dim, keepdims=True), out=result)
        result *= ya
        return out(am, result, dt)
    ones_n = ones(am, g.shape[-1], cdt)
    for g_rows, y_rows, into in _row_blocks(am, ga, ya, result):
        xp.subtract(g_rows, (into @ ones_n)[:, None], out=into)
        into *= y_rows
    return out(am, result, dt)


def _log_softmax_backward_data(am: ArrayModule, spec, g, y, dim, input_dtype):
    """g - exp(y) * sum(g) along `dim` in one array of the compute dtype: exp(y), times the sums of g, then
    subtracted from g in place; along the last dim of numpy arrays a block of rows at a time."""
    xp = am.xp
    dt, cdt, ga, ya = _backward_operands(am, spec, g, y)
    result = xp.exp(ya, out=xp.empty(g.shape, cdt))
    if not _by_rows(am, dim, ga, ya):
        result *= am.add_reduce(ga, axis=dim, keepdims=True)
        xp.subtract(ga, result, out=result)
        return out(am, result, dt)
    ones_n = ones(am, g.shape[-1], cdt)
    for g_rows, into in _row_blocks(am, ga, result):
        into *= (g_rows @ ones_n)[:, None]
        xp.subtract(g_rows, into, out=into)
    return out(am, result, dt)


def _backward_operands(am: ArrayModule, spec, g, y):
    """(result dtype, compute dtype, g and y in the compute dtype) of a softmax backward op."""
    dt = am.native_of[spec[1]]
    cdt = am.compute_of[dt]
    return dt, cdt, g.astype(cdt, copy=False), y.astype(cdt, copy=False)


def _softmax_operand(am: ArrayModule, spec, a, of_one: float):
    """(result dtype, compute dtype, `a` in the compute dtype, None), or with the result itself last where
    there is nothing to compute: a 0-d input's (`of_one`: a softmax over one element) or an empty one's."""
    dt = am.native_of[spec[1]]
    cdt = am.compute_of[dt]
    if a.ndim == 0:
        return dt, cdt, None, out(am, am.xp.full((), of_one, cdt), dt)
    if a.size == 0:
        return dt, cdt, None, out(am, am.xp.empty(a.shape, cdt), dt)
    return dt, cdt, (a if a.dtype is cdt else a.astype(cdt)), None


def _by_rows(am: ArrayModule, dim, *arrays) -> bool:
    """Whether a softmax kernel goes a block of rows at a time (`_row_blocks`): on numpy, along the last dim of
    C-contiguous non-empty arrays of one or more dims (their rows are then contiguous)."""
    return am.scratch_block is not None and all(
        a.ndim > 0 and a.size and a.flags.c_contiguous and dim % a.ndim == a.ndim - 1 for a in arrays)


def _row_blocks(am: ArrayModule, *arrays):
    """The same rows of each of `arrays` (of one shape) as 2-D views, block by block of about
    `am.scratch_block` elements: a softmax's passes over a block (max, exp, sum, ...) find it in the cache."""
    n = arrays[0].shape[-1]
    rows = [a.reshape(-1, n) for a in arrays]
    step = max(1, am.scratch_block // n)
    for start in range(0, rows[0].shape[0], step):
        yield tuple(r[start:start + step] for r in rows)


KERNELS = {"sum.dim_IntList": sum_, "mean.dim": mean, "amax": amax, "amin": amin,
           "argmax": Family(arg_reduction, "argmax"),
           "argmin": Family(arg_reduction, "argmin"), "softmax.int": softmax, "log_softmax.int": log_softmax,
           "_softmax_backward_data": _softmax_backward_data, "_log_softmax_backward_data": _log_softmax_backward_data}
