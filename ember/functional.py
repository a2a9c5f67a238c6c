"""Hand-written public functions whose Python signatures are not an ATen schema's
(torch/functional.py's): `split` (an int or a list of sizes), `einsum` (operands as
varargs), `tensordot` (dims as a count or a pair of lists), `block_diag`, `cartesian_prod` and `chain_matmul` (tensors as varargs), `unravel_index`, `norm` (p may be 'fro'), `nonzero` (as_tuple), `flatten` (Tensor.flatten's reshape) and
`broadcast_tensors` / `broadcast_shapes` / `broadcast_to` (expand views to one shape), `meshgrid` and
`atleast_1d/2d/3d` (views too), `hstack`/`vstack`/`dstack`/`column_stack` (cat of those views),
`tensor_split`/`hsplit`/`vsplit`/`dsplit` (narrow views), `unique`
and `unique_consecutive`, the comparisons answering one Python bool, `allclose` and `equal`, and the
module-level forms of Tensor's metadata questions (`is_floating_point`, `is_nonzero`, ...).
Each forwards to registry ops.
"""
from __future__ import annotations

import warnings

from ember._generated import functions as F
from ember.core import dtype as _dt
from ember.core.errors import (ArgumentListError, ArgumentTypeError, ArgumentValueError, DeviceMismatchError,
                               DimensionError, DTypeError, ShapeError)
from ember.frontend.tensor import Size, Tensor
from ember.frontend.bindings_support import bool_arg
from ember.frontend.torch_function import handles_torch_function


@handles_torch_function
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `tensor` in chunks of `split_size_or_sections` (an int) or of the listed sizes."""
    if isinstance(split_size_or_sections, (list, tuple)):
        return F.split_with_sizes(tensor, split_size_or_sections, dim)
    return F._dispatch_split_Tensor((tensor, split_size_or_sections, dim))


@handles_torch_function
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """torch.flatten: dims `start_dim`..`end_dim` merged into one (a view when the strides allow)."""
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"flatten(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input.flatten(start_dim, end_dim)


@handles_torch_function
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation: `einsum("ij,jk->ik", a, b)` or `einsum("ij,jk", [a, b])`."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return F._dispatch_einsum((equation, list(operands), None))


@handles_torch_function
def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix of the tensors (0-d as 1x1, vectors as one row): torch.block_diag."""
    return F._dispatch_block_diag((list(tensors),))


