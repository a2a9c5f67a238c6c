"""Kernels written against the array-module API (numpy and cupy).

Each module holds module-level kernel functions and ends with its kernel table `KERNELS`
(context.py says how a kernel receives its array module). `KERNEL_TABLE` is all of them,
unbound: {op name: function or Family}. `make_kernels(xp, native)` binds it to the array
module `xp`, with `native(ember_dtype)` mapping dtypes to `xp` dtypes: the cpu backend calls
it with numpy; the cuda plugin (ember-cuda) with cupy, and overrides only what differs. The
random kernels draw from the generator the dispatcher passes them (the device's default one
when the caller gave none).
"""
from __future__ import annotations

from typing import Callable

from . import activations, attention, factories, indexing, linalg, losses, pointwise, reductions, shape, sorting_scans
from . import nn_layers  # convolution, pooling
from . import normalization  # layer norm, batch norm
from . import optimizers  # fused optimizer updates
from . import recurrent  # the recurrent layer op's time loop
from . import special  # lgamma, digamma, polygamma, erfinv (scipy.special)
from . import factorizations  # Cholesky, triangular solves (numpy/scipy LAPACK)
from . import sparse  # sparse COO products (scipy.sparse)
from .context import ArrayModule, bind

MODULES = (pointwise, reductions, shape, linalg, indexing, sorting_scans, nn_layers, normalization, activations,
           attention, optimizers, factories, losses, recurrent, special, factorizations, sparse)
KERNEL_TABLE: dict = {name: entry for module in MODULES for name, entry in module.KERNELS.items()}


def make_kernels(xp, native: Callable) -> dict[str, Callable]:
    """{op name: kernel(spec, *args)} for the array module `xp`."""
    return bind(KERNEL_TABLE, ArrayModule(xp, native))
