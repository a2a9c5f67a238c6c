"""Operators at run time: the registry's frozen schema plus per-key kernels and a resolution cache.

`OpDef` objects are built by ember/_generated/op_table.py from the registry. Each is an
`OpSchema` (schema.py: the registry's data, frozen) and holds the kernels registered for functionality keys (Mode, Autocast, Autograd) and for backend
keys, and a cache {key set: ready-to-call entry}. Resolving a key set walks the keys from
highest priority down; for a backend key the order is: the backend's own kernel, the op's
explicit kernel, its decomposition, the backend's fallback device, else an error naming
what the backend must implement. Registration anywhere clears every cache.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import os
from typing import Callable, Iterable

from ember.core.errors import ArgumentTypeError

from . import keys as K
from .dispatch import caller_for
from .schema import OpSchema, parameters

_TRACE = os.environ.get("EMBER_DISPATCH_TRACE", "") not in ("", "0")
ALL_OPS: dict[str, "OpDef"] = {}
_SCHEMA_FIELDS = frozenset(f.name for f in dataclasses.fields(OpSchema))


class OpDef(OpSchema):
    """One operator overload at run time: its frozen schema (OpSchema, generated from the registry)
    plus the mutable part: kernels per dispatch key and the resolved-entry cache."""

    __slots__ = ("backward_cls", "shape_rule", "explicit", "decomposition", "checker", "kernels", "functionality",
                 "cache", "dispatch", "method_dispatch", "__weakref__")

    def __init__(self, name: str, **schema_fields) -> None:
        OpSchema.__init__(self, name=name, **schema_fields)
        # wired by ember.frontend.wiring from the registries of the layers above
        self.backward_cls = None
        self.shape_rule: Callable | None = None
        self.explicit: Callable | None = None
        self.decomposition: Callable | None = None
        # `dtypes` and `checks` as one function, built by the shape rules on first use (None until then)
        self.checker: Callable | None = None
        self.kernels: dict[int, tuple[Callable, str]] = {}     # backend key -> (kernel, origin)
        self.functionality: dict[int, Callable] = {}           # Mode/Autocast/Autograd kernels
        self.cache: dict[int, Callable] = {}
        # dispatch(args): the call path for this op (dispatch.call's, written out for its tensor positions)
        self.dispatch: Callable[[tuple], object] = caller_for(self)
        # the same for the op's Tensor method: its errors number the arguments after `self`, as torch's do
        self.method_dispatch: Callable[[tuple], object] = caller_for(self, method=True)
        ALL_OPS[name] = self

    def __setattr__(self, name: str, value) -> None:
        # the schema's fields stay frozen; the kernel table's are set at wiring and registration
        if name in _SCHEMA_FIELDS:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: {self.name}'s schema is frozen "
                                                  "(it comes from ops_registry.yaml)")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"<ember op {self.name}>"

    def __call__(self, *args):
        """Call the op with its arguments positionally, in schema order; trailing ones with a default may be left
        out, as torch.ops.aten's calls may."""
        if len(args) != len(self.arg_names):
            args = _with_defaults(self, args)
        return self.dispatch(args)

    # -- resolution ------------------------------------------------------------------------
    def resolve(self, ks: int) -> Callable:
        """The entry to call for key set `ks`; cached until the next registration."""
        entry = self._resolve_uncached(ks)
        self.cache[ks] = entry
        return entry

    def _resolve_uncached(self, ks: int) -> Callable:
        remaining = ks
        while remaining:
            key = 1 << (remaining.bit_length() - 1)
            below = ks & (key - 1)
            if key & K.FUNCTIONALITY_MASK:
                kernel = self.functionality.get(key)
                if kernel is not None:
                    # a kernel may build a specialised entry per (op, key set), e.g. with the
                    # entry below it resolved once (`make_entry(op, below)`, None: not for this op)
                    make_entry = getattr(kernel, "make_entry", None)
                    entry = make_entry(self, below) if make_entry is not None else None
                    if entry is None:
                        entry = functools.partial(kernel, self, below)
                    return _traced(self, ks, key, kernel.__name__, entry) if _TRACE else entry
                remaining &= ~key
                continue
            entry, origin = _backend_entry(self, key)
            return _traced(self, ks, key, origin, entry) if _TRACE else entry
        raise RuntimeError(f"{self.name}: no dispatch key in key set {K.keyset_names(ks)}; "
                           "expected at least one tensor argument or a device")