@handles_torch_function
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each vector, one per row: torch.cartesian_prod."""
    return F._dispatch_cartesian_prod((list(tensors),))


@handles_torch_function
def unravel_index(indices: Tensor, shape) -> tuple[Tensor, ...]:
    """torch.unravel_index: the coordinates in `shape` of each flat index (modulo the shape's size, negative
    indices counting from the end, as torch's floor arithmetic gives them), one int64 tensor per dim."""
    if not isinstance(indices, Tensor) or indices.dtype.category != 1:
        got = indices.dtype if isinstance(indices, Tensor) else type(indices).__name__
        raise ArgumentTypeError(f"expected 'indices' to be integer dtype, but got {got}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ArgumentListError(f"'shape' cannot have negative values, but got {shape}")
    coords, stride = [], 1
    for size in reversed(shape):
        coords.append(F.remainder(F.floor_divide(indices, stride), size) if size else F.mul(indices, 0))
        stride *= size
    return tuple(F._to_copy(c, dtype=_dt.int64) for c in reversed(coords))


@handles_torch_function
def chain_matmul(*matrices: Tensor) -> Tensor:
    """torch.chain_matmul (deprecated there for linalg.multi_dot, with its warning): the product of the matrices."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise ArgumentValueError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise ShapeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    return F.clone(matrices[0]) if len(matrices) == 1 else F.linalg_multi_dot(list(matrices))


@handles_torch_function
def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """torch.tensordot: the sum of products over the contracted dims. `dims` is a count n (a's last n dims
    with b's first n), a pair of dim lists (or of single dims), or a tensor of either form."""
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.dim() == 0 else dims.tolist()
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise ArgumentListError(f"tensordot(): dims must be a pair of dim lists, got {len(dims)} elements")
        for k, d in enumerate(dims):
            if not isinstance(d, (list, tuple)):
                raise ArgumentTypeError(f"tensordot(): argument 'dims_{'self' if k == 0 else 'other'}' (position "
                                        f"{3 + k}) must be tuple of ints, not {type(d).__name__}")
        da, db = list(dims[0]), list(dims[1])
    elif not isinstance(dims, int):
        raise ArgumentValueError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                                 f"list[list[int]] containing two lists, but got dims={dims}")
    elif dims < 0:
        raise ArgumentValueError(f"tensordot expects dims >= 0, but got dims={dims}")
    elif dims > min(a.dim(), b.dim()):
        raise ArgumentValueError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
    else:
        da, db = list(range(-dims, 0)), list(range(dims))
    return F._dispatch_tensordot((a, b, da, db))


@handles_torch_function
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None, dtype=None) -> Tensor:
    """torch.norm: the vector p-norm over `dim` (all elements when None); 'fro' is the 2-norm.

    p: a number (0, 1, 2, inf, -inf, any p > 0) or 'fro'; 'nuc' (a matrix norm) is not supported.
    """
    if out is not None:
        raise ArgumentTypeError("norm(): the `out` argument is not supported")
    if keepdim.__class__ is not bool:           # torch's parser checks every argument's class first
        bool_arg(keepdim, "norm", "keepdim", 4)
    if dtype is not None:
        from ember.core.type_promotion import promote_types

        if promote_types(input.dtype, dtype) is not dtype:
            raise ArgumentValueError(f"norm(): the dtype of the input ({input.dtype}) should be convertible without "
                                     f"narrowing to the specified dtype ({dtype})")
        input = F._to_copy(input, dtype=dtype)
    if isinstance(p, str):
        if p != "fro":
            raise ArgumentValueError(f"norm(): p={p!r} is not supported (only numbers and 'fro')")
        p = 2
    if dim is None:
        if not keepdim:
            return F._dispatch_norm_Scalar((input, p))
        dim = []
    if isinstance(dim, int):
        dim = [dim]
    if not isinstance(dim, (list, tuple)):
        raise ArgumentTypeError(f"norm(): argument 'dim' must be tuple of ints, not {type(dim).__name__}")
    return F._dispatch_norm_ScalarOpt_dim((input, p, list(dim), keepdim))


def _tensor_split(self: Tensor, split_size, dim: int = 0) -> tuple[Tensor, ...]:
    """Tensor.split: an int chunk size or a list of sizes."""
    return split(self, split_size, dim)


def _tensor_norm(self: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Tensor.norm: see ember.norm."""
    return norm(self, p, dim, keepdim, dtype=dtype)


@handles_torch_function
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the nonzero elements: one row per element (an (n, ndim) tensor), or with
    `as_tuple=True` one 1-D tensor per dimension (aten's nonzero_numpy; a 0-d input counts as 1-D)."""
    if as_tuple:
        return tuple(F.nonzero_numpy(input))
    return F.nonzero(input)


def _tensor_nonzero(self: Tensor, *, as_tuple: bool = False):
    """Tensor.nonzero: see ember.nonzero."""
    return nonzero(self, as_tuple=as_tuple)


@handles_torch_function
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of `input` is close to `other`'s, as `isclose` decides (same dtype, shapes
    that broadcast): one Python bool, so it reads the result back from the device."""
    return bool(F.all(F.isclose(input, other, rtol, atol, equal_nan)).item())


@handles_torch_function
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape and equal elements (compared after type promotion, as
    `==` compares them; a NaN equals nothing): one Python bool. Shapes that differ are not an error, as in
    torch; they answer False."""
    for position, (name, t) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"equal(): argument '{name}' (position {position}) must be Tensor, not "
                                    f"{type(t).__name__}")
    if input.shape != other.shape:
        return False
    return bool(F.all(F.eq(input, other)).item())


def _tensor_allclose(self: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                     equal_nan: bool = False) -> bool:
    """Tensor.allclose: see ember.allclose."""
    return allclose(self, other, rtol, atol, equal_nan)


def _tensor_equal(self: Tensor, other: Tensor) -> bool:
    """Tensor.equal: see ember.equal."""
    return equal(self, other)


Tensor.split = _tensor_split
Tensor.norm = _tensor_norm
Tensor.nonzero = _tensor_nonzero
Tensor.allclose = _tensor_allclose
Tensor.equal = _tensor_equal



def broadcast_shapes(*shapes) -> Size:
    """The shape the given shapes broadcast to (an int counts as a 1-d shape), with torch's error."""

    result: list[int] = []
    for k, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for i, n in enumerate(shape[::-1], 1):
            have = result[-i]
            if n != have and 1 not in (n, have):
                raise ShapeError(f"Attempting to broadcast a dimension of length {n} at -{i}! Mismatching argument "
                                   f"at index {k} had {shape}; but expected shape should be broadcastable to {result}")
            result[-i] = have if n == 1 else n
    return Size(result)


