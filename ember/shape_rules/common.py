"""Helpers shared by the shape rules: dimension wrapping, broadcasting, argument checks."""
from __future__ import annotations

import operator

from ember.core.errors import ArgumentTypeError, ArgumentValueError, DimensionError, MissingKernelError, ShapeError
from ember.core import dtype as _dt
from ember.core.layout import contiguous_strides
from ember.core.spec import TensorSpec
from ember.core.symint import SymInt

NUMBER_TYPES = (bool, int, float)


def as_int(op, value, arg: str, what: str = "int") -> int:
    """An integer argument: a Python int, or anything integral PyTorch accepts (numpy
    integers, 0-dim integer tensors, objects with __index__); bools and floats are refused. A
    symbolic size (a SymInt, in a dynamic-shape export) stays symbolic."""
    if value.__class__ is int or value.__class__ is SymInt:
        return value
    if not isinstance(value, bool) and not isinstance(value, float) and hasattr(value, "__index__"):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be {what}, not {type(value).__name__}")


def wrap_dim(op, dim, ndim: int, arg: str = "dim") -> int:
    """`dim` in [-ndim, ndim) as a non-negative index (0-d tensors accept -1 and 0)."""
    if dim.__class__ is not int:
        dim = as_int(op, dim, arg)
    bound = ndim if ndim > 0 else 1
    if dim < -bound or dim >= bound:
        raise DimensionError(f"{op.name}(): Dimension out of range (expected to be in range of "
                             f"[{-bound}, {bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def wrap_dims(op, dims, ndim: int, arg: str = "dim") -> tuple[int, ...]:
    """A tuple of distinct wrapped dims (an int is one dim)."""
    if not isinstance(dims, (tuple, list)):
        dims = (as_int(op, dims, arg, "int or tuple of ints"),)
    out = tuple(wrap_dim(op, d, ndim, arg) for d in dims)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op.name}(): dim {out} appears multiple times in the list of dims")
    return out


def broadcast_shapes(op, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of several shapes, with PyTorch's error message."""
    result = shapes[0]
    for other in shapes[1:]:
        if other == result:
            continue
        n = max(len(result), len(other))
        a = (1,) * (n - len(result)) + tuple(result)
        b = (1,) * (n - len(other)) + tuple(other)
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                raise ShapeError(f"{op.name}(): The size of tensor a ({x}) must match the size of tensor b ({y}) "
                                 f"at non-singleton dimension {i}")
        result = tuple(out)
    return tuple(result)


def shape_of(t: TensorSpec) -> tuple[int, ...]:
    """A tensor argument's shape as a tuple of ints."""
    return tuple(t._data.shape)


def check_tensor(op, value, arg: str) -> TensorSpec:
    if not isinstance(value, TensorSpec):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be Tensor, not {type(value).__name__}")
    return value


_INT_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-2 ** 15, 2 ** 15 - 1),
               "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}
_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def check_fits(op, value, dtype) -> None:
    """A Python number written into an integer tensor must fit its type (as PyTorch checks). An int for an
    unsigned type may be negative down to minus its largest value: it wraps (`fill_(-1)` of uint8 is 255), as
    c10's overflow check allows; the kernels wrap it (`wrap_unsigned`)."""
    bounds = _INT_RANGES.get(dtype.name)
    if bounds is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if isinstance(value, int) and bounds[0] == 0:
        bounds = (-bounds[1], bounds[1])
    if value != value or not bounds[0] <= value <= bounds[1]:
        raise ArgumentValueError(f"{op.name}(): value cannot be converted to type {_C_NAMES[dtype.name]} without "
                                 f"overflow (got {value!r} for a tensor of dtype {dtype.name})")


def check_no_internal_overlap(op, self: TensorSpec) -> None:
    """An op writing into `self` must not write one memory location twice (a stride-0 dim)."""
    shape = self._data.shape
    if 0 in shape:
        return
    for size, stride in zip(shape, self._data.strides):
        if stride == 0 and size > 1:
            raise ArgumentValueError(f"{op.name}(): unsupported operation: more than one element of the written-to "
                                     "tensor refers to a single memory location. Please clone() the tensor before "
                                     "performing the operation.")


def check_no_partial_overlap(op, out: TensorSpec, other: TensorSpec) -> None:
    """An operand must not share only part of the memory an op writes (PyTorch's partial-overlap check):
    both dense tensors of one storage whose byte ranges intersect without being the same. Operands whose
    layouts are not dense pass, as in PyTorch (too hard to tell)."""
    storage = getattr(out, "_storage", None)
    if storage is None or getattr(other, "_storage", None) is not storage or not out.numel() or not other.numel():
        return
    if not (out.is_contiguous() and other.is_contiguous()):
        return
    a0, b0 = out.storage_offset() * out.element_size(), other.storage_offset() * other.element_size()
    a1, b1 = a0 + out.numel() * out.element_size(), b0 + other.numel() * other.element_size()
    if (a0, a1) != (b0, b1) and a0 < b1 and b0 < a1:
        raise ArgumentValueError(f"{op.name}(): unsupported operation: some elements of the input tensor and the "
                                 "written-to tensor refer to a single memory location. Please clone() the tensor "
                                 "before performing the operation.")


