"""`TensorSpec`: what a shape rule may read of an operand.

Shape rules (ember/shape_rules/) compute an op's result shape, dtype and strides and check
its arguments. They never see data, and they do not depend on the frontend's Tensor class:
they test operands with `isinstance(x, TensorSpec)` and read only what this class lists.
The frontend's `Tensor` is a TensorSpec; so can be any other value that carries the same
fields (a graph layer's symbolic values, which have a shape and no data).

The fields, all set by the implementing class:

- `_data`: the backend's native array, of which rules read `.shape`, `.strides` (in bytes),
  `.itemsize` and `.ndim`, never its elements (a meta array, with no data, serves);
- `_dtype`: the ember dtype; `_device`: the ember device;
- `_storage.nbytes`: the size of the memory the operand views;
- `storage_offset()`: its offset into that memory, in elements;
- `ndim`, `dtype`, `shape`/`size()`, `numel()`, `dim()`: the usual read-only views of the above;
- `item()`: only for a 0-dim operand that stands for a number (a fill value given as a tensor).
"""
from __future__ import annotations


class TensorSpec:
    """Base class of the values shape rules accept as tensor operands (see the module docstring).
    A plain class (no ABC) so that `isinstance` costs what a builtin class check does."""

    __slots__ = ()