@handles_torch_function
def broadcast_tensors(*tensors) -> tuple[Tensor, ...]:
    """Views of the tensors expanded to their common broadcast shape."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"broadcast_tensors(): expected Tensors, got {type(t).__name__}")
    shape: list[int] = []
    for t in tensors:
        dims = tuple(t.shape)
        shape = [1] * (len(dims) - len(shape)) + shape if len(dims) > len(shape) else shape
        for i, n in enumerate(dims[::-1], 1):
            if n != shape[-i] and 1 not in (n, shape[-i]):
                raise ShapeError(f"The size of tensor a ({shape[-i]}) must match the size of tensor b ({n}) at "
                                   f"non-singleton dimension {len(shape) - i}")
            shape[-i] = shape[-i] if n == 1 else n
    return tuple(t.expand(tuple(shape)) for t in tensors)


@handles_torch_function
def broadcast_to(input: Tensor, size) -> Tensor:
    """`input` expanded to `size` (a view)."""
    return input.expand(size)


def _tensor_sequence(name: str, tensors: tuple) -> tuple:
    """varargs tensors, or one list or tuple of them (torch's functions take both spellings)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise ArgumentTypeError(f"{name}(): expected a sequence of Tensors, but item {k} is "
                                    f"{type(t).__name__}")
    return tensors


@handles_torch_function
def meshgrid(*tensors, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 0-d or 1-d tensors: the k-th output holds the k-th input along dim k, expanded
    over the others (views). `indexing="xy"` swaps the roles of the first two inputs (the first varies
    along dim 1), as numpy's default; left out, it is "ij" with torch's warning that it will be required."""
    tensors = _tensor_sequence("meshgrid", tensors)
    if not tensors:
        raise ArgumentValueError("meshgrid(): meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentValueError(f'meshgrid(): indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.dim() > 1:
            raise ShapeError(f"meshgrid(): Expected 0D or 1D tensor in the tensor list but got a {t.dim()}-D tensor")
        if t.dtype is not tensors[0].dtype:
            raise DTypeError("meshgrid(): meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise DeviceMismatchError("meshgrid(): meshgrid expects all tensors to have the same device")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors = (tensors[1], tensors[0]) + tensors[2:]
    sizes = tuple(t.numel() for t in tensors)
    grids = []
    for k, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[k] = sizes[k]
        grids.append(F.expand(F.reshape(t, view), sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _at_least_shape(shape: tuple, ndim: int) -> tuple:
    """numpy's atleast_nd shapes: a 0-d tensor all ones; a vector a row, (1, n), and with three dims
    (1, n, 1); a matrix (m, n, 1)."""
    if len(shape) >= ndim:
        return shape
    if ndim < 3:
        return (1,) * (ndim - len(shape)) + shape
    return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]


def _at_least(name: str, ndim: int, tensors: tuple):
    """atleast_1d/2d/3d: each tensor viewed with at least `ndim` dims; one tensor in, one out, else a tuple."""
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    out = []
    for t in _tensor_sequence(name, tensors):
        shape = tuple(t.shape)
        target = _at_least_shape(shape, ndim)
        out.append(t if target == shape else F.reshape(t, target))
    return out[0] if single else tuple(out)


@handles_torch_function
def atleast_1d(*tensors):
    """Each tensor with at least one dimension (a 0-d tensor becomes a one-element vector)."""
    return _at_least("atleast_1d", 1, tensors)


@handles_torch_function
def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (a vector becomes one row)."""
    return _at_least("atleast_2d", 2, tensors)


@handles_torch_function
def atleast_3d(*tensors):
    """Each tensor with at least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1))."""
    return _at_least("atleast_3d", 3, tensors)


def _tensor_argument(name: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise ArgumentTypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_floating_point(input: Tensor) -> bool:
    """Whether `input`'s dtype is a floating-point one."""
    return _tensor_argument("is_floating_point", input).is_floating_point()


def is_complex(input: Tensor) -> bool:
    """Whether `input`'s dtype is complex (never, in ember)."""
    return _tensor_argument("is_complex", input).is_complex()


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor."""
    return _tensor_argument("is_nonzero", input).is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have one shape."""
    return _tensor_argument("is_same_size", input).is_same_size(other)


def positive(input: Tensor) -> Tensor:
    """`input` itself (unary plus); a bool tensor is refused."""
    return _tensor_argument("positive", input).positive()


def _stack_inputs(name: str, tensors) -> tuple:
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentTypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                                f"{type(tensors).__name__}")
    tensors = _tensor_sequence(name, tuple(tensors))
    if not tensors:
        raise ArgumentValueError(f"{name}(): {name} expects a non-empty TensorList")
    return tensors


@handles_torch_function
def hstack(tensors) -> Tensor:
    """The tensors side by side: concatenated along dim 1 (dim 0 for vectors and 0-d tensors)."""
    parts = _at_least("hstack", 1, (_stack_inputs("hstack", tensors),))
    return F.cat(list(parts), 0 if parts[0].dim() == 1 else 1)


@handles_torch_function
def vstack(tensors) -> Tensor:
    """The tensors one above the other: each at least 2-d (a vector a row), concatenated along dim 0."""
    return F.cat(list(_at_least("vstack", 2, (_stack_inputs("vstack", tensors),))), 0)


@handles_torch_function
def dstack(tensors) -> Tensor:
    """The tensors stacked in depth: each at least 3-d, concatenated along dim 2."""
    return F.cat(list(_at_least("dstack", 3, (_stack_inputs("dstack", tensors),))), 2)


@handles_torch_function
def column_stack(tensors) -> Tensor:
    """The tensors as columns: a 0-d or 1-d tensor becomes one column, (n, 1); concatenated along dim 1."""
    parts = [F.reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t for t in _stack_inputs("column_stack", tensors)]
    return F.cat(parts, 1)


@handles_torch_function
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None):
    """The distinct elements of `input` in ascending order (with `dim`, its distinct slices along `dim`, in
    lexicographic order), and, when asked, where each element landed among them (`return_inverse`) and how
    often each occurs (`return_counts`): a tensor, or a tuple of those asked for in that order. The output is
    sorted whatever `sorted` says (torch leaves the order unspecified when it is False). NaNs are all
    distinct, and come last, as in torch."""
    return _unique("unique", input, True, return_inverse, return_counts, dim)


