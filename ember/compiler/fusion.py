"""Fusion: chains of pointwise ops merged into one generated kernel, and the order the units then run in.

`schedule(steps, outputs, device_type)` takes a native replay's steps (native.py: one op call per
node, in program order) and returns its units: an op call, or a fused group of pointwise ops run as one
kernel the backend generates (hookspec `ember_fused_kernel_compiler`). A fused kernel reads each input
once and writes only the values read outside the group, so a chain such as `gelu(x * w + b) - y` makes
one pass over memory instead of one per op, and its temporaries never exist.

Which ops fuse is registry data: an op whose entry has a `scalar:` formula (codegen/scalar_formulas.py)
is pointwise and its formula is what the kernel computes. A node joins a group when:

- its formula applies to its arguments (div with a rounding mode has none), uses only functions the
  backend's generator declares it computes well (`functions`), and every Tensor it reads
  or makes is float32 or float64 (one dtype per group) or bool (comparisons, `where`'s condition);
- it has the group's iteration shape (its result's shape; inputs broadcast to it) and reads a value of
  the group, and the group is still open (below).

A group of one op is not a fusion: it runs its own kernel. The units run in program order, a group where
its last member was; a group is closed when a node outside it reads its value or writes in place into
a value it reads, so running its members there computes what the program computed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ember.core.fused_kernel import FusedKernel
from ember.dispatcher import fused_kernel_compiler
from ember.frontend.tensor import Tensor
from ember.fx import Node

from . import logs

__all__ = ["Unit", "schedule"]

FUSIBLE_DTYPES = ("float32", "float64")


@dataclass
class Unit:
    """One step of a native replay: `kernel(spec, *args)` making the values of `outputs` (a tuple for a
    fused group, one array for an op; a getitem's kernel is None)."""

    kernel: Callable | None
    spec: object
    args: tuple                  # the arguments, nodes standing for values
    outputs: tuple               # the nodes whose values it makes
    members: tuple               # the nodes it runs (one for an op)


class _NotFusible(Exception):
    pass


def schedule(steps: list, outputs, device_type: str) -> list[Unit]:
    """The units of `steps` ((node, kernel, spec) per node), fused where the backend generates kernels."""
    units = [Unit(kernel, spec, node.args, (node,), (node,)) for node, kernel, spec in steps]
    compiler = fused_kernel_compiler(device_type)
    if compiler is None:
        return units
    groups = _groups([node for node, _, _ in steps], frozenset(getattr(compiler, "functions", ())))
    if not groups:
        return units
    program_outputs = {o for o in outputs if isinstance(o, Node)}
    grouped = {}
    for members in groups:
        unit = _fused_unit(members, program_outputs, compiler)
        if unit is not None:
            for m in members:
                grouped[m] = unit
    return _ordered(units, grouped)


# -- finding the groups --------------------------------------------------------------------------------
def _groups(nodes: list, functions: frozenset) -> list[list]:
    """The groups of two or more fusible nodes (their formulas in the generator's `functions`), each a
    list in program order.

    A group runs as one step where its last member was, so it must not matter that its members run
    later than in the program: a group is closed (takes no more members) when a node outside it reads
    one of its values, or writes in place into something the group reads (the graph shows what a node
    reads, not what a later write into that value changes)."""
    from ember.export.trace import view_base

    group_of: dict = {}                 # node -> group id
    key_of: dict[int, tuple] = {}       # open group id -> (shape, dtype)
    reads: dict[int, set] = {}          # open group id -> the bases of the values it reads from outside
    members: dict[int, list] = {}
    for node in nodes:
        inputs = node.all_input_nodes
        read = {group_of[a] for a in inputs if a in group_of}
        key = _fusion_key(node, functions)
        chosen = None
        if key is not None:
            chosen = next((g for g in read if key_of.get(g) == key), None)
            if chosen is None:
                chosen = len(members)
                members[chosen], key_of[chosen], reads[chosen] = [], key, set()
            group_of[node] = chosen
            members[chosen].append(node)
            reads[chosen].update(view_base(a) for a in inputs if group_of.get(a) != chosen)
        closed = read - {chosen}
        for i in getattr(node.target, "mutated", ()):
            written = view_base(node.args[i])
            closed |= {g for g in key_of if written in reads[g]}
        for g in closed:
            key_of.pop(g, None)
    return [m for m in members.values() if len(m) > 1]


def _fusion_key(node: Node, functions: frozenset | None = None) -> tuple | None:
    """(iteration shape, compute dtype) of a fusible node, None when it cannot fuse (with `functions`:
    also when its formula uses a function outside them)."""
    op = node.target
    if node.op != "call_function" or getattr(op, "scalar", None) is None or node.kwargs:
        return None
    val = node.meta.get("val")
    if not isinstance(val, Tensor) or not all(isinstance(a.meta.get("val"), Tensor) for a in node.all_input_nodes):
        return None
    dtypes = {_dtype_name(val)} | {_dtype_name(a.meta["val"]) for a in node.all_input_nodes}
    floats = dtypes - {"bool"}
    if len(floats) != 1 or not floats <= set(FUSIBLE_DTYPES):
        return None
    try:
        tree = _instantiate(op.scalar, node, lambda arg: ("in", 0), [])
    except _NotFusible:
        return None
    if functions is not None and not _uses_only(tree, functions):
        return None
    return tuple(val.shape), floats.pop()


def _dtype_name(t: Tensor) -> str:
    return str(t.dtype).removeprefix("ember.")


def _instantiate(tree: tuple, node: Node, leaf_of: Callable, scalars: list) -> tuple:
    """The formula `tree` of `node`'s op over its arguments: a Tensor argument through `leaf_of`, a number
    a new scalar parameter (appended to `scalars`), a choice decided on the argument's value."""
    head = tree[0]
    if head == "arg":
        if tree[1] >= len(node.args):
            raise _NotFusible
        value = node.args[tree[1]]
        if isinstance(value, Node):
            return leaf_of(value)
        if isinstance(value, (int, float)):
            scalars.append(value)
            return ("scalar", len(scalars) - 1)
        raise _NotFusible
    if head == "const":
        return tree
    if head == "none":
        raise _NotFusible
    if head == "if":
        position, cmp, constant = tree[1]
        value = node.args[position] if position < len(node.args) else None
        taken = (value == constant) if cmp == "==" else (value != constant)
        return _instantiate(tree[2] if taken else tree[3], node, leaf_of, scalars)
    return (head,) + tuple(_instantiate(child, node, leaf_of, scalars) for child in tree[1:])


def _varies(input_shape: tuple, shape: tuple) -> tuple[bool, ...]:
    """Along which dimensions of `shape` an input of `input_shape` (broadcast to it) changes."""
    padded = (1,) * (len(shape) - len(input_shape)) + input_shape
    return tuple(n != 1 for n in padded)


def _uses_only(tree: tuple, functions: frozenset) -> bool:
    head = tree[0]
    if head in ("in", "scalar", "const", "value"):
        return True
    return head in functions and all(_uses_only(child, functions) for child in tree[1:])


# -- one group's kernel --------------------------------------------------------------------------------
def _fused_unit(members: list, program_outputs: set, compiler) -> Unit | None:
    """The unit running `members` as one generated kernel (None when the backend declines it)."""
    inside = {m: k for k, m in enumerate(members)}
    inputs: list = []
    scalars: list = []
    position: dict = {}

    def leaf_of(arg: Node) -> tuple:
        if arg in inside:
            return ("value", inside[arg])
        if arg not in position:
            position[arg] = len(inputs)
            inputs.append(arg)
        return ("in", position[arg])
    statements = tuple(_instantiate(m.target.scalar, m, leaf_of, scalars) for m in members)
    outputs = [m for m in members if m in program_outputs or any(u not in inside for u in m.users)]
    if not outputs:
        return None
    shape, dtype = _fusion_key(members[0])
    kernel = FusedKernel(ndim=len(shape), dtype=dtype, inputs=tuple(_dtype_name(a.meta["val"]) for a in inputs),
                         varies=tuple(_varies(tuple(a.meta["val"].shape), shape) for a in inputs),
                         n_scalars=len(scalars), statements=statements,
                         outputs=tuple((inside[m], _dtype_name(m.meta["val"])) for m in outputs),
                         ops=tuple(m.target.name for m in members))
    if logs.enabled("output_code") and hasattr(compiler, "source_of"):
        logs.log("output_code", f"{kernel.name}:\n{compiler.source_of(kernel)}")
    launch = compiler.compile(kernel)
    if launch is None:
        return None
    logs.log("kernels", f"{kernel.name}: {len(members)} ops ({', '.join(kernel.ops)}), {len(inputs)} inputs, "
                        f"{len(outputs)} outputs, shape {list(shape)}")
    fixed = tuple(scalars)

    def run(spec, *arrays):
        return launch(arrays, fixed, shape)
    return Unit(run, None, tuple(inputs), tuple(outputs), tuple(members))


# -- the order of the units ----------------------------------------------------------------------------
def _ordered(units: list[Unit], grouped: dict) -> list[Unit]:
    """The units in program order, each fused group once, where its last member was (_groups makes that
    order equivalent to the program's)."""
    last = {}
    for unit in units:
        group = grouped.get(unit.members[0])
        if group is not None:
            last[id(group)] = unit.members[0]
    return [grouped[u.members[0]] if u.members[0] in grouped else u for u in units
            if u.members[0] not in grouped or last[id(grouped[u.members[0]])] is u.members[0]]