def check_int_list(op, value, arg: str) -> tuple[int, ...]:
    """A tuple of ints from a list/tuple/Size of integral values, or one integral value."""
    if not isinstance(value, (tuple, list)):
        return (as_int(op, value, arg, "tuple of ints"),)
    return tuple(v if v.__class__ is int else as_int(op, v, arg, "tuple of ints") for v in value)


def check_dtype_arg(op, value, arg: str = "dtype"):
    if value is not None and not isinstance(value, _dt.dtype):
        raise ArgumentTypeError(f"{op.name}(): argument '{arg}' must be ember.dtype, not {type(value).__name__}")
    return value


def strides_of(t: TensorSpec) -> tuple[int, ...]:
    item = t._dtype.itemsize
    return tuple(s // item for s in t._data.strides)


def type_name(dtype) -> str:
    """PyTorch's scalar-type name in messages ("Float", "Long", ...)."""
    return _SCALAR_NAMES.get(dtype.name, dtype.name)


_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}


# the dtypes a kernel lacks, for each value of the registry's `dtypes` (OpDef.dtypes; None: all)
KERNEL_LACKS = {
    "floating": frozenset(d for d in _dt.ALL_DTYPES if not d.is_floating_point),
    "float_double": frozenset(d for d in _dt.ALL_DTYPES if d not in (_dt.float32, _dt.float64)),   # no half types
    "integral": frozenset(d for d in _dt.ALL_DTYPES if d.is_floating_point),    # integers and bool: bitwise ops
    "integer": frozenset(d for d in _dt.ALL_DTYPES if d.category != 1),         # integers, no bool: gcd, lcm
    "not_bool": frozenset({_dt.bool}),
    # int8/16/32/64 only (tril_indices, triu_indices)
    "signed_integral": frozenset(d for d in _dt.ALL_DTYPES if d not in (_dt.int8, _dt.int16, _dt.int32, _dt.int64)),
}


def check_kernel_dtype(op, dtype, detail: str = "") -> None:
    """PyTorch's error for a dtype the op's kernel lacks (registry `dtypes`), naming the kernel its message
    names (`dtype_error_kernel`): '"GeluKernelImpl" not implemented for 'Long''."""
    if op.dtypes is not None and dtype in KERNEL_LACKS[op.dtypes]:
        raise MissingKernelError(f'{op.name}(): "{op.dtype_error_kernel}" not implemented for '
                                 f"'{type_name(dtype)}'{detail}")


# ------------------------------------------------------------------------ output layouts
# New tensors are contiguous unless PyTorch gives them another layout; then a shape rule
# returns (shape, dtype, strides) and backends that can allocate strided memory (meta, cpu
# copies) follow it. Only the layout of non-contiguous inputs is ever propagated, so the
# common all-contiguous call pays one flag test per operand.

def is_contiguous_data(data) -> bool:
    """Whether a native array is C-contiguous (size-1 dimensions and empty arrays ignored).

    Uses the array's `flags.c_contiguous` (numpy, cupy, pyopencl and meta arrays have it),
    else its shape and byte strides.
    """
    try:
        return data.flags.c_contiguous
    except AttributeError:
        pass
    shape, strides = data.shape, data.strides
    if 0 in shape:
        return True
    acc = data.itemsize
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != acc:
            return False
        acc *= n
    return True


def _canonical_strides(data) -> bool:
    """Whether a contiguous array has exactly the strides `empty` gives (size-1 dimensions too)."""
    acc = data.itemsize
    for n, st in zip(reversed(data.shape), reversed(data.strides)):
        if st != acc:
            return False
        acc *= n if n > 1 else 1
    return True


def non_overlapping_and_dense(shape, strides) -> bool:
    """ATen's is_non_overlapping_and_dense: a permutation of a contiguous layout."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d] if shape[d] >= 2 else 0))
    required = 1
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != required:
            return False
        required *= shape[d]
    return True


def iteration_order(ndim: int, should_swap) -> list[int]:
    """TensorIterator's dimension order, fastest-moving first: an insertion sort of the
    dimensions (initially last to first) by `should_swap(d0, d1)` (>0 swap, <0 stop, 0 keep)."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    return perm