@handles_torch_function
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """`unique` of each run of equal consecutive elements (or slices along `dim`), in their order."""
    return _unique("unique_consecutive", input, False, return_inverse, return_counts, dim)


def _unique(name: str, input: Tensor, sort: bool, return_inverse: bool, return_counts: bool, dim):
    """The rows of `input` (its elements, or its slices along `dim` flattened), stably sorted column by column
    from the last (lexicographic order) when `sort`; a row starts a group where it differs from the one
    before; the groups' first rows are the output, the running group count maps every row to its group."""
    _tensor_argument(name, input)
    shape = tuple(input.shape)
    if dim is None:
        rows, moved = F.reshape(input, (-1, 1)), None
    else:
        dim = dim + len(shape) if isinstance(dim, int) and -len(shape) <= dim < 0 else dim
        if not isinstance(dim, int) or not 0 <= dim < max(len(shape), 1):
            raise DimensionError(f"{name}(): Dimension out of range (expected to be in range of "
                                 f"[{-max(len(shape), 1)}, {max(len(shape), 1) - 1}], but got {dim})")
        if any(n == 0 for i, n in enumerate(shape) if i != dim) and shape[dim] != 0:
            raise ArgumentValueError(f"{name}(): There are 0 sized dimensions, and they aren't selected, so unique "
                                     "cannot be applied")
        moved = F.movedim(input, dim, 0)
        width = 1
        for size in tuple(moved.shape)[1:]:
            width *= size
        rows = F.reshape(moved, (shape[dim], width))
    n = rows.shape[0]
    order = F.arange(0, n, 1, device=input.device)
    if sort:
        for column in range(rows.shape[1] - 1, -1, -1):
            key = F.index_select(F.select(rows, 1, column), 0, order)
            order = F.index_select(order, 0, F.argsort(key, stable=True))
    ordered = F.index_select(rows, 0, order)
    starts = F.ones((min(n, 1),), dtype=_dt.bool, device=input.device)
    if n > 1:
        differs = F.any(F.ne(F.slice(ordered, 0, 1, n), F.slice(ordered, 0, 0, n - 1)), 1)
        starts = F.cat([starts, differs])
    firsts = F.reshape(F.nonzero(starts), (-1,))
    values = F.index_select(ordered, 0, firsts)
    if moved is None:
        out = F.reshape(values, (-1,))
    else:
        out = F.movedim(F.reshape(values, (values.shape[0],) + tuple(moved.shape[1:])), 0, dim)
    if not (return_inverse or return_counts):
        return out
    result = [out]
    group = F.sub(F.cumsum(starts, 0), 1)
    if return_inverse:
        inverse = F.scatter(F.zeros((n,), dtype=_dt.int64, device=input.device), 0, order, group)
        result.append(F.reshape(inverse, shape) if moved is None else inverse)
    if return_counts:
        counts = F.zeros((firsts.shape[0],), dtype=_dt.int64, device=input.device)
        result.append(F.index_add(counts, 0, group, F.ones((n,), dtype=_dt.int64, device=input.device)))
    return tuple(result)


