"""Shape rules of indexing, scatter and gather ops.

Bounds of index *values* are data: they are checked by the kernels (cpu native kernels and
the explicit kernels in ember/decompositions/indexing.py), never here, so meta tensors
behave as on PyTorch's meta device (no bounds errors). Ops whose output shape depends on
data (nonzero, masked_select, boolean-mask indexing) raise NotImplementedError on meta, as
torch's meta device does.
"""
from __future__ import annotations

from ember.core.errors import (ArgumentTypeError, ArgumentValueError, DTypeError, IndexOutOfRangeError,
                          MissingKernelError, ShapeError)
from ember.core import dtype as _dt
from ember.core.layout import numel
from ember.core.spec import TensorSpec

from . import shape_rule
from .common import (as_int, broadcast_shapes, check_tensor, dense_like, iterator_strides, preserved_strides, shape_of,
                     type_name, with_layout, wrap_dim)

_INDEX_DTYPES = (_dt.int64, _dt.int32)


def no_meta(op, t) -> None:
    """Data-dependent output shapes cannot be computed on meta (torch raises NotImplementedError)."""
    if t._device.type == "meta":
        raise MissingKernelError(f"{op.name}: the output shape depends on the data (a data-dependent shape), "
                                 "which meta tensors do not carry; run it on a real device")


def _same_layout(self):
    """(shape, dtype): scatter-like results are contiguous on PyTorch's meta device."""
    return (shape_of(self), self._dtype)


def _dimsize(shape, d) -> int:
    return shape[d] if shape else 1


def _check_scatter_gather(op, self, dim, index, src=None, *, what="scatter", reduce_check=None):
    """ATen's gather_shape_check / scatter_shape_check, in their order (`reduce_check`: a scatter's reduction,
    checked once the dim is wrapped)."""
    check_tensor(op, self, "input" if what == "gather" else "self")
    check_tensor(op, index, "index")
    if src is not None:
        check_tensor(op, src, "src")
    s, i = shape_of(self), shape_of(index)
    d = wrap_dim(op, dim, len(s))               # torch wraps the dim before it checks the index's dtype
    if reduce_check is not None:
        reduce_check()
    if src is not None and src._dtype is not self._dtype:
        raise DTypeError(f"{op.name}: {what}(): Expected self.dtype to be equal to src.dtype (self is "
                         f"{type_name(self._dtype)}, argument 'src' is {type_name(src._dtype)})")
    if numel(i) == 0:                           # nothing to read or write: torch checks nothing more
        return d
    if index._dtype not in _INDEX_DTYPES:
        raise DTypeError(f"{op.name}: {what}(): Expected dtype int32/int64 for index, got "
                         f"{type_name(index._dtype)} (argument 'index')")
    if max(len(i), 1) != max(len(s), 1):
        raise ShapeError(f"{op.name}: Index tensor must have the same number of dimensions as "
                         f"{'input' if what == 'gather' else 'self'} tensor (argument 'index' has {len(i)}, "
                         f"self has {len(s)})")
    dims = max(len(s), 1)
    wrong = next((k for k in range(dims) if k != d and _dimsize(i, k) > _dimsize(s, k)), None)
    if wrong is not None and src is None:
        raise ShapeError(f"{op.name}: Size does not match at dimension {wrong} expected index {list(i)} to be no "
                         f"larger than self {list(s)} apart from dimension {d} (argument 'index')")
    if src is None:
        return d
    src_shape = shape_of(src)
    if wrong is None:
        for k in range(dims):                   # src.size(k) for every dim of self: past src's dims, an IndexError
            if _dimsize(i, k) > (_dimsize(src_shape, k) if k < len(src_shape) or not src_shape
                                 else src_shape[wrap_dim(op, k, len(src_shape))]):
                wrong = k
                break
    if max(len(src_shape), 1) != max(len(i), 1):
        raise ShapeError(f"{op.name}: Index tensor must have the same number of dimensions as src tensor "
                         f"(argument 'index' has {len(i)}, 'src' has {len(src_shape)})")
    if wrong is not None:
        raise ShapeError(f"{op.name}: Expected index {list(i)} to be no larger than self {list(s)} apart from "
                         f"dimension {d} and to be no larger size than src {list(src_shape)} (argument 'index')")
    return d


