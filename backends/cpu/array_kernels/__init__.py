"""Kernels written against the array-module API (numpy and cupy).

`make_kernels(xp, native)` returns {op name: kernel} for the array module `xp`, with
`native(ember_dtype)` mapping dtypes to `xp` dtypes. The cpu backend calls it with numpy;
a cupy backend calls it with cupy and overrides only what differs.
"""
from __future__ import annotations

from typing import Callable

from . import activations, factories, indexing, linalg, losses, pointwise, reductions, shape, sorting_scans
from . import nn_layers  # convolution, pooling, normalization


def make_kernels(xp, native: Callable) -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in (pointwise, reductions, shape, linalg, factories, indexing, sorting_scans, nn_layers, activations,
                   losses):
        kernels.update(module.make(xp, native))
    return kernels
