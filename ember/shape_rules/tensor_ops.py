"""Shape rules of joins, copies and matrix products."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import (ArgumentListError, ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError)
from ember.core.spec import TensorSpec
from ember.core.type_promotion import result_type
from ember.core.layout import numel

from . import shape_rule
from .common import (NUMBER_TYPES, as_int, check_fits, check_no_internal_overlap, check_int_list, broadcast_shapes,
                     check_dtype_arg, check_kernel_dtype, check_tensor, preserved_strides, type_name, with_layout,
                     wrap_dim)


def _tensor_list(op, tensors, arg="tensors") -> list[TensorSpec]:
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be tuple of Tensors, not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorSpec):
            raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be tuple of Tensors, but element {i} is "
                                    f"{type(t).__name__}")
    if not tensors:
        raise ArgumentListError(f"{op.name}(): expected a non-empty list of Tensors")
    return list(tensors)


@shape_rule("cat")
def cat(op, tensors, dim=0):
    tensors = _tensor_list(op, tensors)
    # PyTorch skips 1-d empty tensors (legacy behaviour) when checking shapes
    shaped = [t for t in tensors if t._data.shape != (0,)] or tensors[:1]
    ref = shaped[0]._data.shape
    if not ref:
        raise ShapeError(f"{op.name}(): zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(op, dim, len(ref))
    total = 0
    for i, t in enumerate(tensors):
        shape = t._data.shape
        if shape == (0,) and len(ref) != 1:
            continue
        if len(shape) != len(ref):
            raise ShapeError(f"{op.name}(): Tensors must have same number of dimensions: got {len(ref)} and {len(shape)}")
        for j, (a, b) in enumerate(zip(ref, shape)):
            if j != d and a != b:
                raise ShapeError(f"{op.name}(): Sizes of tensors must match except in dimension {d}. Expected size "
                                 f"{a} but got size {b} for tensor number {i} in the list.")
        total += shape[d]
    out = list(ref)
    out[d] = total
    return (tuple(out), result_type(*tensors))


@shape_rule("stack")
def stack(op, tensors, dim=0):
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise ShapeError(f"{op.name}(): stack expects a non-empty TensorList")
    tensors = _tensor_list(op, tensors)
    ref = tensors[0]._data.shape
    d = wrap_dim(op, dim, len(ref) + 1)
    for i, t in enumerate(tensors):
        if t._data.shape != ref:
            raise ShapeError(f"{op.name}(): stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                             f"and {list(t._data.shape)} at entry {i}")
    out = list(ref)
    out.insert(d, len(tensors))
    return (tuple(out), result_type(*tensors))


@shape_rule("copy_")
def copy_(op, self, src, non_blocking=False):
    check_tensor(op, self, "self")
    if not isinstance(src, TensorSpec):
        raise ArgumentTypeError(f"{op.name}(): argument 'src' must be Tensor, not {type(src).__name__}")
    shape = self._data.shape
    if broadcast_shapes(op, [shape, src._data.shape]) != tuple(shape):
        raise ShapeError(f"{op.name}(): output with shape {list(shape)} doesn't match the broadcast shape "
                         f"{list(broadcast_shapes(op, [shape, src._data.shape]))}")
    check_no_internal_overlap(op, self)
    return (shape, self._dtype)


@shape_rule("inplace")
def inplace(op, self, *rest):
    """Ops that fill `self` in place (fill_, random fills)."""
    check_tensor(op, self, "self")
    return (self._data.shape, self._dtype)


@shape_rule("to_copy")
def to_copy(op, self, dtype=None, device=None, non_blocking=False):
    check_tensor(op, self, "input")
    check_dtype_arg(op, dtype)
    strides = preserved_strides(self)
    return (self._data.shape, dtype or self._dtype) if strides is None else \
        with_layout(self._data.shape, dtype or self._dtype, strides)


def _matmul_dtype(op, a: TensorSpec, b: TensorSpec):
    if a._dtype is not b._dtype:
        raise DTypeError(f"{op.name}(): expected m1 and m2 to have the same dtype, but got: {a._dtype.name} != "
                         f"{b._dtype.name}")
    check_kernel_dtype(op, a._dtype)             # the registry's `dtypes`: no bool kernel
    return a._dtype


@shape_rule("mm", reads=("dtypes",))
def mm(op, self, mat2):
    check_tensor(op, self, "input")
    check_tensor(op, mat2, "mat2")
    a, b = self._data.shape, mat2._data.shape
    if len(a) != 2:
        raise ShapeError(f"{op.name}(): self must be a matrix")
    if len(b) != 2:
        raise ShapeError(f"{op.name}(): mat2 must be a matrix")
    if a[1] != b[0]:
        raise ShapeError(f"{op.name}(): mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})")
    return ((a[0], b[1]), _matmul_dtype(op, self, mat2))


@shape_rule("bmm", reads=("dtypes",))
def bmm(op, self, mat2):
    check_tensor(op, self, "input")
    check_tensor(op, mat2, "mat2")
    a, b = self._data.shape, mat2._data.shape
    if len(a) != 3:
        raise ShapeError(f"{op.name}(): batch1 must be a 3D tensor")
    if len(b) != 3:
        raise ShapeError(f"{op.name}(): batch2 must be a 3D tensor")
    if a[0] != b[0]:
        raise ShapeError(f"{op.name}(): batch1 and batch2 must have same number of batches, got {a[0]} and {b[0]}")
    if a[2] != b[1]:
        raise ShapeError(f"{op.name}(): Expected size for first two dimensions of batch2 tensor to be: "
                         f"[{b[0]}, {a[2]}] but got: [{b[0]}, {b[1]}].")
    return ((a[0], a[1], b[2]), _matmul_dtype(op, self, mat2))


@shape_rule("dot", reads=("dtypes",))
def dot(op, self, other):
    """dot and vdot: two 1-D tensors of one size and dtype, a 0-d result (torch's messages name "dot")."""
    check_tensor(op, self, "input")
    check_tensor(op, other, "tensor")
    a, b = self._data.shape, other._data.shape
    if len(a) != 1 or len(b) != 1:
        raise ShapeError(f"{op.name}(): 1D tensors expected, but got {len(a)}D and {len(b)}D tensors")
    if a[0] != b[0]:
        raise ShapeError(f"{op.name}(): inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have "
                         f"the same number of elements, but got {a[0]} and {b[0]} elements respectively")
    if self._dtype is not other._dtype:
        raise DTypeError(f"{op.name}(): dot : expected both vectors to have same dtype, but found "
                         f"{type_name(self._dtype)} and {type_name(other._dtype)}")
    check_kernel_dtype(op, self._dtype)
    return ((), self._dtype)


@shape_rule("matmul", reads=("dtypes",))
def matmul(op, self, other):
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    a, b = self._data.shape, other._data.shape
    if not a or not b:
        raise ShapeError(f"{op.name}(): both arguments to matmul need to be at least 1D, but they are {len(a)}D "
                         f"and {len(b)}D")
    if len(a) == 1 and len(b) == 1:
        if a[0] != b[0]:
            raise ShapeError(f"{op.name}(): inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to "
                             "have the same number of elements, but got " f"{a[0]} and {b[0]} elements respectively")
        return ((), _matmul_dtype(op, self, other))
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if k_a != k_b:
        rows = 1 if len(a) == 1 else a[-2]
        cols = 1 if len(b) == 1 else b[-1]
        raise ShapeError(f"{op.name}(): mat1 and mat2 shapes cannot be multiplied ({rows}x{k_a} and {k_b}x{cols})")
    batch = broadcast_shapes(op, [tuple(a[:-2]), tuple(b[:-2])])
    out = list(batch)
    if len(a) > 1:
        out.append(a[-2])
    if len(b) > 1:
        out.append(b[-1])
    return (tuple(out), _matmul_dtype(op, self, other))      # dtypes after shapes, as torch's kernels check them


@shape_rule("addmm", reads=("dtypes",))
def addmm(op, self, mat1, mat2, beta=1, alpha=1):
    check_tensor(op, self, "input")                 # self first, as torch's parser
    return _with_self(op, self, mm(op, mat1, mat2), beta, alpha)


def _check_integral_scalars(op, dtype, beta, alpha) -> None:
    if not dtype.is_floating_point and (isinstance(alpha, float) or isinstance(beta, float)):
        raise DTypeError(f"{op.name}(): For integral input tensors, argument alpha and beta must not be floating "
                         f"point numbers (got alpha={alpha!r}, beta={beta!r})")


def _expands_to(op, self, shape) -> None:
    """`self` broadcasts to the product's shape without growing it (torch expands self: it may not have more
    dims, nor grow it)."""
    if len(self._data.shape) > len(shape) or broadcast_shapes(op, [self._data.shape, shape]) != tuple(shape):
        raise ShapeError(f"{op.name}(): expand({type_name(self._dtype)}Tensor{{{list(self._data.shape)}}}, "
                         f"size={list(shape)}): self must expand to the product's shape")


@shape_rule("mv", reads=("dtypes",))
def mv(op, self, vec):
    check_tensor(op, self, "input")
    check_tensor(op, vec, "vec")
    a, b = self._data.shape, vec._data.shape
    if len(a) != 2 or len(b) != 1:
        raise ShapeError(f"{op.name}(): vector + matrix @ vector expected, got {len(a)}, {len(b)}")
    if a[1] != b[0]:
        raise ShapeError(f"{op.name}(): size mismatch, got input ({a[0]}), mat ({a[0]}x{a[1]}), vec ({b[0]})")
    return ((a[0],), _matmul_dtype(op, self, vec))


def _with_self(op, self, product, beta, alpha):
    """beta * self + alpha * product's spec: self (a tensor, its caller checked first) of the product's dtype,
    expanding to its shape."""
    _check_integral_scalars(op, product[1], beta, alpha)
    _expands_to(op, self, product[0])
    if self._dtype is not product[1]:
        raise DTypeError(f"{op.name}(): self and the product's operands must have the same dtype, but got "
                         f"{type_name(self._dtype)} and {type_name(product[1])}")
    return product


@shape_rule("addmv", reads=("dtypes",))
def addmv(op, self, mat, vec, beta=1, alpha=1):
    check_tensor(op, self, "input")                 # self first, as torch's parser
    return _with_self(op, self, mv(op, mat, vec), beta, alpha)


@shape_rule("baddbmm", reads=("dtypes",))
def baddbmm(op, self, batch1, batch2, beta=1, alpha=1):
    check_tensor(op, self, "input")                 # self first, as torch's parser
    return _with_self(op, self, bmm(op, batch1, batch2), beta, alpha)


@shape_rule("addbmm", reads=("dtypes",))
def addbmm(op, self, batch1, batch2, beta=1, alpha=1):
    check_tensor(op, self, "input")
    shape, dtype = bmm(op, batch1, batch2)
    return _with_self(op, self, (shape[1:], dtype), beta, alpha)


@shape_rule("addr")
def addr(op, self, vec1, vec2, beta=1, alpha=1):
    """Two vectors' outer product added to `self`; the three dtypes promoted."""
    check_tensor(op, self, "input")
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        check_tensor(op, v, name)
        if len(v._data.shape) != 1:
            raise ShapeError(f"{op.name}(): {name} must be a 1-D tensor, got {len(v._data.shape)}-D")
    shape = (vec1._data.shape[0], vec2._data.shape[0])
    dtype = result_type(self, vec1, vec2)
    if not dtype.is_floating_point and isinstance(alpha, float):
        raise DTypeError(f"{op.name}(): For integral input tensors, argument alpha must not be a floating point "
                         "number.")
    _expands_to(op, self, shape)
    return (shape, dtype)


@shape_rule("inner")
def inner(op, self, other):
    """The last dims contracted: self.shape[:-1] + other.shape[:-1] (a 0-d operand: a broadcast product)."""
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    a, b = tuple(self._data.shape), tuple(other._data.shape)
    if not a or not b:
        return (a or b, result_type(self, other))
    if a[-1] != b[-1]:
        raise ShapeError(f"{op.name}(): inner() the last dimension must match on both input tensors but got shapes "
                         f"{list(a)} and {list(b)}")
    if self._dtype is not other._dtype:
        raise DTypeError(f"{op.name}(): both inputs should have same dtype")
    return (a[:-1] + b[:-1], self._dtype)


@shape_rule("kron")
def kron(op, self, other):
    """Shapes aligned from the right (the shorter padded with ones), sizes multiplied; dtypes promoted."""
    check_tensor(op, self, "input")
    check_tensor(op, other, "other")
    a, b = tuple(self._data.shape), tuple(other._data.shape)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return (tuple(x * y for x, y in zip(a, b)), result_type(self, other))


def _triangle_indices(op, row, col, offset, dtype, lower: bool):
    """(2, N): N counted row by row, each row holding the columns on its side of the diagonal `offset`."""
    check_dtype_arg(op, dtype)
    row, col, offset = (as_int(op, v, name) for v, name in ((row, "row"), (col, "col"), (offset, "offset")))
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise ArgumentValueError(f"{op.name}(): {name} must be non-negative, got{v}")
    out = dtype or _dt.int64
    check_kernel_dtype(op, out)                     # the registry's `dtypes`: signed integers only
    count = sum(min(max(r + offset + 1, 0), col) if lower else col - min(max(r + offset, 0), col) for r in range(row))
    return ((2, count), out)


@shape_rule("tril_indices", reads=("dtypes",))
def tril_indices(op, row, col, offset=0, dtype=None, device=None, requires_grad=False):
    return _triangle_indices(op, row, col, offset, dtype, True)


@shape_rule("triu_indices", reads=("dtypes",))
def triu_indices(op, row, col, offset=0, dtype=None, device=None, requires_grad=False):
    return _triangle_indices(op, row, col, offset, dtype, False)


def _scattered(op, self, src, slice_shape):
    """A copy of `self` (its layout preserved) with a window of `slice_shape` replaced by `src`."""
    if not isinstance(src, TensorSpec):
        raise ArgumentTypeError(f"{op.name}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if tuple(src._data.shape) != tuple(slice_shape):
        raise ShapeError(f"{op.name}(): expected src to have a size equal to the slice of self. src size = "
                         f"{list(src._data.shape)}, slice size = {list(slice_shape)}")
    return with_layout(self._data.shape, self._dtype, preserved_strides(self))


@shape_rule("slice_scatter")
def slice_scatter(op, self, src, dim=0, start=None, end=None, step=1):
    from .views import slice_

    check_tensor(op, self, "input")                  # the arguments' classes first, as torch's parser
    check_tensor(op, src, "src")
    return _scattered(op, self, src, slice_(op, self, dim, start, end, step)[0])


@shape_rule("select_scatter")
def select_scatter(op, self, src, dim, index):
    from .views import select

    check_tensor(op, self, "input")
    check_tensor(op, src, "src")
    return _scattered(op, self, src, select(op, self, dim, index)[0])


@shape_rule("as_strided_scatter")
def as_strided_scatter(op, self, src, size, stride, storage_offset=None):
    """The window is read over `self`'s elements in contiguous order; the result is contiguous."""
    check_tensor(op, self, "input")
    check_tensor(op, src, "src")
    size = check_int_list(op, size, "size")
    stride = check_int_list(op, stride, "stride")
    offset = 0 if storage_offset is None else storage_offset
    if len(size) != len(stride) or any(v < 0 for v in size + stride) or offset < 0:
        raise ShapeError(f"{op.name}(): invalid window: size {list(size)}, stride {list(stride)}, offset {offset}")
    if numel(size) and offset + sum((n - 1) * st for n, st in zip(size, stride)) >= numel(self._data.shape):
        raise ShapeError(f"{op.name}(): the window (size {list(size)}, stride {list(stride)}, offset {offset}) "
                         f"reaches past the {numel(self._data.shape)} elements of the input")
    _scattered(op, self, src, size)
    return (self._data.shape, self._dtype)


@shape_rule("fill")
def fill(op, self, value):
    check_tensor(op, self, "self")
    if not isinstance(value, NUMBER_TYPES) and not (isinstance(value, TensorSpec) and value.ndim == 0):
        raise ArgumentTypeError(f"{op.name}(): argument 'value' must be Number or a 0-dim Tensor, not "
                                f"{type(value).__name__}")
    check_fits(op, value, self._dtype)
    return (self._data.shape, self._dtype)


def _float_fill(op, self, a, b, empty_any_dtype: bool = False):
    """uniform_/normal_: a floating self (the registry's `dtypes`; any dtype for an empty one where
    `empty_any_dtype`: normal_, which fills nothing and checks nothing there, as torch's) and float parameters."""
    check_tensor(op, self, "self")
    if not (empty_any_dtype and numel(self._data.shape) == 0):
        check_kernel_dtype(op, self._dtype)
    for arg, v in zip(op.arg_names[1:3], (a, b)):
        if not isinstance(v, NUMBER_TYPES):
            raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be float, not {type(v).__name__}")
    return (self._data.shape, self._dtype)


@shape_rule("uniform_fill", reads=("dtypes",))
def uniform_fill(op, self, from_=0, to=1, generator=None):
    """uniform_(from, to)."""
    spec = _float_fill(op, self, from_, to)
    if from_ > to:
        raise ArgumentValueError(f"{op.name}(): uniform_ expects to return a [from, to) range, but found "
                                 f"from={from_} > to={to}")
    return spec


@shape_rule("normal_fill", reads=("dtypes",))
def normal_fill(op, self, mean=0, std=1, generator=None):
    """normal_(mean, std)."""
    spec = _float_fill(op, self, mean, std, empty_any_dtype=True)
    if std < 0:
        raise ArgumentValueError(f"{op.name}(): normal expects std >= 0.0, but found std {std}")
    return spec


@shape_rule("random_fill")
def random_fill(op, self, a=None, b=None, generator=None):
    """random_(from, to): integers in [from, to) (to None: up to the dtype's maximum)."""
    check_tensor(op, self, "self")
    if b is not None and a >= b:
        raise ArgumentValueError(f"{op.name}(): random_ expects 'from' to be less than 'to', but got "
                                 f"from={a} >= to={b}")
    bounds = _INT_BOUNDS.get(self._dtype.name)
    if bounds is not None:
        if not bounds[0] <= a <= bounds[1]:
            raise ArgumentValueError(f"{op.name}(): from is out of bounds for {self._dtype.name}")
        if b is not None and not bounds[0] <= b - 1 <= bounds[1]:
            raise ArgumentValueError(f"{op.name}(): to - 1 is out of bounds for {self._dtype.name}")
    return (self._data.shape, self._dtype)


_INT_BOUNDS = {"bool": (0, 1), "uint8": (0, 255), "int8": (-128, 127), "int16": (-2 ** 15, 2 ** 15 - 1),
               "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


@shape_rule("fill_functional")
def fill_functional(op, self, value):
    """fill.Scalar: fill_'s checks; the result keeps self's layout (clone's)."""
    shape, dtype = fill(op, self, value)
    return with_layout(shape, dtype, preserved_strides(self))


@shape_rule("copy_functional")
def copy_functional(op, self, src, non_blocking=False):
    """copy: copy_'s checks; the result keeps self's layout (clone's)."""
    shape, dtype = copy_(op, self, src, non_blocking)
    return with_layout(shape, dtype, preserved_strides(self))