@shape_rule("gather")
def gather(op, self, dim, index, sparse_grad=False):
    _check_scatter_gather(op, self, dim, index, what="gather")
    return (shape_of(index), self._dtype)


@shape_rule("scatter_add")
def scatter_add(op, self, dim, index, src):
    check_tensor(op, src, "src")                     # (required here: _check_scatter_gather takes None for none)
    _check_scatter_gather(op, self, dim, index, src, what="scatter")
    return _same_layout(self)


@shape_rule("scatter")
def scatter(op, self, dim, index, src, reduce_check=None):
    if not isinstance(src, (bool, int, float)) and not hasattr(src, "_data"):
        raise ArgumentTypeError(f"{op.name}(): argument 'src' (or 'value') must be Tensor or Number, "
                                f"not {type(src).__name__}")
    _check_scatter_gather(op, self, dim, index, src if hasattr(src, "_data") else None, what="scatter",
                          reduce_check=reduce_check)
    return _same_layout(self)


@shape_rule("scatter_with_reduce")
def scatter_with_reduce(op, self, dim, index, src, reduce):
    """scatter.reduce / scatter.value_reduce: scatter's checks, and a reduction torch's scatter takes."""
    def reduce_check():
        if reduce not in ("add", "multiply"):
            raise ArgumentValueError(f"{op.name}: reduce argument must be either add or multiply. (argument "
                                     f"'reduce' is {reduce!r})")
    return scatter(op, self, dim, index, src, reduce_check)


REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


@shape_rule("scatter_reduce")
def scatter_reduce(op, self, dim, index, src, reduce, include_self=True):
    check_tensor(op, self, "self")
    check_tensor(op, index, "index")
    check_tensor(op, src, "src")                     # (required here: _check_scatter_gather takes None for none)

    def reduce_check():
        if reduce not in REDUCTIONS:
            raise ArgumentValueError(f"{op.name}: reduce argument must be either sum, prod, mean, amax or amin, "
                                     f"got {reduce!r} (argument 'reduce')")
    _check_scatter_gather(op, self, dim, index, src, what="scatter", reduce_check=reduce_check)
    return _same_layout(self)


