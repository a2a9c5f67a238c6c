"""`t[index]` and `t[index] = value` through view ops.

Basic indexing (integers, slices, None, Ellipsis) produces views via select, slice and
unsqueeze; assignment copies into such a view, so autograd sees an in-place copy_. Tensor
(advanced) indices are an operator-coverage item (index / index_put) and raise a clear
NotImplementedError until they land.
"""
from __future__ import annotations

from ember.errors import ArgumentTypeError, DimensionError


def _normalize(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def getitem(t, index):
    from ember._generated import functions as F
    from .tensor import Tensor

    items = _normalize(index)
    specified = sum(1 for i in items if i is not None and i is not Ellipsis and not isinstance(i, bool))
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    ndim = t.dim()
    if specified > ndim:
        raise DimensionError(f"too many indices for tensor of dimension {ndim}")
    out = t
    dim = 0
    touched = False
    for item in items:
        if item is None:
            out = F.unsqueeze(out, dim)
            dim += 1
            touched = True
        elif item is Ellipsis:
            dim += ndim - specified
        elif isinstance(item, bool):
            out = F.unsqueeze(out, dim)
            if not item:
                out = F.slice(out, dim, 0, 0, 1)
            dim += 1
            touched = True
        elif isinstance(item, int) or (isinstance(item, Tensor) and item.dim() == 0 and item.dtype.category == 1):
            i = int(item)
            size = out.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            out = F.select(out, dim, i)
            touched = True
        elif isinstance(item, slice):
            start, stop, step = (_as_int(v, "slice") for v in (item.start, item.stop, item.step))
            step = 1 if step is None else step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if start is not None or stop is not None or step != 1:
                out = F.slice(out, dim, start, stop, step)
                touched = True
            dim += 1
        elif isinstance(item, Tensor) or isinstance(item, (list, tuple)):
            raise NotImplementedError("indexing with tensors or sequences (advanced indexing) is not supported yet; "
                                      "use integers, slices, None and Ellipsis")
        else:
            raise ArgumentTypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                                    f"are valid indices (got {type(item).__name__})")
    if not touched:
        out = F.slice(out, 0, None, None, 1) if ndim else F.view(out, ())
    return out


def _as_int(v, what):
    if v is None or isinstance(v, int):
        return v
    if hasattr(v, "__index__"):
        return v.__index__()
    raise ArgumentTypeError(f"{what} indices must be integers or None, got {type(v).__name__}")


def setitem(t, index, value) -> None:
    from ember._generated import functions as F
    from .factories import tensor
    from .tensor import Tensor

    view = getitem(t, index)
    if isinstance(value, (bool, int, float)):
        F.fill_(view, value)
        return
    if not isinstance(value, Tensor):
        value = tensor(value, dtype=t.dtype, device=t.device)
    while value.dim() > view.dim() and value.shape[0] == 1:
        value = F.squeeze(value, [0])
    F.copy_(view, value)
