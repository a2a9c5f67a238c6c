"""The opencl kernels, family by family: {op name: kernel} for the backend."""
from __future__ import annotations

from typing import Callable

from . import indexing, linalg, memory, optimizers, pointwise, random, reductions, sorting


def make_kernels(backend) -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in (memory, pointwise, reductions, linalg, random, indexing, sorting, optimizers):
        kernels.update(module.make(backend))
    return {name: k for name, k in kernels.items() if not name.startswith("_device_")}