@shape_rule("one_hot")
def one_hot(op, self, num_classes=-1):
    """int64 indices; (*self.shape, num_classes) int64, its last size data-dependent with num_classes -1.
    Index values are data: the kernel checks them (negative, or not below num_classes)."""
    check_tensor(op, self, "input")
    num_classes = as_int(op, num_classes, "num_classes")
    if self._dtype is not _dt.int64:
        raise DTypeError(f"{op.name}(): one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < -1:
        raise ArgumentValueError(f"{op.name}(): Class values must be smaller than num_classes.")
    if num_classes == -1:
        if 0 in shape_of(self):
            raise ArgumentValueError(f"{op.name}(): Can not infer total number of classes from empty tensor.")
        no_meta(op, self)
        return (tuple(shape_of(self)) + (None,), _dt.int64)
    return (tuple(shape_of(self)) + (num_classes,), _dt.int64)


@shape_rule("take")
def take(op, self, index):
    """`index`'s shape, `self`'s dtype; the index values are checked by the kernel (data)."""
    check_tensor(op, self, "input")
    check_tensor(op, index, "index")
    if index._dtype is not _dt.int64:
        raise DTypeError(f"{op.name}(): Expected a long tensor for index, but got {type_name(index._dtype)}")
    if numel(shape_of(self)) == 0 and numel(shape_of(index)) > 0:
        raise IndexOutOfRangeError(f"{op.name}(): tried to take from an empty tensor")
    return (tuple(shape_of(index)), self._dtype)


@shape_rule("bincount")
def bincount(op, self, weights=None, minlength=0):
    """1-D integer values (their sign is data: checked by the kernel); weights of their length; a
    data-dependent number of bins, int64 counts or the weights' sums (float32 kept, others float64)."""
    check_tensor(op, self, "input")
    minlength = as_int(op, minlength, "minlength")
    if minlength < 0:
        raise ArgumentValueError(f"{op.name}(): minlength should be >= 0")
    if len(shape_of(self)) != 1 or self._dtype.is_floating_point or self._dtype is _dt.bool:
        if self._dtype.is_floating_point:
            raise MissingKernelError(f'{op.name}(): "bincount_cpu" not implemented for \'{type_name(self._dtype)}\'')
        raise ArgumentValueError(f"{op.name}(): bincount only supports 1-d non-negative integral inputs.")
    if weights is not None:
        check_tensor(op, weights, "weights")
        if tuple(shape_of(weights)) != tuple(shape_of(self)):
            raise ShapeError(f"{op.name}(): weights should be 1-d and have the same length as input")
    no_meta(op, self)
    dtype = _dt.int64 if weights is None else _dt.float32 if weights._dtype is _dt.float32 else _dt.float64
    return ((None,), dtype)


def _search_dtype(out_int32) -> object:
    return _dt.int32 if out_int32 else _dt.int64


@shape_rule("searchsorted")
def searchsorted(op, sorted_sequence, self, out_int32=False, right=False, side=None, sorter=None):
    """A 1-D sequence searched for values of any shape, or rows searched for values whose leading dims are
    the rows' (the values' shape either way)."""
    check_tensor(op, sorted_sequence, "sorted_sequence")
    check_tensor(op, self, "input")
    if side not in (None, "left", "right"):
        raise ArgumentValueError(f"{op.name}(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise ArgumentValueError(f"{op.name}(): side and right can't be set to opposites, got side of {side} while "
                                 f"right was {bool(right)}")
    rows, values = tuple(shape_of(sorted_sequence)), tuple(shape_of(self))
    if not values and len(rows) != 1:                 # a 0-d value searches one 1-D sequence only
        raise ShapeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                         f"is 1, but we got boundaries tensor dim({len(rows)}) and input value's dim(0) numel(1)")
    if not rows:
        raise ShapeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension")
    if len(rows) > 1 and (len(values) != len(rows) or values[:-1] != rows[:-1]):
        raise ShapeError(f"{op.name}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                         f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                         f"{list(rows)} and input value tensor {list(values)}")
    if sorter is not None:
        check_tensor(op, sorter, "sorter")
        if tuple(shape_of(sorter)) != rows or sorter._dtype is not _dt.int64:
            raise ShapeError(f"{op.name}(): sorter must be an int64 tensor of the sorted sequence's shape")
    return (values, _search_dtype(out_int32))


@shape_rule("bucketize")
def bucketize(op, self, boundaries, out_int32=False, right=False):
    check_tensor(op, self, "input")
    check_tensor(op, boundaries, "boundaries")
    if len(shape_of(boundaries)) != 1:
        raise ShapeError(f"{op.name}(): boundaries tensor must be 1 dimension, but got "
                         f"dim({len(shape_of(boundaries))})")
    return (tuple(shape_of(self)), _search_dtype(out_int32))


@shape_rule("nonzero")
def nonzero(op, self):
    check_tensor(op, self, "input")
    no_meta(op, self)
    return ((None, len(shape_of(self))), _dt.int64)     # the row count is known after the kernel ran


def _check_vector_index(op, index, what):
    check_tensor(op, index, "index")
    if index._dtype not in _INDEX_DTYPES:
        raise DTypeError(f"{op.name}: {what}(): Expected dtype int32 or int64 for index, got "
                         f"{type_name(index._dtype)} (argument 'index')")
    if len(shape_of(index)) > 1:
        raise IndexOutOfRangeError(f"{op.name}: {what}(): Index is supposed to be a vector (argument 'index' has "
                                   f"{len(shape_of(index))} dimensions)")


@shape_rule("index_select")
def index_select(op, self, dim, index):
    check_tensor(op, self, "input")
    _check_vector_index(op, index, "index_select")
    s = shape_of(self)
    d = wrap_dim(op, dim, len(s))
    if not s:
        n = numel(shape_of(index))
        if n != 1:
            raise ArgumentValueError(f"{op.name}: index_select(): Index to scalar can have only 1 value, got {n} "
                                     "value(s) (argument 'index')")
        return ((), self._dtype)
    if s[d] == 0 and numel(shape_of(index)) > 0:
        raise ArgumentValueError(f"{op.name}(): index_select(): self indexing axis dim should be positive")
    return (s[:d] + (numel(shape_of(index)),) + s[d + 1:], self._dtype)


@shape_rule("index_add")
def index_add(op, self, dim, index, source, alpha=1):
    check_tensor(op, self, "input")
    check_tensor(op, source, "source")
    _check_vector_index(op, index, "index_add_")
    s, src = shape_of(self), shape_of(source)
    d = wrap_dim(op, dim, len(s))
    if source._dtype is not self._dtype:
        raise DTypeError(f"{op.name}: index_add_(): self ({type_name(self._dtype)}) and source "
                         f"({type_name(source._dtype)}) must have the same scalar type (argument 'source')")
    n = numel(shape_of(index))
    if 0 < len(src) <= d:
        raise ShapeError(f"{op.name}: index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
                         f"{len(src)}")
    if _dimsize(src, d) != n or (len(src) > 0 and len(src) != len(s)) or \
            any(src[k] != s[k] for k in range(min(len(s), len(src))) if k != d):
        raise ShapeError(f"{op.name}: index_add_(): source {list(src)} must have the shape of self {list(s)} "
                         f"except along dim {d}, where it must have the number of indices ({n}) "
                         "(argument 'source')")
    return _same_layout(self)


def _slice_index(op, self, dim, index, what: str, dtype_error) -> int:
    """index_copy's and index_fill's checks of `index` (an int64 vector or scalar) and of `dim`: the wrapped dim."""
    check_tensor(op, self, "input")
    check_tensor(op, index, "index")
    if index._dtype is not _dt.int64:
        raise dtype_error(index)
    if len(shape_of(index)) > 1:
        raise IndexOutOfRangeError(f"{what}(): Index should have dimension 1 or 0 (got {len(shape_of(index))})")
    return wrap_dim(op, dim, len(shape_of(self)))


@shape_rule("index_copy")
def index_copy(op, self, dim, index, source):
    """self's shape and dtype: `source` has self's slices, as many along dim as there are indices."""
    d = _slice_index(op, self, dim, index, "index_copy_", lambda i: DTypeError(
        f"index_copy_(): Expected a long tensor for index, but got {type_name(i._dtype)}"))
    check_tensor(op, source, "source")
    if source._dtype is not self._dtype:
        raise DTypeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                         f"{type_name(self._dtype)} and (source) {type_name(source._dtype)}")
    s, src, n = shape_of(self), shape_of(source), numel(shape_of(index))
    if s and src and len(src) != len(s):
        raise IndexOutOfRangeError(f"index_copy_(): When source and destination are not scalars, their dimensionality "
                                   f"must match. Source dimensionality ({len(src)}), destination dimensionality "
                                   f"({len(s)})")
    if _dimsize(src, d) != n:
        raise IndexOutOfRangeError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                                   f"({_dimsize(src, d)})")
    if len(src) > 0 and len(s) > 0 and (len(src) != len(s) or any(src[k] != s[k] for k in range(len(s)) if k != d)):
        raise IndexOutOfRangeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                                   f"Destination slice shape: {list(s[:d] + s[d + 1:])} at dimension {d} and source "
                                   f"slice shape: {list(src[:d] + src[d + 1:])} at dimension 0.")
    return _same_layout(self)


