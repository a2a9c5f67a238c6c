"""Tensor's shape conveniences written over the registry's views: `T`, `mT`, `mH`, `H`, `flatten`, `view_as`,
`expand_as`, `reshape_as`, and `view`, which also takes a dtype (the op view.dtype)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ember._generated.tensor_methods import TensorMethods
from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError, ShapeError

if TYPE_CHECKING:
    from .tensor import Tensor


class ShapeConveniences:
    """Mixed into Tensor ahead of the generated methods (its `view` extends theirs)."""

    __slots__ = ()

    @property
    def T(self) -> "Tensor":
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self) -> "Tensor":
        """The last two dimensions swapped: a batch of matrices transposed (a 0-d tensor is its own)."""
        return self._matrices("mT") if self.dim() != 0 else self.view(())

    @property
    def mH(self) -> "Tensor":
        """The conjugate transpose of a batch of matrices: `mT`, as ember's dtypes are all real."""
        return self._matrices("mH") if self.dim() != 0 else self.view(())

    @property
    def H(self) -> "Tensor":
        """The conjugate transpose of a matrix (a 0-d tensor is its own)."""
        if self.dim() not in (0, 2):
            raise ShapeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
        return self.mH

    def _matrices(self, name: str) -> "Tensor":
        if self.dim() < 2:
            raise ShapeError(f"tensor.{name} is only supported on matrices or batches of matrices. "
                             f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        from .tensor import _wrap_dim as wrap_dim

        shape = self._data.shape
        if not shape:
            return self.reshape(1)
        s = wrap_dim("flatten", start_dim, len(shape))
        e = wrap_dim("flatten", end_dim, len(shape))
        if s > e:
            from ember.core.errors import ArgumentValueError

            raise ArgumentValueError("flatten() has invalid args: start_dim cannot come after end_dim")
        n = 1
        for d in shape[s:e + 1]:
            n *= d
        return self.reshape(*shape[:s], n, *shape[e + 1:])

    def view_as(self, other: "Tensor") -> "Tensor":
        return self.view(other.shape)

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    def view(self, *size, **size_kw) -> "Tensor":
        """The same data with a new shape (`view(2, 3)`, `view((2, 3))`), or the same bytes read as
        another dtype (`view(ember.int32)`, `view(dtype=...)`: the op view.dtype)."""
        if (size and size[0].__class__ is _dt.dtype) or "dtype" in size_kw:
            from ember.dispatcher.operator import ALL_OPS

            dtype = size[0] if size else size_kw.pop("dtype")
            if len(size) > 1 or size_kw:
                raise ArgumentTypeError("view(): takes either a dtype or a shape, not both")
            return ALL_OPS["view.dtype"].dispatch((self, dtype))
        return TensorMethods.view(self, *size, **size_kw)

    def reshape_as(self, other: "Tensor") -> "Tensor":
        return self.reshape(other.shape)
