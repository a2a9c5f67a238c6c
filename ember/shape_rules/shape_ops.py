"""Shape rules of sorting, scans, shape ops (flip, roll, tril, repeat, split, ...), extra
reductions (prod, var/std, norm, logsumexp, any/all) and lerp/addcmul/addcdiv."""
from __future__ import annotations

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DimensionError, DTypeError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.layout import contiguous_strides, numel
from ember.core.spec import TensorSpec
from ember.core.type_promotion import promote_types

from . import shape_rule
from .common import (as_int, check_dtype_arg, check_int_list, check_tensor, dense_like, infer_dense_strides,
                     NUMBER_TYPES, shape_of, strides_of, type_name, with_layout, wrap_dim, wrap_dims)
from .pointwise import pointwise
from .reductions import reduced_shape


def _reduce_dims(op, self, dim) -> tuple[int, ...]:
    ndim = len(shape_of(self))
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return wrap_dims(op, dim, ndim)


def _check_float(op, self, what: str):
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): {what}. Got {type_name(self._dtype)}")


# ------------------------------------------------------------------------ sorting and scans
@shape_rule("sort")
def sort(op, self, dim=-1, descending=False):
    check_tensor(op, self, "input")
    wrap_dim(op, dim, len(shape_of(self)))
    return (dense_like(self, self._dtype), dense_like(self, _dt.int64))


@shape_rule("sort_stable")
def sort_stable(op, self, stable=None, dim=-1, descending=False):
    return sort(op, self, dim, descending)


@shape_rule("argsort")
def argsort(op, self, dim=-1, descending=False):
    check_tensor(op, self, "input")
    wrap_dim(op, dim, len(shape_of(self)))
    return dense_like(self, _dt.int64)


@shape_rule("argsort_stable")
def argsort_stable(op, self, stable=None, dim=-1, descending=False):
    return argsort(op, self, dim, descending)


@shape_rule("topk")
def topk(op, self, k, dim=-1, largest=True, sorted=True):
    check_tensor(op, self, "input")
    if self._dtype is _dt.bool:
        raise DTypeError(f"{op.name}(): topk does not support bool dtypes")        # torch's RuntimeError
    shape = list(shape_of(self))
    k = as_int(op, k, "k")
    d = wrap_dim(op, dim, len(shape))
    size = shape[d] if shape else 1
    if not 0 <= k <= size:
        raise ArgumentValueError(f"{op.name}(): selected index k out of range (k={k}, size {size} at dim {d})")
    if shape:
        shape[d] = k
    return ((tuple(shape), self._dtype), (tuple(shape), _dt.int64))


@shape_rule("cumsum")
def cumsum(op, self, dim, dtype=None):
    """cumsum/cumprod (and their in-place twins): ints and bools accumulate in int64."""
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    wrap_dim(op, dim, len(shape_of(self)))
    out = dtype or (_dt.int64 if self._dtype.category < 2 else self._dtype)
    if op.inplace_of is not None:
        out = dtype or self._dtype
    if out is _dt.bool and shape_of(self):     # torch's scan kernels have no bool accumulator (a 0-d is copied)
        raise MissingKernelError(f'{op.name}(): "{op.inplace_of or op.name}_out_cpu" not implemented for \'Bool\'')
    if op.inplace_of is not None:
        return (shape_of(self), self._dtype)
    return (shape_of(self), out)


def _prod_dtype(op, self, dtype):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    return dtype or (_dt.int64 if self._dtype.category < 2 else self._dtype)


@shape_rule("prod")
def prod(op, self, dtype=None):
    """prod(self, dtype): the product of every element."""
    return ((), _prod_dtype(op, self, dtype))


@shape_rule("prod_dim")
def prod_dim(op, self, dim, keepdim=False, dtype=None):
    """prod.dim_int(self, dim, keepdim, dtype)."""
    out = _prod_dtype(op, self, dtype)
    shape = shape_of(self)
    d = wrap_dim(op, dim, len(shape))
    return (reduced_shape(shape, (d,) if shape else (), keepdim), out)


@shape_rule("logsumexp")
def logsumexp(op, self, dim, keepdim=False):
    check_tensor(op, self, "input")
    dims = _reduce_dims(op, self, dim)
    out = self._dtype if self._dtype.is_floating_point else _dt.get_default_dtype()
    return (reduced_shape(shape_of(self), dims, keepdim), out)


def _any_all_dtype(op, self):
    check_tensor(op, self, "input")
    return _dt.uint8 if self._dtype is _dt.uint8 else _dt.bool


