"""Kernels written against the array-module API (numpy and cupy).

`make_kernels(xp, native)` returns {op name: kernel} for the array module `xp`, with
`native(ember_dtype)` mapping dtypes to `xp` dtypes. The cpu backend calls it with numpy; the
cuda plugin (ember-cuda) with cupy, and overrides only what differs. The random kernels draw from
the generator the dispatcher passes them (the device's default one when the caller gave none).
"""
from __future__ import annotations

from typing import Callable

from . import activations, attention, factories, indexing, linalg, losses, pointwise, reductions, shape, sorting_scans
from . import nn_layers  # convolution, pooling, normalization
from . import optimizers  # fused optimizer updates


def make_kernels(xp, native: Callable) -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in (pointwise, reductions, shape, linalg, indexing, sorting_scans, nn_layers, activations, attention,
                   optimizers, factories, losses):
        kernels.update(module.make(xp, native))
    return kernels
