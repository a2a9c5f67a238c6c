"""Tensor.resize_: a new shape for a tensor, in place, over the registry ops empty, as_strided
and copy_ (so it runs on every backend, meta included; no primitive of its own).

It is a Tensor method rather than a registry op because the registry's in-place contract is
"self now holds the out-of-place result" (same shape; the meta backend's generic in-place kernel
returns self unchanged), which cannot express a change of self's own sizes and storage.

As PyTorch: the result is contiguous from self's storage offset; when it fits in the storage
the storage is kept (shrinking, or growing within it); otherwise a larger storage holds the old
one's elements, in order, followed by uninitialised ones. Tensors that require grad cannot be
resized. One difference, from ember's storage model (a storage is its backend array, which
cannot be reallocated under other tensors): other views of the old storage keep the old
storage when self grows past it, where PyTorch's views follow the reallocated storage.
"""
from __future__ import annotations

from ember.core.errors import AutogradError, MissingKernelError, ShapeError

from .tensor import Tensor


def _contiguous(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def resize_(self: Tensor, *size, memory_format=None) -> Tensor:
    """Give `self` the shape `size` (contiguous strides) in place; returns `self`."""
    from ember._generated import functions as F

    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise ShapeError(f"resize_: Trying to create tensor with negative dimension: {list(size)} (argument 'size')")
    if memory_format is not None:
        raise MissingKernelError("resize_: only the default (contiguous) memory_format is supported "
                                 "(argument 'memory_format')")
    if self.requires_grad:
        raise AutogradError("resize_: cannot resize variables that require grad")
    numel = 1
    for s in size:
        numel *= s
    item = self._dtype.itemsize
    offset = self.storage_offset()
    strides = _contiguous(size)
    plain = self.detach()
    if (offset + numel) * item <= self._storage.nbytes:
        view = F.as_strided(plain, size, strides, offset)          # the same storage
        self._data = view._data
        return self
    old = self._storage.nbytes // item
    fresh = F.empty((offset + numel,), dtype=self._dtype, device=self._device)
    if old:
        F.copy_(F.slice(fresh, 0, 0, old), F.as_strided(plain, (old,), (1,), 0))
    view = F.as_strided(fresh, size, strides, offset)
    self._data = view._data
    self._storage = fresh._storage
    self._base = None
    return self


Tensor.resize_ = resize_
