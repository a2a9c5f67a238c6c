"""Operators at run time: the registry's data plus per-key kernels and a resolution cache.

`OpDef` objects are built by ember/_generated/op_table.py from the registry. Each holds
the kernels registered for functionality keys (Mode, Autocast, Autograd) and for backend
keys, and a cache {key set: ready-to-call entry}. Resolving a key set walks the keys from
highest priority down; for a backend key the order is: the backend's own kernel, the op's
explicit kernel, its decomposition, the backend's fallback device, else an error naming
what the backend must implement. Registration anywhere clears every cache.
"""
from __future__ import annotations

import functools
import os
from typing import Callable, Iterable

from . import keys as K
from .dispatch import caller_for

_TRACE = os.environ.get("EMBER_DISPATCH_TRACE", "") not in ("", "0")
ALL_OPS: dict[str, "OpDef"] = {}


class OpDef:
    """One operator overload: registry data, kernels and the resolved-kernel cache."""

    __slots__ = (
        "name", "schema", "family", "promotion", "shape_rule_name", "autocast", "impl", "tags",
        "doc", "arg_names", "tensor_args", "tensor_list_args", "device_arg", "generator_arg", "mutated", "written_lists",
        "alias_return", "n_outputs", "output_names", "differentiable", "inplace_of",
        "inplace_needs_clone", "backward_cls", "shape_rule", "explicit", "decomposition",
        "kernels", "functionality", "cache", "cross_device", "first_output_only", "records_inplace", "float_outputs",
        "dispatch", "alpha_arg", "dtypes", "dtype_error_kernel", "checks", "promotion_if_given", "iterator_operands",
        "copy_from", "checker", "__weakref__",
    )

    def __init__(self, name: str, schema: str, *, family: str, promotion: str, shape_rule: str,
                 autocast: dict, impl: str, tags: tuple, doc: str, arg_names: tuple,
                 tensor_args: tuple, tensor_list_args: tuple, device_arg: int | None,
                 mutated: tuple, alias_return: int | None, output_names: tuple,
                 differentiable: tuple, inplace_of: str | None = None,
                 inplace_needs_clone: bool = False, written_lists: tuple = (), generator_arg: int | None = None,
                 alpha_arg: int | None = None, dtypes: str | None = None, dtype_error_kernel: str | None = None,
                 checks: tuple = (), promotion_if_given: tuple | None = None, iterator_operands: str = "arguments",
                 copy_from: int | None = None):
        self.name = name
        self.schema = schema
        self.family = family
        self.promotion = promotion
        self.shape_rule_name = shape_rule
        self.autocast = autocast
        self.impl = impl
        self.tags = tags
        self.doc = doc
        self.arg_names = arg_names
        self.tensor_args = tensor_args            # positions of Tensor / Tensor? arguments
        self.tensor_list_args = tensor_list_args  # positions of Tensor[] arguments
        self.device_arg = device_arg              # position of a `Device? device` argument
        self.generator_arg = generator_arg        # position of a `Generator? generator` argument
        self.mutated = mutated                    # positions of Tensor(a!) arguments
        self.written_lists = written_lists        # positions of Tensor(a!)[] arguments (the fused optimizer updates)
        self.alias_return = alias_return          # position of the argument a view aliases
        self.n_outputs = len(output_names)
        self.output_names = output_names
        self.differentiable = differentiable      # positions of inputs with a formula
        self.inplace_of = inplace_of
        self.inplace_needs_clone = inplace_needs_clone
        # per-op behaviour from the registry (docs/registry.md), read by the shape rules and autograd
        # instead of tests on the op's name
        self.alpha_arg = alpha_arg                # position of a `Scalar alpha` argument (PyTorch's alpha_check)
        self.dtypes = dtypes                      # the dtypes the kernel supports (floating, ...); None: all
        self.dtype_error_kernel = dtype_error_kernel   # the kernel PyTorch's "not implemented for" error names
        self.checks = checks                      # names of shared checks (@op_check in ember/shape_rules/checks.py)
        self.promotion_if_given = promotion_if_given   # (position, promotion kind used when that argument is not None)
        self.iterator_operands = iterator_operands     # TensorIterator's operands: arguments, tensors_only, reversed
        self.copy_from = copy_from                # an in-place copy: position of the argument self's new value is
        # `dtypes` and `checks` as one function, built by the shape rules on first use (None until then)
        self.checker: Callable | None = None
        self.cross_device = "cross_device" in tags
        # autograd: only output 0 gets a grad_fn (native_layer_norm's mean/rstd are not differentiable)
        self.first_output_only = "only_first_output_differentiable" in tags
        # autograd records a write into an argument as an in-place op; a composite returning new
        # tensors while it writes some arguments (_native_batch_norm_legit's running statistics)
        # is differentiated through its decomposition instead
        self.records_inplace = bool(mutated) and not (impl == "composite" and len(output_names) > 1)
        self.backward_cls = None
        self.shape_rule: Callable | None = None
        self.explicit: Callable | None = None
        self.decomposition: Callable | None = None
        self.kernels: dict[int, tuple[Callable, str]] = {}     # backend key -> (kernel, origin)
        self.functionality: dict[int, Callable] = {}           # Mode/Autocast/Autograd kernels
        self.cache: dict[int, Callable] = {}
        # dispatch(args): the call path for this op (dispatch.call's, written out for its tensor positions)
        self.dispatch: Callable[[tuple], object] = caller_for(self)
        ALL_OPS[name] = self

    def __repr__(self) -> str:
        return f"<ember op {self.name}>"

    def __call__(self, *args):
        """Call the op with every argument given positionally, in schema order."""
        return self.dispatch(args)

    @property
    def is_view(self) -> bool:
        return self.alias_return is not None and not self.mutated

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
        return runners.writing_lists(op, runners.python_runner(op, key, op.decomposition)), "decomposition"
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


def register_functionality(key: int, kernel: Callable, ops=None) -> None:
    """Register `kernel(op, below_ks, args)` for a functionality key on `ops` (default all)."""
    for op in (ops if ops is not None else ALL_OPS.values()):
        op.functionality[key] = kernel
    invalidate_caches()


def primitive_ops() -> list[str]:
    """The ops every backend must implement natively."""
    return sorted(n for n, op in ALL_OPS.items() if op.impl == "primitive")
