"""`t[index]` and `t[index] = value` through view ops.

Basic indexing (integers, slices, None, Ellipsis) produces views via select, slice and
unsqueeze; assignment copies into such a view, so autograd sees an in-place copy_.
Advanced indices (integer or boolean tensors, lists, numpy arrays) are applied after the
basic ones, as PyTorch does: integers select first (so `x[0, :, [0, 1]]` has shape
(3, 2) for x of shape (2, 3, 4), unlike NumPy), then one `index.Tensor` call (a copy)
reads, and one `index_put_` on the basic view writes, so autograd works through both.

Integers are anything with `__index__` (Python ints, numpy integers, 0-dim integer
tensors). A bool (`t[True]`, `t[False]`) adds a dim of size 1 indexed by [0] or by nothing: an
advanced index, which broadcasts with the others (`t[True, True]` has one new dim, as in PyTorch).
A uint8 index tensor is a mask (with PyTorch's deprecation warning). As in PyTorch, an out-of-bounds message names the position of
the index in the index tuple, and several `...` are accepted (each stands for the
unindexed dimensions, as PyTorch counts them).
"""
from __future__ import annotations

import warnings

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError, DimensionError, IndexOutOfRangeError
from ember.core.symint import SymInt


def _normalize(index) -> tuple:
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and any(isinstance(i, (list, tuple, slice)) or i is None or i is Ellipsis
                                       or hasattr(i, "_data") for i in index):
        return tuple(index)     # PyTorch's (deprecated) reading of a list holding sequences or slices
    return (index,)


def _advanced(item, Tensor, device):
    """An index tensor for a list/tuple/numpy array index (int64, or bool for bools)."""
    from .factories import tensor

    if isinstance(item, Tensor):
        return item
    try:
        out = tensor(item, device=device)
    except Exception:  # noqa: BLE001 - anything not convertible is not a valid index
        raise IndexOutOfRangeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         f"indices (got {type(item).__name__})") from None
    if out.numel() == 0 and out.dtype.is_floating_point:
        from ember.core import dtype as _dt
        from ember._generated import functions as F

        out = F._to_copy(out, dtype=_dt.int64)
    return out


def _as_index(item, Tensor):
    """The Python int an integer-like index stands for, or None if it is not one."""
    if isinstance(item, bool):
        return None
    if isinstance(item, (int, SymInt)):
        return item
    if isinstance(item, Tensor):
        if item.dim() == 0 and item.dtype.category == 1 and item.dtype.name != "uint8":    # uint8: a mask
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

    items = list(_normalize(index))
    for k, i in enumerate(items):
        if isinstance(i, range):       # a range indexes as the list of its values (torch's reading)
            i = list(i)
        if isinstance(i, list) or (not isinstance(i, (Tensor, tuple, slice, bool, int)) and hasattr(i, "__array__")
                                   and getattr(i, "ndim", 0) > 0):
            items[k] = _advanced(i, Tensor, t.device)
    ndim = t.dim()
    specified = _dims_indexed(items, ndim, Tensor)
    out = t
    dim = 0
    touched = False
    adv = {}                   # dim of `out` -> advanced index tensor starting there
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
            # torch's reading: a new dim of size 1, indexed by [0] (True) or by nothing (False), an advanced
            # index that broadcasts with the others (t[True, True] is (1, ...), t[True, False] (0, ...))
            out = F.unsqueeze(out, dim)
            adv[dim] = F.zeros((1 if item else 0,), dtype=_dt.int64, device=out.device)
            dim += 1
            touched = True
            continue
        if isinstance(item, slice):
            start, stop, step = _slice_bounds(item)
            if start is not None or stop is not None or step != 1:
                out = F.slice(out, dim, start, stop, step)
                touched = True
            dim += 1
            continue
        i = _as_index(item, Tensor)
        if i is not None:
            size = out.shape[dim]
            if not -size <= i < size:
                raise IndexOutOfRangeError(f"index {i} is out of bounds for dimension {position} with size {size}")
            out = F.select(out, dim, i)
            touched = True
            continue
        if isinstance(item, Tensor):
            item = _index_tensor_on(t, item)
            if item.dtype.category == 0 and item.dim() == 0:      # a 0-dim mask adds a dimension
                out = F.unsqueeze(out, dim)
                item = F.reshape(item, (1,))
            adv[dim] = item
            dim += item.dim() if _is_mask(item) else 1
            touched = True
            continue
        if isinstance(item, tuple):
            items_t = _advanced(list(item), Tensor, t.device)
            adv[dim] = items_t
            dim += items_t.dim() if items_t.dtype.category == 0 else 1
            touched = True
            continue
        raise IndexOutOfRangeError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                         f"are valid indices (got {type(item).__name__})")
    if adv:
        indices = _index_list(adv)
        if for_assignment:
            return out, indices
        return F.index(out, indices)
    if not touched:
        out = F.slice(out, 0, None, None, 1) if ndim else F.view(out, ())
    return (out, None) if for_assignment else out


