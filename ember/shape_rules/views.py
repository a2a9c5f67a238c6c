"""Shape rules of view ops: output (shape, dtype, strides, storage offset).

Every view is a strided window on its input's storage, so these rules compute the exact
strides and offset; the meta backend and the `as_strided` primitive use them directly,
and backends with cheaper native views (numpy's transpose, ...) must agree with them.
"""
from __future__ import annotations

from ember.core.errors import ArgumentValueError, DimensionError, ShapeError
from ember.core.layout import contiguous_strides, numel
from ember.core.spec import TensorSpec

from . import shape_rule
from .common import check_int_list, check_tensor, preserved_strides, strides_of, with_layout, wrap_dim, wrap_dims


def _offset(t: TensorSpec) -> int:
    return t.storage_offset()


def infer_size(op, shape, total: int) -> tuple[int, ...]:
    """Resolve one -1 in `shape` so that it holds `total` elements (PyTorch's infer_size)."""
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise ArgumentValueError(f"{op.name}(): only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise ArgumentValueError(f"{op.name}(): invalid shape dimension {s}")
        else:
            known *= s
    if infer is not None:
        if known == 0 or total % known:
            raise ShapeError(f"{op.name}(): shape '{list(shape)}' is invalid for input of size {total}")
        shape = tuple(shape[:infer]) + (total // known,) + tuple(shape[infer + 1:])
    elif known != total:
        raise ShapeError(f"{op.name}(): shape '{list(shape)}' is invalid for input of size {total}")
    return tuple(shape)


def view_strides(old_shape, old_strides, new_shape):
    """Strides viewing `old` as `new_shape`, or None when no view exists (ATen's computeStride)."""
    if numel(old_shape) == 0:
        # arbitrary; as ATen: the old strides when the shape is unchanged, else contiguous
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) else contiguous_strides(new_shape)
    if not old_shape:
        return (1,) * len(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


@shape_rule("same")
def same(op, self, *rest):
    """clone and the scatters: a new tensor laid out like `self` (memory_format=preserve)."""
    check_tensor(op, self, "input")
    strides = preserved_strides(self)
    return (self._data.shape, self._dtype) if strides is None else with_layout(self._data.shape, self._dtype, strides)


@shape_rule("contiguous")
def contiguous(op, self, *rest):
    check_tensor(op, self, "input")
    return (self._data.shape, self._dtype)


@shape_rule("as_strided")
def as_strided(op, self, size, stride, storage_offset=None):
    check_tensor(op, self, "input")
    size = check_int_list(op, size, "size")
    stride = check_int_list(op, stride, "stride")
    if len(size) != len(stride):
        raise ShapeError(f"{op.name}(): mismatch in length of strides and shape")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise ArgumentValueError(f"{op.name}(): negative sizes or strides are not supported, got size {list(size)} "
                                 f"and stride {list(stride)}")
    offset = _offset(self) if storage_offset is None else storage_offset
    if numel(size):
        needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        have = self._storage.nbytes // self._dtype.itemsize
        if needed > have:
            raise ShapeError(f"{op.name}(): setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                             f"{offset} require {needed * self._dtype.itemsize} bytes, but the storage holds "
                             f"{have * self._dtype.itemsize}")
    return (size, self._dtype, stride, offset)


@shape_rule("view")
def view(op, self, size):
    check_tensor(op, self, "input")
    size = infer_size(op, check_int_list(op, size, "size"), numel(self._data.shape))
    strides = view_strides(self._data.shape, strides_of(self), size)
    if strides is None:
        raise ShapeError(f"{op.name}(): view size is not compatible with input tensor's size and stride (at least "
                         "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return (size, self._dtype, strides, _offset(self))


@shape_rule("view_dtype")
def view_dtype(op, self, dtype):
    """Tensor.view(dtype): the same bytes read as `dtype`. With another element size the last dim
    (stride 1) shrinks or grows by the size ratio; torch's checks and messages."""
    from .common import type_name

    check_tensor(op, self, "input")
    shape, strides, offset = tuple(self._data.shape), strides_of(self), _offset(self)
    if 0 in shape:
        strides = contiguous_strides(shape)       # an empty tensor's, as torch reports them
    old, new = self._dtype.itemsize, dtype.itemsize
    if old == new:
        return (shape, dtype, strides, offset)
    what = f"to view {type_name(self._dtype)} as {type_name(dtype)} (different element sizes)"
    if not shape:
        raise ArgumentValueError(f"self.dim() cannot be 0 {what}")
    if strides[-1] != 1:
        raise ArgumentValueError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if new < old:
        ratio = old // new
        return (shape[:-1] + (shape[-1] * ratio,), dtype, tuple(s * ratio for s in strides[:-1]) + (1,),
                offset * ratio)
    ratio = new // old
    if shape[-1] % ratio:
        raise ArgumentValueError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
    if offset % ratio:
        raise ArgumentValueError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
    for i, stride in enumerate(strides[:-1]):
        if stride % ratio:
            raise ArgumentValueError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {stride}")
    return (shape[:-1] + (shape[-1] // ratio,), dtype, tuple(s // ratio for s in strides[:-1]) + (1,),
            offset // ratio)


@shape_rule("reshape")
def reshape(op, self, shape):
    check_tensor(op, self, "input")
    return (infer_size(op, check_int_list(op, shape, "shape"), numel(self._data.shape)), self._dtype)


@shape_rule("ravel")
def ravel(op, self):
    check_tensor(op, self, "input")
    return ((numel(self._data.shape),), self._dtype)


@shape_rule("permute")
def permute(op, self, dims):
    check_tensor(op, self, "input")
    dims = check_int_list(op, dims, "dims")
    ndim = len(self._data.shape)
    if len(dims) != ndim:
        raise ShapeError(f"{op.name}(): number of dimensions in the tensor input does not match the length of the "
                         f"desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    dims = wrap_dims(op, dims, ndim, "dims")
    shape, strides = self._data.shape, strides_of(self)
    return (tuple(shape[d] for d in dims), self._dtype, tuple(strides[d] for d in dims), _offset(self))


def movedim_order(op, ndim: int, source, destination) -> tuple[int, ...]:
    """The permutation movedim makes: each `source` dim goes to its `destination` place, the other dims fill
    the other places in their order (torch's checks and messages)."""
    source, destination = check_int_list(op, source, "source"), check_int_list(op, destination, "destination")
    if len(source) != len(destination):
        raise ArgumentValueError(f"{op.name}(): movedim: Invalid source or destination dims: source "
                                 f"({list(source)} dims) should contain the same number of dims as destination "
                                 f"({list(destination)} dims)")
    wrapped = []
    for name, dims in (("source", source), ("destination", destination)):
        w = tuple(wrap_dim(op, d, ndim, name) for d in dims)
        if len(set(w)) != len(w):
            raise ArgumentValueError(f"{op.name}(): movedim: repeated dim in `{name}` ({list(dims)})")
        wrapped.append(w)
    if ndim == 0:                       # a 0-d tensor's one valid dim (0 or -1) moves nowhere
        return ()
    order: list = [None] * ndim
    for src, dst in zip(*wrapped):
        order[dst] = src
    rest = iter(d for d in range(ndim) if d not in wrapped[0])
    return tuple(d if d is not None else next(rest) for d in order)


@shape_rule("movedim")
def movedim(op, self, source, destination):
    check_tensor(op, self, "input")
    order = movedim_order(op, len(self._data.shape), source, destination)
    shape, strides = self._data.shape, strides_of(self)
    return (tuple(shape[d] for d in order), self._dtype, tuple(strides[d] for d in order), _offset(self))


@shape_rule("transpose")
def transpose(op, self, dim0, dim1):
    check_tensor(op, self, "input")
    ndim = len(self._data.shape)
    a = wrap_dim(op, dim0, ndim, "dim0")
    b = wrap_dim(op, dim1, ndim, "dim1")
    shape, strides = list(self._data.shape), list(strides_of(self))
    if ndim:
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
    return (tuple(shape), self._dtype, tuple(strides), _offset(self))


@shape_rule("t")
def t(op, self):
    check_tensor(op, self, "input")
    ndim = len(self._data.shape)
    if ndim > 2:
        raise ShapeError(f"{op.name}(): t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return (tuple(reversed(self._data.shape)), self._dtype)


@shape_rule("expand")
def expand(op, self, size):
    check_tensor(op, self, "input")
    size = check_int_list(op, size, "size")
    shape, strides = self._data.shape, strides_of(self)
    if len(size) < len(shape):
        raise ShapeError(f"{op.name}(): the number of sizes provided ({len(size)}) must be greater or equal to the "
                         f"number of dimensions in the tensor ({len(shape)})")
    lead = len(size) - len(shape)
    out_shape, out_strides = [], []
    for i, target in enumerate(size):
        if i < lead:
            if target < 0:
                raise ShapeError(f"{op.name}(): The expanded size of the tensor ({target}) isn't allowed in a leading, "
                                 "non-existing dimension " f"{i}")
            out_shape.append(target)
            out_strides.append(0)
            continue
        have = shape[i - lead]
        if target == -1:
            target = have
        if have == target:
            out_shape.append(have)
            out_strides.append(strides[i - lead])
        elif have == 1:
            out_shape.append(target)
            out_strides.append(0)
        else:
            raise ShapeError(f"{op.name}(): The expanded size of the tensor ({target}) must match the existing size "
                             f"({have}) at non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                             f"{list(shape)}")
    return (tuple(out_shape), self._dtype, tuple(out_strides), _offset(self))


@shape_rule("squeeze")
def squeeze(op, self, dim=None):
    check_tensor(op, self, "input")
    shape, strides = self._data.shape, strides_of(self)
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = {d for d in wrap_dims(op, dim, len(shape)) if shape and shape[d] == 1}
    keep = [i for i in range(len(shape)) if i not in dims]
    return (tuple(shape[i] for i in keep), self._dtype, tuple(strides[i] for i in keep), _offset(self))


@shape_rule("unsqueeze")
def unsqueeze(op, self, dim):
    check_tensor(op, self, "input")
    shape, strides = list(self._data.shape), list(strides_of(self))
    d = wrap_dim(op, dim, len(shape) + 1)
    new_stride = strides[d] * shape[d] if d < len(shape) else 1
    shape.insert(d, 1)
    strides.insert(d, new_stride)
    return (tuple(shape), self._dtype, tuple(strides), _offset(self))


def slice_bounds(size: int, start, end, step) -> tuple[int, int, int]:
    """PyTorch's clamping of slice bounds to [0, size]; returns (start, end, length)."""
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, (end - start + step - 1) // step


@shape_rule("slice")
def slice_(op, self, dim=0, start=None, end=None, step=1):
    check_tensor(op, self, "input")
    shape, strides = list(self._data.shape), list(strides_of(self))
    if not shape:
        raise DimensionError(f"{op.name}(): slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(op, dim, len(shape))
    if step <= 0:
        raise ArgumentValueError(f"{op.name}(): slice step must be positive")
    begin, _, length = slice_bounds(shape[d], start, end, step)
    offset = _offset(self) + begin * strides[d]
    shape[d] = length
    strides[d] *= step
    return (tuple(shape), self._dtype, tuple(strides), offset)


@shape_rule("select")
def select(op, self, dim, index):
    check_tensor(op, self, "input")
    shape, strides = list(self._data.shape), list(strides_of(self))
    if not shape:
        raise DimensionError(f"{op.name}(): select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(op, dim, len(shape))
    size = shape[d]
    if not -size <= index < size:
        raise DimensionError(f"{op.name}(): index {index} out of range for tensor of size {shape} at dimension {d}")
    if index < 0:
        index += size
    offset = _offset(self) + index * strides[d]
    del shape[d]
    del strides[d]
    return (tuple(shape), self._dtype, tuple(strides), offset)
