"""How a kernel module's table is bound to the backend.

Every opencl kernel is a module-level function whose first parameter is the backend (the
plugin's `OpenCLBackend`: `new_array`, `from_host`, `to_host`, `device`), even where a kernel
does not use it, so every entry binds the same way: `def neg(backend, spec, a)`. Each kernel
module ends with `KERNELS = {op name: entry}`. An entry is the kernel function, or a `Family`
when one generic kernel serves several ops that differ only in constants given before `spec`
(`Family(binary, "x0 * x1")` is `mul`: `binary(backend, "x0 * x1", spec, a, b)`).
`bind(table, backend)` turns a table into {op name: callable(spec, *args)}, which is what
the backend's `kernels()` hook returns. A kernel can be called and stepped through on its own:
`pointwise.add(backend, spec, a, b)`.

This is the opencl plugin's own binding: a backend imports only ember.core and ember.dispatcher,
never another backend's package.
"""
from __future__ import annotations

import functools
import types
from typing import Callable


class Family:
    """A kernel table entry for one op of a family: `kernel(backend, *constants, spec, *args)`."""

    __slots__ = ("kernel", "constants")

    def __init__(self, kernel: Callable, *constants) -> None:
        self.kernel = kernel
        self.constants = constants

    def __repr__(self) -> str:
        return f"Family({self.kernel.__qualname__}, {', '.join(map(repr, self.constants))})"


def bind(table: dict, backend) -> dict[str, Callable]:
    """{op name: kernel(spec, *args)}: each entry of `table` given `backend` (a bound method or a
    partial costs no more per call than the closures the factories returned)."""
    bound: dict[str, Callable] = {}
    for name, entry in table.items():
        if isinstance(entry, Family):
            bound[name] = functools.partial(entry.kernel, backend, *entry.constants)
        else:
            bound[name] = types.MethodType(entry, backend)
    return bound
