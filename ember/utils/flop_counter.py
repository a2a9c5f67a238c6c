"""FlopCounterMode: FLOPs per op and per module, counted by a dispatch mode (torch.utils.flop_counter).

    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    counter.get_total_flops(), counter.get_flop_counts(), counter.get_unknown_ops()

Every op call reaches the mode (the Mode dispatch key, ember/frontend/mode.py), forward and
backward alike (backward() inside the block). For each call, in this order:

1. the op has a formula in `ember.utils.flop_formulas.FLOP_FORMULAS` (or `custom_mapping`):
   it runs as usual and its FLOPs are added to "Global" and to every module running (a
   module's backward counts for that module, as in torch);
2. the op does no arithmetic (`ZERO_FLOP_OPS`: views, copies, allocation, gathers): it runs,
   nothing is recorded;
3. the op is composite and the device runs its decomposition (it has no native kernel of its
   own, or autograd records the call, which always runs the decomposition, or the device is
   meta, where the kernel only computes the output's shape):
   the mode follows it into the decomposition, so the ops it is made of are counted (this
   is where `linear`, `matmul`, `einsum`, `conv2d` become `mm`, `bmm`, `convolution`), as
   torch's FlopCounterMode decomposes an op it has no formula for;
4. otherwise the op is *unknown*: it runs, and the call is recorded in `get_unknown_ops()`
   ({op name: calls}, per module in `get_unknown_ops(module)`), and listed under the table.
   An unknown op is never counted as 0 FLOPs in silence: totals cover the ops with
   formulas, which are torch's (matrix products, convolutions, attention), so totals equal
   torch's for the same computation; pointwise ops, reductions, normalizations and
   softmax, which torch ignores, show up as unknown.

Keys of `get_flop_counts()` are module names ("Global", then "Root", "Root.child", ...) and
registry op names ("mm", "convolution") where torch has OpOverloadPackets (aten.mm).
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from typing import Any, Callable

from ember.dispatcher import keys as K
from ember.dispatcher.dispatch import backend_key
from ember.dispatcher.state import STATE
from ember.frontend.mode import DispatchMode
from ember.frontend.tensor import Tensor

from .flop_formulas import FLOP_FORMULAS, ZERO_FLOP_OPS, register_flop_formula
from .module_tracker import ModuleTracker

__all__ = ["FlopCounterMode", "register_flop_formula"]


def _shape(v):
    if isinstance(v, Tensor):
        return tuple(v.shape)
    if isinstance(v, (list, tuple)):
        return type(v)(_shape(x) for x in v)
    return v


def _shape_wrapper(formula: Callable) -> Callable:
    """torch's shape_wrapper: tensors (in args and the output) become their shapes."""
    if getattr(formula, "_get_raw", False):
        def raw(*args, out_val=None):
            return formula(*args, out_val=out_val)
        return raw

    def wrapped(*args, out_val=None):
        return formula(*_shape(args), out_shape=_shape(out_val))
    return wrapped


def _op_name(key) -> str:
    """A custom_mapping key: a registry op name or an OpDef."""
    name = getattr(key, "name", key)
    if not isinstance(name, str):
        raise TypeError(f"FlopCounterMode(custom_mapping=...): keys must be op names or ops, got {type(key).__name__}")
    return name


