"""Hand-written public functions whose Python signatures are not an ATen schema's
(torch/functional.py's): `split` (an int or a list of sizes), `einsum` (operands as
varargs), `norm` (p may be 'fro'), `nonzero` (as_tuple), `flatten` (Tensor.flatten's reshape) and
`broadcast_tensors` / `broadcast_shapes` / `broadcast_to` (expand views to one shape), and the
comparisons answering one Python bool, `allclose` and `equal`.
Each forwards to registry ops.
"""
from __future__ import annotations



from ember._generated import functions as F
from ember.core.errors import ArgumentTypeError, ArgumentValueError, ShapeError
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
