"""The opencl kernels, family by family: {op name: kernel} for the backend."""
from __future__ import annotations

from typing import Callable

from . import linalg, memory, pointwise, reductions


def make_kernels(backend) -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in (memory, pointwise, reductions, linalg):
        kernels.update(module.make(backend))
    return kernels
