"""Kernels written against the array-module API (numpy and cupy).

`make_kernels(xp, native, device_type)` returns {op name: kernel} for the array module `xp`,
with `native(ember_dtype)` mapping dtypes to `xp` dtypes; `device_type` names the device whose
default random generator the random kernels draw from. The cpu backend calls it with numpy;
the cuda plugin (ember-cuda) with cupy, and overrides only what differs.
"""
from __future__ import annotations

from typing import Callable

from . import activations, attention, factories, indexing, linalg, losses, pointwise, reductions, shape, sorting_scans
from . import nn_layers  # convolution, pooling, normalization
from . import optimizers  # fused optimizer updates


def make_kernels(xp, native: Callable, device_type: str = "cpu") -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in (pointwise, reductions, shape, linalg, indexing, sorting_scans, nn_layers, activations, attention,
                   optimizers):
        kernels.update(module.make(xp, native))
    for module in (factories, losses):          # these draw from the device's default generator
        kernels.update(module.make(xp, native, device_type))
    return kernels