@shape_rule("index_fill")
def index_fill(op, self, dim, index, value):
    """self's shape, dtype and layout (torch's clone, then filled in place); a tensor value is 0-d."""
    _slice_index(op, self, dim, index, "index_fill_",
                 lambda i: IndexOutOfRangeError("index_fill_(): Expected dtype int64 for index."))
    if isinstance(value, TensorSpec) and shape_of(value):
        raise ShapeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                         f"{len(shape_of(value))} dimension(s).")
    return dense_like(self, self._dtype)


@shape_rule("take_along_dim")
def take_along_dim(op, self, indices, dim=None):
    check_tensor(op, self, "input")
    check_tensor(op, indices, "indices")
    if indices._dtype is not _dt.int64:
        raise DTypeError(f"{op.name}: torch.take_along_dim(): dtype of indices should be Long but got "
                         f"{type_name(indices._dtype)} (argument 'indices')")
    if dim is None:
        return ((numel(shape_of(indices)),), self._dtype)
    s, i = shape_of(self), shape_of(indices)
    if len(s) != len(i):
        raise ShapeError(f"{op.name}: torch.take_along_dim(): input and indices should have the same number of "
                         f"dimensions, but got {len(s)} dimensions for input, and {len(i)} dimensions for indices")
    d = wrap_dim(op, dim, len(s))
    if not s:
        return ((), self._dtype)
    a = s[:d] + (1,) + s[d + 1:]
    b = i[:d] + (1,) + i[d + 1:]
    out = list(broadcast_shapes(op, [a, b]))
    out[d] = i[d]
    return (tuple(out), self._dtype)