@shape_rule("any_all")
def any_all(op, self):
    """any(self), all(self): over every element."""
    return ((), _any_all_dtype(op, self))


@shape_rule("any_all_dim")
def any_all_dim(op, self, dim, keepdim=False):
    """any.dim, all.dim: one dim (a tuple of dims also binds here: any(x, (0, 1)))."""
    out = _any_all_dtype(op, self)
    shape = shape_of(self)
    if dim is not None and not isinstance(dim, (tuple, list)):
        d = wrap_dim(op, dim, len(shape))
        return (reduced_shape(shape, (d,) if shape else (), keepdim), out)
    return (reduced_shape(shape, _reduce_dims(op, self, dim), keepdim), out)


@shape_rule("any_all_dims")
def any_all_dims(op, self, dim=None, keepdim=False):
    """any.dims, all.dims: a list of dims (None: all; empty: none, each element's truth, as torch's)."""
    out = _any_all_dtype(op, self)
    if dim is not None and isinstance(dim, (list, tuple)) and len(dim) == 0:
        return (shape_of(self), out)
    return (reduced_shape(shape_of(self), _reduce_dims(op, self, dim), keepdim), out)


def _var_spec(op, self, dim, keepdim):
    if not self._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): std and var only support floating point and complex dtypes, got "
                         f"{type_name(self._dtype)}")
    return (reduced_shape(shape_of(self), _reduce_dims(op, self, dim), keepdim), self._dtype)


@shape_rule("var")
def var(op, self, unbiased=True):
    """var(self, unbiased), std(self, unbiased): over every element."""
    check_tensor(op, self, "input")
    return _var_spec(op, self, None, False)


@shape_rule("var_dim")
def var_dim(op, self, dim, unbiased=True, keepdim=False):
    """var.dim, std.dim."""
    check_tensor(op, self, "input")
    return _var_spec(op, self, dim, keepdim)


@shape_rule("var_correction")
def var_correction(op, self, dim=None, correction=None, keepdim=False):
    """var.correction, std.correction, var_mean.correction."""
    check_tensor(op, self, "input")
    if correction is not None and not isinstance(correction, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'correction' must be Number, not "
                                f"{type(correction).__name__}")
    return _var_spec(op, self, dim, keepdim)


@shape_rule("var_mean")
def var_mean(op, self, dim=None, correction=None, keepdim=False):
    """var_mean.correction: var's spec, twice."""
    spec = var_correction(op, self, dim, correction, keepdim)
    return (spec, spec)


