"""Backend-agnostic implementations: explicit kernels and decompositions.

`@explicit_kernel("op")` registers the one kernel of an op whose registry entry says
`impl: explicit`: it runs below Autograd (the op's own formula is used for gradients) on
any backend lacking a native kernel. `@decomposition("op")` registers the decomposition of
an `impl: composite` op: autograd differentiates through it. Both are written with ember
ops only, so every backend that implements the primitives runs them.
"""
from __future__ import annotations

from typing import Callable

EXPLICIT: dict[str, Callable] = {}
DECOMPOSITIONS: dict[str, Callable] = {}


def explicit_kernel(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        EXPLICIT[name] = fn
        return fn
    return register


def decomposition(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        DECOMPOSITIONS[name] = fn
        return fn
    return register


from . import elementwise, reductions, shape_ops, factories  # noqa: E402,F401  (registration)