# ------------------------------------------------------------------------------ index
def expand_index_entries(op, self, indices):
    """Validate `indices` (Tensor?[]) against `self`: a list with one entry per indexed
    dimension of `self` (a k-dim boolean mask stands for k dimensions), returned as
    [(dim, tensor or None, is_mask)], plus whether any mask is present."""
    if not isinstance(indices, (list, tuple)):
        raise ArgumentTypeError(f"{op.name}(): argument 'indices' must be tuple of Tensors, "
                                f"not {type(indices).__name__}")
    s = shape_of(self)
    if not indices:
        raise IndexOutOfRangeError(f"{op.name}: at least one index must be provided (argument 'indices')")
    for k, t in enumerate(indices):        # the entries' types first, as torch's argument parser
        if t is not None and not hasattr(t, "_data"):
            raise ArgumentTypeError(f"{op.name}(): argument 'indices' must be tuple of Tensors, "
                                    f"not {type(t).__name__} (entry {k})")
    entries, dim, masks = [], 0, False
    for k, t in enumerate(indices):
        if t is None:
            entries.append((dim, None, False))
            dim += 1
            continue
        if t._dtype.category == 2:
            raise IndexOutOfRangeError(f"{op.name}: tensors used as indices must be long, int, byte or bool tensors "
                                       f"(argument 'indices', entry {k} is {t._dtype.name})")
        if t._dtype in (_dt.bool, _dt.uint8):
            ms = shape_of(t)
            for j, n in enumerate(ms):
                if dim + j < len(s) and n != s[dim + j]:
                    raise IndexOutOfRangeError(
                        f"{op.name}: The shape of the mask {list(ms)} at index {j} does not match the shape of the "
                        f"indexed tensor {list(s)} at index {dim + j} (argument 'indices')")
            entries.append((dim, t, True))
            dim += len(ms)
            masks = True
            continue
        if t._dtype not in (_dt.int64, _dt.int32, _dt.int16, _dt.int8):
            raise IndexOutOfRangeError(f"{op.name}: tensors used as indices must be long, int, byte or bool tensors "
                                       f"(argument 'indices', entry {k})")
        entries.append((dim, t, False))
        dim += 1
    if dim > len(s):
        raise IndexOutOfRangeError(f"{op.name}: too many indices for tensor of dimension {len(s)} (got {dim}) "
                                   "(argument 'indices')")
    return entries, masks