class FlopCounterMode:
    """Counts FLOPs within its context, per op and per module (torch.utils.flop_counter.FlopCounterMode).

    `mods` is accepted and ignored (torch deprecates it: modules are found by global module
    hooks); `depth` is the table's module depth; `display` prints the table on exit;
    `custom_mapping` adds or replaces formulas ({op name or op: formula(*shapes, out_shape=)}).
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping: dict[Any, Callable] | None = None) -> None:
        self.flop_counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.unknown_counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.depth = depth
        self.display = display
        self.mode: _FlopCounterDispatch | None = None
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.flop_registry: dict[str, Callable] = {
            **{k: _shape_wrapper(v) for k, v in FLOP_FORMULAS.items()},
            **{_op_name(k): _shape_wrapper(v) for k, v in (custom_mapping or {}).items()},
        }
        self.mod_tracker = ModuleTracker()

    # -- results -----------------------------------------------------------------------------------
    def get_total_flops(self) -> int:
        """FLOPs of the ops with a formula (see get_unknown_ops for the rest)."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[str, int]]:
        """{module name: {op name: flops}}; "Global" holds everything."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_unknown_ops(self, module: str = "Global") -> dict[str, int]:
        """{op name: calls} of the ops that ran without a FLOP formula (in `module`, default all)."""
        return dict(self.unknown_counts.get(module, {}))

    def get_table(self, depth: int | None = None) -> str:
        """torch's table (module, FLOP, % total) down to `depth`, then the ops without a formula."""
        from ._flop_table import flop_table

        if depth is None:
            depth = self.depth
        if depth is None:
            depth = 999999
        return flop_table(self.flop_counts, self.unknown_counts, depth)

    # -- context -----------------------------------------------------------------------------------
    def __enter__(self) -> "FlopCounterMode":
        self.flop_counts.clear()
        self.unknown_counts.clear()
        self.mod_tracker.__enter__()
        self.mode = _FlopCounterDispatch(self)
        self.mode.__enter__()
        return self

    def __exit__(self, *args) -> None:
        if self.mode is None:
            raise RuntimeError("FlopCounterMode.__exit__ called without __enter__")
        self.mode.__exit__(*args)
        self.mode = None
        self.mod_tracker.__exit__()
        if self.display:
            print(self.get_table(self.depth))

    def _count(self, name: str, formula: Callable, args: tuple, out) -> None:
        flops = formula(*args, out_val=out)
        for par in set(self.mod_tracker.parents):
            self.flop_counts[par][name] += flops

    def _unknown(self, name: str) -> None:
        for par in set(self.mod_tracker.parents):
            self.unknown_counts[par][name] += 1


# ops ember implements as one explicit op where torch decomposes them (CompositeImplicitAutograd):
# followed into their explicit kernel, so they count as torch's parts (linear: addmm / mm)
_TORCH_DECOMPOSES = frozenset({"linear"})


def _follows_decomposition(op, args: tuple) -> bool:
    """Whether the device would run `op`'s decomposition (so its parts can be counted instead)."""
    if op.name in _TORCH_DECOMPOSES:
        return True
    if op.impl != "composite" or op.decomposition is None or op.mutated:
        return False
    bk = backend_key(op, args)
    if not bk:
        return False
    if bk not in op.kernels:
        return True
    if not STATE.exclude & K.AUTOGRAD and _any_requires_grad(op, args):
        return True                                          # autograd_kernel runs the decomposition
    from ember.dispatcher.plugins import REGISTRY

    return REGISTRY.by_key[bk].device_type == "meta"     # no values: its one-step kernel is only a shortcut


class _FlopCounterDispatch(DispatchMode):
    """The dispatch mode behind FlopCounterMode."""

    def __init__(self, counter: FlopCounterMode) -> None:
        self.counter = counter

    def __ember_dispatch__(self, op, args: tuple):
        counter = self.counter
        name = op.name
        formula = counter.flop_registry.get(name)
        if formula is not None:
            out = op(*args)
            counter._count(name, formula, args, out)
            return out
        if name in ZERO_FLOP_OPS:
            return op(*args)
        if _follows_decomposition(op, args):
            with self:
                return _run_decomposition(op, args)
        counter._unknown(name)
        return op(*args)


def _run_decomposition(op, args: tuple):
    """Run a composite op's decomposition with the mode on, as the keys below Mode would run it.

    Autocast: the op's inputs are cast by its policy and everything inside runs with
    Autocast excluded (autocast_kernel); autograd then records the inner ops, as it does
    for every composite (autograd_kernel); without autograd, fresh outputs start at version
    0 (python_runner).
    """
    st = STATE
    prev = st.exclude
    if (st.include & ~prev) & K.AUTOCAST:
        from ember.frontend.autocast import _apply_policy, _first_device_type

        device_type = _first_device_type(op, args)
        dtype = st.autocast.get(device_type)
        policy = op.autocast.get(device_type) or op.autocast["default"]
        if dtype is not None and policy != "none":
            args = _apply_policy(policy, op, args, dtype)
        st.exclude = prev | K.AUTOCAST
    try:
        if op.shape_rule is not None:
            op.shape_rule(op, *args)
        out = (op.decomposition or op.explicit)(*args)
    finally:
        st.exclude = prev
    recorded = not st.exclude & K.AUTOGRAD and _any_requires_grad(op, args)   # autograd saved what it needs
    if not op.mutated and not recorded:
        from ember.dispatcher.runners import _reset_versions

        _reset_versions(out, args, op.tensor_args, op.tensor_list_args, Tensor)
    return out


def _any_requires_grad(op, args: tuple) -> bool:
    for i in op.tensor_args:
        if isinstance(args[i], Tensor) and args[i]._keys & K.AUTOGRAD:
            return True
    return any(isinstance(a, Tensor) and a._keys & K.AUTOGRAD for i in op.tensor_list_args for a in args[i])
