"""default_collate / default_convert: torch.utils.data's batching of samples into tensors."""
from __future__ import annotations

import collections.abc
from typing import Any

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data: Any) -> Any:
    """Numpy arrays (not of strings/objects) and numpy scalars become tensors, recursively
    through dicts, namedtuples and sequences; everything else is left as it is."""
    import numpy as np
    from ember.frontend.factories import as_tensor
    from ember.frontend.tensor import Tensor

    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        if np.asarray(data).dtype.kind in "USO":
            return data
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch, recursively, as torch's default_collate:
    tensors are stacked along a new first dimension, numpy arrays become stacked tensors,
    floats a float64 tensor, ints an int64 tensor (bools a bool tensor), strings stay a
    list, dicts collate per key, namedtuples per field, other sequences per position
    (tuples come back as lists, like torch's)."""
    import numpy as np
    from ember._generated import functions as F
    from ember.frontend.factories import as_tensor, tensor
    from ember.core import dtype as _dt
    from ember.frontend.tensor import Tensor

    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return F.stack(list(batch), 0)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if elem.dtype.kind in "USO":
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        if elem.shape == ():
            return as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return tensor(batch, dtype=_dt.bool)
    if isinstance(elem, float):
        return tensor(batch, dtype=_dt.float64)
    if isinstance(elem, int):
        return tensor(batch, dtype=_dt.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if _is_namedtuple(elem):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))