def index_layout(op, self, entries):
    """(result shape, its strides or None, broadcast index shape, first advanced dim or None if
    the advanced dims are not adjacent) for integer-only `entries`."""
    s = shape_of(self)
    adv = [(d, t) for d, t, _ in entries if t is not None]
    shapes = [shape_of(t) for _, t in adv]
    try:
        b = broadcast_shapes(op, shapes)
    except ShapeError:
        raise IndexOutOfRangeError(f"{op.name}: shape mismatch: indexing tensors could not be broadcast together "
                                   f"with shapes {', '.join(str(list(x)) for x in shapes)} "
                                   "(argument 'indices')") from None
    dims = [d for d, _ in adv]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    rest = [d for d in range(len(s)) if d not in dims]
    if adjacent:
        p = dims[0]
        shape = s[:p] + b + s[dims[-1] + 1:]
    else:
        p = None
        shape = b + tuple(s[d] for d in rest)
    return shape, _index_strides(self, adv, b, p, rest, shape), b, p


class _Operand:
    """A stand-in operand (shape, element strides) for TensorIterator's layout rule."""

    class _Data:
        itemsize = 1

        def __init__(self, shape, strides):
            self.shape, self.strides = shape, strides

    _dtype = _dt.uint8

    def __init__(self, shape, strides):
        self._data = self._Data(tuple(shape), tuple(strides))