def _is_mask(i) -> bool:
    """A bool (or, as in torch, uint8) index tensor: it indexes as many dims as it has."""
    return i.dtype.category == 0 or i.dtype.name == "uint8"


def _dims_indexed(items: list, ndim: int, Tensor: type) -> int:
    """How many of the tensor's dims the index items consume, checked against `ndim` (torch's errors)."""
    specified = 0
    for i in items:
        if i is not None and i is not Ellipsis and not isinstance(i, bool):
            specified += i.dim() if isinstance(i, Tensor) and _is_mask(i) else 1
    if specified > ndim:
        if ndim == 0:
            first = next(i for i in items if i is not None and i is not Ellipsis and not isinstance(i, bool))
            if isinstance(first, slice):
                raise DimensionError("slice() cannot be applied to a 0-dim tensor.")
            raise DimensionError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise DimensionError(f"too many indices for tensor of dimension {ndim}")
    return specified


def _slice_bounds(item: slice) -> tuple:
    """(start, stop, step) of a slice index, ints or None; a step of 1 when none is given."""
    start, stop, step = (_as_int(v, "slice") for v in (item.start, item.stop, item.step))
    step = 1 if step is None else step
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    return start, stop, step


def _index_tensor_on(t, item):
    """An index tensor checked (an integer or bool dtype) and on `t`'s device (a cpu index moves there)."""
    if not (item.dtype.category <= 1):
        raise IndexOutOfRangeError("tensors used as indices must be long, int, byte or bool tensors")
    if item.dtype.name == "uint8":          # a mask, as in torch, which deprecates it
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                      UserWarning, stacklevel=4)
        item = item.to(_dt.bool)
    if item.device != t.device and item.device.type != "cpu":
        raise IndexOutOfRangeError(f"indices should be either on {t.device.type} or on the same device as the "
                         f"indexed tensor ({item.device})")
    return item.to(t.device) if item.device != t.device else item


def _index_list(adv: dict) -> list:
    """`index`'s argument: per dim of the (viewed) tensor, its advanced index or None, up to the last."""
    indices, d = [], 0
    last = max(adv)
    while d <= last:
        it = adv.get(d)
        indices.append(it)
        d += 1 if it is None or not _is_mask(it) else max(it.dim(), 1)
    return indices


def _as_int(v, what):
    if v is None or (isinstance(v, (int, SymInt)) and not isinstance(v, bool)):
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

    view, indices = getitem(t, index, for_assignment=True)
    if indices is not None:
        _put(view, indices, value)
        return
    if isinstance(value, (bool, int, float)):
        F.fill_(view, value)
        return
    if not isinstance(value, Tensor):
        value = tensor(value, dtype=t.dtype, device=t.device)
    while value.dim() > view.dim() and value.shape[0] == 1:
        value = F.squeeze(value, [0])
    F.copy_(view, value)


def _put(view, indices, value) -> None:
    """`view[indices] = value` for advanced `indices`: index_put_ into the basic view (a
    masked_fill_ for one full-shape mask and a number, as PyTorch does)."""
    from ember._generated import functions as F
    from .factories import tensor
    from .tensor import Tensor

    if isinstance(value, (bool, int, float)) and len(indices) == 1 and indices[0] is not None \
            and indices[0].dtype.category == 0 \
            and tuple(indices[0].shape) == tuple(view.shape):
        F.masked_fill_(view, indices[0], value)
        return
    if not isinstance(value, Tensor):
        value = tensor(value, dtype=view.dtype, device=view.device)
    if value.dtype is not view.dtype:
        value = F._to_copy(value, dtype=view.dtype)
    if value.device != view.device:
        value = value.to(view.device)
    while value.dim() > 0 and value.shape[0] == 1:
        value = F.squeeze(value, [0])
    F.index_put_(view, indices, value)