def infer_dense_strides(shape, strides) -> tuple[int, ...]:
    """ATen's infer_dense_strides: dense strides ordering the dimensions as `strides` do.

    Dimensions sort by stride (ties: the smaller size first; stride-0 dimensions stay put),
    exactly as TensorIterator orders them.
    """
    ndim = len(shape)
    def should_swap(d0, d1) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    perm = iteration_order(ndim, should_swap)
    out = [0] * ndim
    acc = 1
    for d in perm:
        out[d] = acc
        if shape[d] > 1:
            acc *= shape[d]
    return tuple(out)


def preserved_strides(t: TensorSpec):
    """Strides of `empty_like(t)` / `clone(t)` (memory_format=preserve), or None when contiguous.

    A dense, non-overlapping input keeps its strides exactly; any other strided input gets
    dense strides in the same dimension order (ATen's infer_dense_strides).
    """
    data = t._data
    shape = data.shape
    if 1 not in shape:
        try:
            if data.flags.c_contiguous:
                return None
        except AttributeError:
            if is_contiguous_data(data):
                return None
    strides = strides_of(t)
    if non_overlapping_and_dense(shape, strides):      # strides of size-1 dimensions are kept too
        return strides
    return infer_dense_strides(shape, strides)


def trivial_layout(shape, tensors, scalars: bool = False) -> bool:
    """Whether a pointwise op over `tensors` surely has a contiguous output (the cheap test).

    True when every operand is contiguous and, unless all have the output's shape (the
    TensorIterator fast setup; `scalars`: Python numbers are 0-d operands too), has
    canonical strides on its size-1 dimensions too.
    """
    shape = tuple(shape)
    same = not scalars or not shape
    for t in tensors:
        data = t._data
        if not is_contiguous_data(data):
            return False
        # lengths first: a tuple compares items before lengths, and a symbolic size must not be compared
        # with another tensor's unrelated size (a needless guard)
        if same and (len(data.shape) != len(shape) or data.shape != shape):
            same = False
    if not same:
        for t in tensors:
            data = t._data
            if 1 in data.shape and not _canonical_strides(data):
                return False
    return True


def _is_contiguous(shape, strides) -> bool:
    expected = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and st != expected:
            return False
        expected *= n
    return True


def iterator_strides(shape, tensors, dtypes=None, scalars: bool = False) -> tuple[int, ...] | None:
    """Strides PyTorch's TensorIterator gives the new output of a pointwise op, or None.

    `tensors` are the tensor operands in argument order; `dtypes` the dtype each is
    promoted to (None: as is); `scalars` whether Python numbers take part as 0-d operands
    (PyTorch wraps them as tensors for most ops). None means contiguous. Follows TensorIteratorBase: an
    input of another dtype is first converted (`.to()`, which keeps a dense layout and
    makes other layouts dense in the same order); then the fast setup (every operand
    contiguous, or all non-overlapping and dense with equal strides and no broadcasting),
    else reorder_dimensions on the operands' strides (broadcast dimensions ignored) and
    strides compatible with the permuted shape.
    """
    shape = tuple(shape)
    if trivial_layout(shape, tensors, scalars):
        return None
    ndim = len(shape)
    if ndim <= 1:
        return None
    layouts = []
    for k, t in enumerate(tensors):
        tshape, tstrides = tuple(t._data.shape), strides_of(t)
        if dtypes is not None and dtypes[k] is not None and dtypes[k] is not t._dtype and \
                not non_overlapping_and_dense(tshape, tstrides):
            tstrides = infer_dense_strides(tshape, tstrides)
        layouts.append((tshape, tstrides))
    if all(ts == shape for ts, _ in layouts) and not scalars:
        if all(_is_contiguous(ts, st) for ts, st in layouts):
            return None
        first = layouts[0][1]
        if all(non_overlapping_and_dense(ts, st) and st == first for ts, st in layouts):
            return None if _is_contiguous(shape, first) else first
    op_strides = []
    for tshape, tstrides in layouts:
        off = ndim - len(tshape)
        st = [0] * ndim
        for i, (n, s) in enumerate(zip(tshape, tstrides)):
            st[off + i] = 0 if (n == 1 and shape[off + i] != 1) else s
        op_strides.append(st)

    def should_swap(d0, d1) -> int:
        for st in op_strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = iteration_order(ndim, should_swap)
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    out = [0] * ndim
    acc = 1
    for p in perm:
        out[p] = acc
        acc *= shape[p]
    return tuple(out)


def dense_like(t: TensorSpec, dtype):
    """The output layout of ops that allocate like their input (ATen's infer_dense_strides)."""
    shape = tuple(t._data.shape)
    return with_layout(shape, dtype, infer_dense_strides(shape, strides_of(t)) if len(shape) > 1 else None)


def with_layout(shape, dtype, strides):
    """An output spec: (shape, dtype) when contiguous, else (shape, dtype, strides)."""
    if strides is None or tuple(strides) == contiguous_strides(shape):
        return (shape, dtype)
    return (shape, dtype, tuple(strides))
