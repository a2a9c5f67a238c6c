"""`t[index]` and `t[index] = value` through view ops.

Basic indexing (integers, slices, None, Ellipsis) produces views via select, slice and
unsqueeze; assignment copies into such a view, so autograd sees an in-place copy_. Tensor
(advanced) indices are an operator-coverage item (index / index_put) and raise a clear
NotImplementedError until they land.

Integers are anything with `__index__` (Python ints, numpy integers, 0-dim integer
tensors). A bool index (`t[True]`, `t[False]`) is a 0-dim mask: reading gives a copy,
assigning writes through. As in PyTorch, an out-of-bounds message names the position of
the index in the index tuple, and several `...` are accepted (each stands for the
unindexed dimensions, as PyTorch counts them).
"""
from __future__ import annotations

from ember.errors import ArgumentTypeError, DimensionError


def _normalize(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _as_index(item, Tensor):
    """The Python int an integer-like index stands for, or None if it is not one."""
    if isinstance(item, bool):
        return None
    if isinstance(item, int):
        return item
    if isinstance(item, Tensor):
        if item.dim() == 0 and item.dtype.category == 1:
            return int(item.item())
        return None
    if hasattr(item, "__index__") and not isinstance(item, (list, tuple)):
        try:
            return item.__index__()
        except TypeError:
            return None
    return None


def getitem(t, index, *, for_assignment: bool = False):
    """`t[index]`: a view, except that (as in PyTorch) a bool index makes it a copy."""
    from ember._generated import functions as F
    from .tensor import Tensor

    items = _normalize(index)
    specified = 0
    for i in items:
        if i is not None and i is not Ellipsis and not isinstance(i, bool):
            specified += 1
    ndim = t.dim()
    if specified > ndim:
        if ndim == 0:
            first = next(i for i in items if i is not None and i is not Ellipsis and not isinstance(i, bool))
            if isinstance(first, slice):
                raise DimensionError("slice() cannot be applied to a 0-dim tensor.")
            raise DimensionError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise DimensionError(f"too many indices for tensor of dimension {ndim}")
    out = t
    dim = 0
    touched = False
    copy = False
    for position, item in enumerate(items):
        if item is None:
            out = F.unsqueeze(out, dim)
            dim += 1
            touched = True
            continue
        if item is Ellipsis:
            dim += ndim - specified
            continue
        if isinstance(item, bool):
            out = F.unsqueeze(out, dim)
            if not item:
                out = F.slice(out, dim, 0, 0, 1)
            dim += 1
            touched = True
            copy = True        # torch treats a bool as a (0-dim) mask: advanced indexing copies
            continue
        if isinstance(item, slice):
            start, stop, step = (_as_int(v, "slice") for v in (item.start, item.stop, item.step))
            step = 1 if step is None else step
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            if start is not None or stop is not None or step != 1:
                out = F.slice(out, dim, start, stop, step)
                touched = True
            dim += 1
            continue
        i = _as_index(item, Tensor)
        if i is not None:
            size = out.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {position} with size {size}")
            out = F.select(out, dim, i)
            touched = True
            continue
        if isinstance(item, Tensor):
            if not (item.dtype.category <= 1):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            raise NotImplementedError("indexing with tensors (advanced indexing) is not supported yet; "
                                      "use integers, slices, None and Ellipsis")
        if isinstance(item, (list, tuple)):
            raise NotImplementedError("indexing with sequences (advanced indexing) is not supported yet; "
                                      "use integers, slices, None and Ellipsis")
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                         f"are valid indices (got {type(item).__name__})")
    if not touched:
        out = F.slice(out, 0, None, None, 1) if ndim else F.view(out, ())
    if copy and not for_assignment:
        out = F.clone(out)
    return out


def _as_int(v, what):
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    if isinstance(v, bool):
        return int(v)
    if hasattr(v, "__index__"):
        try:
            return v.__index__()
        except TypeError:
            pass
    raise ArgumentTypeError(f"{what} indices must be integers or None or have an __index__ method, "
                            f"got {type(v).__name__}")


def setitem(t, index, value) -> None:
    from ember._generated import functions as F
    from .factories import tensor
    from .tensor import Tensor

    view = getitem(t, index, for_assignment=True)
    if isinstance(value, (bool, int, float)):
        F.fill_(view, value)
        return
    if not isinstance(value, Tensor):
        value = tensor(value, dtype=t.dtype, device=t.device)
    while value.dim() > view.dim() and value.shape[0] == 1:
        value = F.squeeze(value, [0])
    F.copy_(view, value)