def _backend_entry(op: OpDef, key: int) -> tuple[Callable, str]:
    from . import runners  # runners import dispatch, which imports this module
    found = op.kernels.get(key)
    if found is not None:
        kernel, origin = found
        return runners.writing_lists(op, runners.native_runner(op, key, kernel)), origin
    if op.explicit is not None:
        return runners.writing_lists(op, runners.python_runner(op, key, op.explicit)), "explicit kernel"
    if op.decomposition is not None:
        body = runners.python_runner(op, key, op.decomposition)
        if op.mutated:          # an in-place twin ("op, then copy_"): the backend may run some calls in place
            body = runners.with_fast_entry(op, key, body)
        return runners.writing_lists(op, body), "decomposition"
    fallback = runners.fallback_runner(op, key)
    if fallback is not None:
        return fallback, "fallback"
    return runners.missing_kernel(op, key), "missing"


def _traced(op: OpDef, ks: int, key: int, origin: str, entry: Callable) -> Callable:
    import sys

    line = f"[ember dispatch] {op.name:<22} keys={K.keyset_names(ks):<26} -> {K.key_name(key)} ({origin})"

    def traced(args):
        print(line, file=sys.stderr)
        return entry(args)

    return traced


def invalidate_caches(ops: Iterable[OpDef] | None = None) -> None:
    """Forget the resolved entries of `ops` (default: every op; called whenever a kernel is registered).
    An op's entries embed its own kernels only (a composite calls other ops through the dispatcher),
    so swapping some ops' kernels needs only their caches cleared."""
    for op in (ALL_OPS.values() if ops is None else ops):
        op.cache.clear()


def register_kernel(op_name: str, backend_key: int, kernel: Callable, origin: str = "native kernel") -> None:
    try:
        op = ALL_OPS[op_name]
    except KeyError:
        raise KeyError(f"cannot register a kernel for unknown op {op_name!r}") from None
    op.kernels[backend_key] = (kernel, origin)
    invalidate_caches()


def replace_kernels(backend_key: int, changes: dict) -> dict:
    """Set `backend_key`'s kernel of each op in `changes` ({op: (kernel, origin)}, or None to remove it)
    and return what each op had (None: nothing), so the caller can put it back. Only these ops'
    resolved entries are forgotten. For a backend that swaps some of its kernels while it runs (the
    meta plugin, while ember.memory tracks)."""
    previous = {}
    for op, entry in changes.items():
        previous[op] = op.kernels.pop(backend_key, None) if entry is None else op.kernels.get(backend_key)
        if entry is not None:
            op.kernels[backend_key] = entry
    invalidate_caches(changes)
    return previous


def report_workspace(backend_key: int, declaring, sink: Callable) -> dict:
    """Swap `backend_key`'s kernels of the ops in `declaring.workspace_ops` (a Backend) for ones that, after
    the kernel returns, call `sink(declaring.workspace(op name, arrays), number of outputs)`: the scratch that
    backend's kernel allocates inside the call (before the outputs become storages). Returns what
    `replace_kernels` returns, to put back. ember.memory reports a tracked device's own kernels (the
    backend declares for itself) and, on meta, a predicted device's (the target declares for meta's)."""
    wrapped = {}
    for name in declaring.workspace_ops:
        op = ALL_OPS.get(name)
        if op is None or backend_key not in op.kernels:
            continue
        kernel, origin = op.kernels[backend_key]

        def with_workspace(spec, *arrays, kernel=kernel, name=name):
            out = kernel(spec, *arrays)
            sink(declaring.workspace(name, arrays), sum(o is not None for o in out) if out.__class__ is tuple else 1)
            return out
        wrapped[op] = (with_workspace, f"{origin} + {declaring.device_type} workspace")
    return replace_kernels(backend_key, wrapped)


def register_functionality(key: int, kernel: Callable, ops=None) -> None:
    """Register `kernel(op, below_ks, args)` for a functionality key on `ops` (default all)."""
    for op in (ops if ops is not None else ALL_OPS.values()):
        op.functionality[key] = kernel
    invalidate_caches()


def primitive_ops() -> list[str]:
    """The ops every backend must implement natively."""
    return sorted(n for n, op in ALL_OPS.items() if op.impl == "primitive")


def _with_defaults(op: "OpDef", args: tuple) -> tuple:
    """`args` completed with the schema's defaults for the trailing arguments left out; a TypeError naming the
    schema's arguments when a required one is missing, there are too many, or a default is not a literal."""
    params = parameters(op.schema)
    if len(args) < len(params):
        defaults = params[len(args):]
        try:
            if all(text is not None for _, _, text in defaults):
                return args + tuple(ast.literal_eval(text) for _, _, text in defaults)   # None, 1, [1, 1], ...
        except (ValueError, SyntaxError):
            pass
    raise ArgumentTypeError(f"{op.name}(): the op takes its {len(params)} arguments positionally, in schema order "
                            f"({', '.join(name for _, name, _ in params)}), those with a default may be left out at "
                            f"the end; got {len(args)}")

