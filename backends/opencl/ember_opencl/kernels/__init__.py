"""The opencl kernels, family by family: {op name: kernel} for the backend.

Each kernel module holds module-level kernels `fn(backend, spec, *op_args)` and ends with its
table `KERNELS`; `make_kernels(backend)` binds every table to the backend (kernels/table.py).
Names starting with `_device_` are never registered as ops.
"""
from __future__ import annotations

from typing import Callable

from . import indexing, linalg, memory, optimizers, pointwise, random, reductions, sorting
from .table import bind

MODULES = (memory, pointwise, reductions, linalg, random, indexing, sorting, optimizers)


def make_kernels(backend) -> dict[str, Callable]:
    kernels: dict[str, Callable] = {}
    for module in MODULES:
        kernels.update(bind(module.KERNELS, backend))
    return {name: k for name, k in kernels.items() if not name.startswith("_device_")}