def _tensor_unique(self: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
                   dim: int | None = None):
    """Tensor.unique: see ember.unique."""
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False,
                               dim: int | None = None):
    """Tensor.unique_consecutive: see ember.unique_consecutive."""
    return unique_consecutive(self, return_inverse, return_counts, dim)


Tensor.unique = _tensor_unique
Tensor.unique_consecutive = _tensor_unique_consecutive


@handles_torch_function
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `input` along `dim`: `indices_or_sections` equal-as-can-be parts when an int (the first
    size % n parts one longer), or the parts between the given indices when a list (a 0-d or 1-d integer
    tensor stands for either)."""
    _tensor_argument("tensor_split", input)
    if input.dim() == 0:
        raise ArgumentValueError("tensor_split(): tensor_split expected at least a 1-dimensional tensor, but got a "
                                 "tensor with 0 dims")
    d = dim + input.dim() if isinstance(dim, int) and dim < 0 else dim
    if not isinstance(d, int) or not 0 <= d < input.dim():
        raise DimensionError(f"tensor_split(): Dimension out of range (expected to be in range of "
                             f"[{-input.dim()}, {input.dim() - 1}], but got {dim})")
    if isinstance(indices_or_sections, Tensor):
        values = indices_or_sections.tolist()
        indices_or_sections = values if indices_or_sections.dim() == 1 else int(values)
    size = input.shape[d]
    if isinstance(indices_or_sections, (list, tuple)):
        bounds = [0] + [min(max(int(i) if i >= 0 else int(i) + size, 0), size) for i in indices_or_sections] + [size]
    else:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ArgumentValueError(f"tensor_split(): number of sections must be larger than 0, got {sections}")
        small, extra = divmod(size, sections)
        bounds = [0]
        for k in range(sections):
            bounds.append(bounds[-1] + small + (1 if k < extra else 0))
    return tuple(F.slice(input, d, start, max(start, end)) for start, end in zip(bounds, bounds[1:]))


def _split_at(name: str, input: Tensor, indices_or_sections, dim: int, min_dims: int) -> tuple[Tensor, ...]:
    """hsplit/vsplit/dsplit: tensor_split along `dim`, an int count having to divide the size evenly."""
    _tensor_argument(name, input)
    if input.dim() < min_dims:
        raise ArgumentValueError(f"{name}(): torch.{name} requires a tensor with at least {min_dims} dimension, but "
                                 f"got a tensor with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int) and (indices_or_sections == 0 or
                                                 input.shape[dim] % indices_or_sections):
        raise ArgumentValueError(f"{name}(): torch.{name} attempted to split along dimension {dim}, but the size of "
                                 f"the dimension {input.shape[dim]} is not divisible by the split_size "
                                 f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


@handles_torch_function
def hsplit(input: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """tensor_split along dim 1 (dim 0 for a vector); an int count must divide the size."""
    return _split_at("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


@handles_torch_function
def vsplit(input: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """tensor_split along dim 0 of a tensor of at least two dims; an int count must divide the size."""
    return _split_at("vsplit", input, indices_or_sections, 0, 2)


@handles_torch_function
def dsplit(input: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """tensor_split along dim 2 of a tensor of at least three dims; an int count must divide the size."""
    return _split_at("dsplit", input, indices_or_sections, 2, 3)


def _tensor_tensor_split(self: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
    """Tensor.tensor_split: see ember.tensor_split."""
    return tensor_split(self, indices_or_sections, dim)


def _tensor_hsplit(self: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """Tensor.hsplit: see ember.hsplit."""
    return hsplit(self, indices_or_sections)


def _tensor_vsplit(self: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """Tensor.vsplit: see ember.vsplit."""
    return vsplit(self, indices_or_sections)


def _tensor_dsplit(self: Tensor, indices_or_sections) -> tuple[Tensor, ...]:
    """Tensor.dsplit: see ember.dsplit."""
    return dsplit(self, indices_or_sections)


Tensor.tensor_split = _tensor_tensor_split
Tensor.hsplit = _tensor_hsplit
Tensor.vsplit = _tensor_vsplit
Tensor.dsplit = _tensor_dsplit
