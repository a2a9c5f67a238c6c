"""Hand-written public functions whose Python signatures are not an ATen schema's
(torch/functional.py's): `split` (an int or a list of sizes), `einsum` (operands as
varargs), `norm` (p may be 'fro'), `nonzero` (as_tuple) and `flatten` (Tensor.flatten's reshape).
Each forwards to registry ops.
"""
from __future__ import annotations



from ember._generated import functions as F
from ember.core.errors import ArgumentTypeError, ArgumentValueError
from ember.frontend.tensor import Tensor
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


Tensor.split = _tensor_split
Tensor.norm = _tensor_norm
Tensor.nonzero = _tensor_nonzero