def _index_strides(self, adv, b, p, rest, shape):
    """The output strides of PyTorch's index kernel (a TensorIterator over `self` restrided to
    the result shape and the broadcast index tensors)."""
    s = self._data.shape
    st = tuple(x // self._dtype.itemsize for x in self._data.strides)
    nb = len(b)
    first = p if p is not None else 0
    self_st = [0] * len(shape)
    if p is not None:
        for k in range(p):
            self_st[k] = st[k]
        for j, d in enumerate(range(adv[-1][0] + 1, len(s))):
            self_st[p + nb + j] = st[d]
    else:
        for j, d in enumerate(rest):
            self_st[nb + j] = st[d]
    ops = [_Operand(shape, self_st)]
    for _, t in adv:
        ts = shape_of(t)
        tst = tuple(x // t._dtype.itemsize for x in t._data.strides)
        full = [0] * len(shape)
        off = nb - len(ts)
        for j, (n, x) in enumerate(zip(ts, tst)):
            full[first + off + j] = 0 if n == 1 else x
        ops.append(_Operand(shape, full))
    return iterator_strides(shape, ops)


@shape_rule("index")
def index(op, self, indices):
    check_tensor(op, self, "input")
    entries, masks = expand_index_entries(op, self, indices)
    if masks:
        no_meta(op, self)
        return (None, self._dtype)            # the mask's count of True decides the shape
    if all(t is None for _, t, _ in entries):
        return _same_layout(self)
    shape, strides, _, _ = index_layout(op, self, entries)
    return with_layout(shape, self._dtype, strides)


@shape_rule("index_put")
def index_put(op, self, indices, values, accumulate=False):
    check_tensor(op, self, "self")
    check_tensor(op, values, "values")
    entries, masks = expand_index_entries(op, self, indices)
    if values._dtype is not self._dtype:
        raise DTypeError(f"{op.name}: Index put requires the source and destination dtypes match, got "
                         f"{type_name(self._dtype)} for the destination and {type_name(values._dtype)} for the "
                         "source (argument 'values')")
    if not masks and any(t is not None for _, t, _ in entries):
        shape = index_layout(op, self, entries)[0]
        check_values_fit(op, shape_of(values), shape)
    return with_layout(shape_of(self), self._dtype, preserved_strides(self))    # a clone of self


def check_values_fit(op, vshape, shape) -> None:
    try:
        ok = broadcast_shapes(op, [tuple(shape), tuple(vshape)]) == tuple(shape)
    except ShapeError:
        ok = False
    if not ok:
        raise ShapeError(f"{op.name}: shape mismatch: value tensor of shape {list(vshape)} cannot be broadcast to "
                         f"indexing result of shape {list(shape)} (argument 'values')")


# ------------------------------------------------------------------------------ masks
def _check_mask(op, mask, what):
    check_tensor(op, mask, "mask")
    if mask._dtype is not _dt.bool:
        raise DTypeError(f"{op.name}: {what} only supports boolean masks, but got mask with dtype "
                         f"{mask._dtype.name} (argument 'mask')")


@shape_rule("masked_fill")
def masked_fill(op, self, mask, value):
    check_tensor(op, self, "input")
    _check_mask(op, mask, "masked_fill_")
    if hasattr(value, "_data"):
        if len(value._data.shape):
            raise ShapeError(f"{op.name}: masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                             f"with {len(value._data.shape)} dimension(s) (argument 'value')")
    elif not isinstance(value, (bool, int, float)):
        raise ArgumentTypeError(f"{op.name}(): argument 'value' must be Number, not {type(value).__name__}")
    shape = broadcast_shapes(op, [shape_of(self), shape_of(mask)])
    if op.inplace_of is not None:
        if shape != shape_of(self):
            raise ShapeError(f"{op.name}: output with shape {list(shape_of(self))} doesn't match the broadcast shape "
                             f"{list(shape)} (argument 'mask')")
    if shape == shape_of(self):
        return _same_layout(self)
    return (shape, self._dtype)


@shape_rule("masked_select")
def masked_select(op, self, mask):
    check_tensor(op, self, "input")
    check_tensor(op, mask, "mask")
    if mask._dtype is not _dt.bool:
        raise DTypeError(f"{op.name}: masked_select: expected BoolTensor for mask, got {mask._dtype.name} "
                         "(argument 'mask')")
    broadcast_shapes(op, [shape_of(self), shape_of(mask)])
    no_meta(op, self)
    return ((None,), self._dtype)


@shape_rule("masked_scatter")
def masked_scatter(op, self, mask, source):
    check_tensor(op, self, "input")
    check_tensor(op, source, "source")
    _check_mask(op, mask, "masked_scatter_")
    if source._dtype is not self._dtype:
        raise DTypeError(f"{op.name}: masked_scatter: expected self and source to have same dtypes but got "
                         f"{type_name(self._dtype)} and {type_name(source._dtype)} (argument 'source')")
    shape = broadcast_shapes(op, [shape_of(self), shape_of(mask)])
    return (shape, self._dtype)


# ------------------------------------------------------------------------------ embedding
@shape_rule("embedding")
def embedding(op, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    check_tensor(op, weight, "weight")
    check_tensor(op, indices, "indices")
    if indices._dtype not in _INDEX_DTYPES:
        raise DTypeError(f"{op.name}: Expected tensor for argument #1 'indices' to have one of the following scalar "
                         f"types: Long, Int; but got {type_name(indices._dtype)} instead")
    if len(shape_of(weight)) != 2:
        raise ShapeError(f"{op.name}: 'weight' must be 2-D (argument 'weight' has {len(shape_of(weight))} dimensions)")
    if sparse:
        raise MissingKernelError(f"{op.name}: sparse=True (sparse gradients) is not supported (argument 'sparse')")
    if shape_of(weight)[0] == 0 and numel(shape_of(indices)):     # no row any index could name
        raise ShapeError(f"{op.name}: index_select(): self indexing axis dim should be positive (argument 'weight' "
                         f"has no rows, {numel(shape_of(indices))} indices given)")
    return (shape_of(indices) + (shape_of(weight)[1],), weight._dtype)


@shape_rule("embedding_dense_backward")
def embedding_dense_backward(op, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    check_tensor(op, grad_output, "grad_output")
    check_tensor(op, indices, "indices")
    if indices._dtype not in _INDEX_DTYPES:
        raise DTypeError(f"{op.name}: Expected tensor for argument #2 'indices' to have one of the following scalar "
                         f"types: Long, Int; but got {type_name(indices._dtype)} instead")
    if num_weights < 0:
        raise ArgumentValueError(f"{op.name}: zeros: Dimension size must be non-negative. (argument 'num_weights' "
                                 f"is {num_weights})")
    g = shape_of(grad_output)
    return ((num_weights, g[-1] if g else 1), grad_output._dtype)