@shape_rule("norm")
def norm(op, self, p=2, dim=(), keepdim=False):
    check_tensor(op, self, "input")
    if p is not None and not isinstance(p, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'p' must be Number, not {type(p).__name__}")
    _check_float(op, self, "Expected a floating point tensor as input")
    dims = _reduce_dims(op, self, dim)
    shape = shape_of(self)
    empty = any(shape[d] == 0 for d in dims if shape) or (not shape and 0 in shape)
    if p is not None and p == float("inf") and empty:
        raise ArgumentValueError(f"{op.name}(): Expected reduction dim to be specified for input.numel() == 0 "
                                 f"(the {p}-norm of an empty reduction is undefined)")
    if p is not None and p < 0 and empty:            # a negative order: sum(|x|^p)^(1/p), -inf: min |x|
        raise ArgumentValueError(f"{op.name}(): linalg.vector_norm cannot compute the {p} norm on an empty "
                                 "tensor because the operation does not have an identity")
    return (reduced_shape(shape, dims, keepdim), self._dtype)


# ------------------------------------------------------------------------------ shape ops
@shape_rule("tril")
def tril(op, self, diagonal=0):
    check_tensor(op, self, "input")
    as_int(op, diagonal, "diagonal")
    if len(shape_of(self)) < 2:
        raise ArgumentValueError(f"{op.name}(): {op.name.rstrip('_')}: input tensor must have at least 2 dimensions")
    return (shape_of(self), self._dtype)


def _split_dim(op, self, dim, check_sizes=None) -> tuple[tuple[int, ...], int]:
    """The input's shape and the wrapped `dim`; `check_sizes()` runs before the dim is wrapped, as torch checks."""
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if not shape:
        raise ArgumentValueError(f"{op.name}(): expected the input to have at least one dimension, got a 0-d tensor")
    if check_sizes is not None:
        check_sizes()
    return shape, wrap_dim(op, dim, len(shape))


@shape_rule("split")
def split(op, self, split_size, dim=0):
    split_size = as_int(op, split_size, "split_size")

    def non_negative():
        if split_size < 0:
            raise ArgumentValueError(f"{op.name}(): split expects split_size be non-negative, but got "
                                     f"split_size={split_size}")
    shape, d = _split_dim(op, self, dim, non_negative)
    if split_size == 0 and shape[d] != 0:
        raise ArgumentValueError(f"{op.name}(): split_size can only be 0 if dimension size is 0, but got dimension "
                                 f"size of {shape[d]}")
    return [(shape, self._dtype)]


@shape_rule("split_with_sizes")
def split_with_sizes(op, self, split_sizes, dim=0):
    shape, d = _split_dim(op, self, dim)
    sizes = check_int_list(op, split_sizes, "split_sizes")
    if any(s < 0 for s in sizes):
        raise ArgumentValueError(f"{op.name}(): split_with_sizes expects split_sizes have only non-negative entries, "
                                 f"but got split_sizes={list(sizes)}")
    if sum(sizes) != shape[d]:
        raise ArgumentValueError(f"{op.name}(): split_with_sizes expects split_sizes to sum exactly to {shape[d]} "
                                 f"(input tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
    return [(shape, self._dtype)]


@shape_rule("chunk")
def chunk(op, self, chunks, dim=0):
    shape, d = _split_dim(op, self, dim)
    chunks = as_int(op, chunks, "chunks")
    if chunks <= 0:
        raise ArgumentValueError(f"{op.name}(): chunk expects `chunks` to be greater than 0, got: {chunks}")
    return [(shape, self._dtype)]


@shape_rule("unbind")
def unbind(op, self, dim=0):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if not shape:
        raise DimensionError(f"{op.name}(): Dimension specified as {dim} but tensor has no dimensions")
    wrap_dim(op, dim, len(shape))
    return [(shape, self._dtype)]


@shape_rule("narrow")
def narrow(op, self, dim, start, length):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if not shape:
        raise ArgumentValueError(f"{op.name}(): narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(op, dim, len(shape))
    start, length = as_int(op, start, "start"), as_int(op, length, "length")
    if length < 0:
        raise ArgumentValueError(f"{op.name}(): narrow(): length must be non-negative.")
    size = shape[d]
    if not -size <= start <= size:
        raise DimensionError(f"{op.name}(): start out of range (expected to be in range of [{-size}, {size}], "
                             f"but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise ArgumentValueError(f"{op.name}(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return (shape, self._dtype)


def diagonal_window(op, shape, strides, offset, diag, dim1, dim2):
    """(size, stride, storage offset) of the diagonal view (ATen's diagonal)."""
    n = len(shape)
    d1, d2 = wrap_dim(op, dim1, n, "dim1"), wrap_dim(op, dim2, n, "dim2")
    if d1 == d2:
        raise ArgumentValueError(f"{op.name}(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    if diag >= 0:
        length = max(min(shape[d1], shape[d2] - diag), 0)
        if length > 0:
            offset += diag * strides[d2]
    else:
        length = max(min(shape[d1] + diag, shape[d2]), 0)
        if length > 0:
            offset -= diag * strides[d1]
    keep = [i for i in range(n) if i not in (d1, d2)]
    size = tuple(shape[i] for i in keep) + (length,)
    stride = tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],)
    return size, stride, offset


@shape_rule("diagonal")
def diagonal(op, self, offset=0, dim1=0, dim2=1):
    check_tensor(op, self, "input")
    diag = as_int(op, offset, "offset")
    size, stride, off = diagonal_window(op, shape_of(self), strides_of(self), self.storage_offset(), diag, dim1, dim2)
    return (size, self._dtype, stride, off)


@shape_rule("unfold")
def unfold(op, self, dimension, size, step):
    """Tensor.unfold's view: `dimension` counts the windows (strides times `step`), a new last dimension their
    elements (the dimension's own stride); a 0-d tensor is one element along one dimension."""
    check_tensor(op, self, "input")
    shape, strides = list(shape_of(self)), list(strides_of(self))
    d = wrap_dim(op, dimension, len(shape))
    size, step = as_int(op, size, "size"), as_int(op, step, "step")
    length = shape[d] if shape else 1
    if size < 0:
        raise ArgumentValueError(f"{op.name}(): size is {size} but must be >= 0")
    if size > length:
        raise ShapeError(f"{op.name}(): maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise ArgumentValueError(f"{op.name}(): step is {step} but must be > 0")
    if not shape:
        return ((size,), self._dtype, (1,), self.storage_offset())
    inner = strides[d]
    shape[d], strides[d] = (length - size) // step + 1, inner * step
    return (tuple(shape) + (size,), self._dtype, tuple(strides) + (inner,), self.storage_offset())


@shape_rule("diag_embed")
def diag_embed(op, self, offset=0, dim1=-2, dim2=-1):
    """(*leading, n + |offset|, n + |offset|) with the two new dimensions at dim1 and dim2 of the result."""
    check_tensor(op, self, "input")
    diag = as_int(op, offset, "offset")
    shape = shape_of(self)
    rank = len(shape) + 1
    d1, d2 = wrap_dim(op, dim1, rank), wrap_dim(op, dim2, rank)
    if d1 == d2:
        raise ArgumentValueError(f"{op.name}(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    side = (shape[-1] if shape else 1) + abs(diag)
    leading = list(shape[:-1])
    for d in sorted((d1, d2)):
        leading.insert(d, side)
    return (tuple(leading), self._dtype)


@shape_rule("diag")
def diag(op, self, diagonal=0):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    k = as_int(op, diagonal, "diagonal")
    if len(shape) == 1:
        n = shape[0] + abs(k)
        return ((n, n), self._dtype)
    if len(shape) == 2:
        return (diagonal_window(op, shape, strides_of(self), 0, k, 0, 1)[0], self._dtype)
    raise ShapeError(f"{op.name}(): Supports 1D or 2D tensors. Got {len(shape)}D")


@shape_rule("diagflat")
def diagflat(op, self, offset=0):
    check_tensor(op, self, "input")
    n = numel(shape_of(self)) + abs(as_int(op, offset, "offset"))
    return ((n, n), self._dtype)


@shape_rule("unflatten")
def unflatten(op, self, dim, sizes):
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if not shape:                   # torch's RuntimeError (its dim wrapping takes no dim of a 0-d tensor here)
        raise ShapeError(f"{op.name}(): unflatten got an unexpected error: Dimension specified as {dim} but tensor "
                         "has no dimensions")
    d = wrap_dim(op, dim, len(shape))
    if not isinstance(sizes, (list, tuple)):
        raise ArgumentTypeError(f"{op.name}(): argument 'sizes' (position 3) must be tuple of ints, "
                                f"not {type(sizes).__name__}")
    sizes = [as_int(op, s, "sizes") for s in sizes]
    if not sizes:
        raise ArgumentValueError(f"{op.name}(): sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise ShapeError(f"{op.name}(): only one dimension can be inferred")
    known = numel([s for s in sizes if s != -1])
    if -1 in sizes:
        if known == 0 or shape[d] % known:
            raise ShapeError(f"{op.name}(): Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                             f"({shape[d]}) in the input tensor")
        sizes[sizes.index(-1)] = shape[d] // known
    elif known != shape[d]:
        raise ShapeError(f"{op.name}(): Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                         f"({shape[d]}) in the input tensor")
    return (shape[:d] + tuple(sizes) + shape[d + 1:], self._dtype)


@shape_rule("alias")
def alias(op, self):
    check_tensor(op, self, "input")
    return (shape_of(self), self._dtype, strides_of(self), self.storage_offset())


# ----------------------------------------------------------------- pointwise with checks
@shape_rule("lerp")
def lerp(op, self, end, weight):
    for name, t in (("self", self), ("end", end)):
        if not isinstance(t, TensorSpec):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    # ember.lerp binds lerp.Scalar first whatever `weight` is: both overloads accept both kinds
    if not isinstance(weight, (TensorSpec,) + NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'weight' must be Tensor or Number, not {type(weight).__name__}")
    # a 0-d weight may have another dtype (it is then weak in promotion), as in PyTorch
    others = [("end", end)] + ([("weight", weight)] if isinstance(weight, TensorSpec) and weight.ndim else [])
    for name, t in others:
        if t._dtype is not self._dtype:
            raise DTypeError(f"{op.name}(): expected dtype {type_name(self._dtype).lower()} for `{name}` but got "
                             f"dtype {_TORCH_NAMES.get(t._dtype.name, t._dtype.name)}")
    if not self._dtype.is_floating_point:
        kind = "tensor" if isinstance(weight, TensorSpec) else "scalar"
        raise MissingKernelError(f'{op.name}(): "lerp_kernel_{kind}" not implemented for '
                                 f"'{type_name(self._dtype)}'")
    return pointwise(op, self, end, weight)


_TORCH_NAMES = {"float64": "double", "float32": "float", "float16": "half", "bfloat16": "bfloat16",
                "int64": "long", "int32": "int"}


def _addc_args(op, self, tensor1, tensor2, value):
    for name, t in (("self", self), ("tensor1", tensor1), ("tensor2", tensor2)):
        if not isinstance(t, TensorSpec):
            raise ArgumentTypeError(f"{op.name}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not isinstance(value, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 'value' must be Number, not {type(value).__name__}")


@shape_rule("addcmul")
def addcmul(op, self, tensor1, tensor2, value=1):
    """self + value * tensor1 * tensor2: pointwise; an integral result takes no float value."""
    _addc_args(op, self, tensor1, tensor2, value)
    spec = pointwise(op, self, tensor1, tensor2, value)
    if isinstance(value, float) and not spec[1].is_floating_point:
        raise ArgumentValueError(f"{op.name}(): For integral input tensors, argument value must not be a floating "
                                 "point number.")
    return spec


@shape_rule("addcdiv")
def addcdiv(op, self, tensor1, tensor2, value=1):
    """self + value * tensor1 / tensor2: pointwise; no integer division."""
    _addc_args(op, self, tensor1, tensor2, value)
    if not tensor1._dtype.is_floating_point and not tensor2._dtype.is_floating_point:
        raise DTypeError(f"{op.name}(): Integer division with addcdiv is no longer supported, and in a future  "
                         "release addcdiv will perform a true division of tensor1 and tensor2.")
    return pointwise(op, self, tensor1, tensor2, value)


# ------------------------------------------------------------------------------ factories
@shape_rule("scalar_tensor")
def scalar_tensor(op, s, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    if isinstance(s, TensorSpec) and s.ndim == 0:
        s = s.item()
    if not isinstance(s, NUMBER_TYPES):
        raise ArgumentTypeError(f"{op.name}(): argument 's' must be Number, not {type(s).__name__}")
    return ((), dtype or _dt.get_default_dtype())


@shape_rule("empty_strided")
def empty_strided(op, size, stride, dtype=None, device=None, requires_grad=False):
    check_dtype_arg(op, dtype)
    size, stride = check_int_list(op, size, "size"), check_int_list(op, stride, "stride")
    if len(size) != len(stride):
        raise ArgumentValueError(f"{op.name}(): mismatch in length of strides and shape")
    for s in size:
        if s < 0:
            raise ArgumentValueError(f"{op.name}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    if any(st < 0 for st in stride) and 0 in size:      # no element to place: contiguous strides, as torch's
        stride = contiguous_strides(size)
    elif any(st < 0 for st in stride):
        raise ArgumentValueError(f"{op.name}(): Storage size calculation overflowed with sizes={list(size)} and "
                                 f"strides={list(stride)} (ember's tensors have no negative strides)")
    return with_layout(size, dtype or _dt.get_default_dtype(), stride if stride != contiguous_strides(size) else None)


@shape_rule("diff")
def diff(op, self, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim`, after prepend and append are joined on: n fewer entries there
    (none below zero). bool takes xor; the dtype is the joined tensors' (cat's promotion); laid out as self's
    slices are (contiguous after a cat)."""
    check_tensor(op, self, "input")
    shape = shape_of(self)
    if not shape:
        raise ArgumentValueError(f"{op.name}(): diff expects input to be at least one-dimensional")
    n = as_int(op, n, "n")
    if n < 0:
        raise ArgumentValueError(f"{op.name}(): order must be non-negative but got {n}")
    dim = wrap_dim(op, dim, len(shape))
    size, dtypes = shape[dim], [self._dtype]
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        check_tensor(op, extra, name)
        other = shape_of(extra)
        if len(other) != len(shape):
            raise ShapeError(f"{op.name}(): diff expects prepend or append to be the same dimension as input")
        for i, (a, b) in enumerate(zip(other, shape)):
            if i != dim and a != b:
                raise ShapeError(f"{op.name}(): diff expects the shape of tensor to prepend or append to match that "
                                 f"of input except along the differencing dimension; input.size({i}) = {b}, but "
                                 f"got tensor.size({i}) = {a}")
        size += other[dim]
        dtypes.append(extra._dtype)
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = promote_types(dtype, d)
    out = shape[:dim] + (max(size - n, 0),) + shape[dim + 1:]
    if len(dtypes) > 1 or len(out) < 2:             # joined by cat first: a contiguous result
        return (out, dtype)
    return with_layout(out, dtype, infer_dense_strides(out, strides_of(self)))   # differences of self's slices


@shape_rule("msort")
def msort(op, self):
    """sort's values spec along dim 0."""
    return sort(op, self, 0)[0]
