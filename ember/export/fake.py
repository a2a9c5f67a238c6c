"""Fake tensors: meta storage (shape, dtype, strides, no data) shown to the program with a real device.

An export runs the program once on fakes, so it costs no compute and no memory for the
weights, yet the program sees the devices and dtypes it will run with (`x.device` is the
input's device). Each traced value has two faces: the *meta value* the ops run on (an
ordinary meta tensor: the meta backend computes its shape, dtype and strides, and any
decomposition that allocates does so on meta) and the *fake* the program's Python code holds,
a tensor over the same meta array labelled with the real device. The capture mode (capture.py)
hands ops the meta values and the program the fakes.
"""
from __future__ import annotations

from ember.core.layout import contiguous_strides
from ember.frontend.tensor import Tensor, make_tensor

__all__ = ["meta_like", "labelled", "symbolic_meta"]


def meta_like(t: Tensor) -> Tensor:
    """A meta tensor with `t`'s shape, strides and dtype (and no data)."""
    from ember._generated import functions as F

    return F.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")


def labelled(meta: Tensor, device) -> Tensor:
    """The fake the program sees for the meta value `meta`: the same meta array, shown on `device`."""
    if meta._device == device:
        return meta
    return make_tensor(meta._data, meta._dtype, device, meta._keys, None)


def symbolic_meta(t: Tensor, dims: dict, shape_env, path: str) -> Tensor:
    """A contiguous meta tensor with `t`'s dtype whose dimensions in `dims` ({dimension: Dim}) are
    the dynamic dimensions' symbols (a dynamic-shape export's input)."""
    from ember._generated import functions as F

    shape = tuple(shape_env.create(dims[d], n, (path, d)) if d in dims else n for d, n in enumerate(t.shape))
    return F.empty_strided(shape, contiguous_strides(shape), dtype=t.dtype, device="meta")
