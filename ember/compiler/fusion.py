"""Fusion: chains of pointwise ops merged into one generated kernel, and the order the units then run in.

`schedule(steps, outputs, device_type)` takes a native replay's steps (native.py: one op call per
node, in program order) and returns its units: an op call, or a fused group of pointwise ops run as one
kernel the backend generates (hookspec `ember_fused_kernel_compiler`). A fused kernel reads each input
once and writes only the values read outside the group, so a chain such as `relu(x * w + b) - y` makes
one pass over memory instead of one per op, and its temporaries never exist.

Which ops fuse is registry data: an op whose entry has a `scalar:` formula (codegen/scalar_formulas.py)
is pointwise and its formula is what the kernel computes. A node joins a group when:

- its formula applies to its arguments (div with a rounding mode has none), uses only functions the
  backend's generator declares it computes well (`functions`), and every Tensor it reads
  or makes is float32 or float64 (one dtype per group) or bool (comparisons, `where`'s condition);
- it has the group's iteration shape (its result's shape; inputs broadcast to it) and reads a value of
  the group, and the group is still open (below).

An op with a `reduce:` kind (sum, mean, amax, amin) over the trailing dimensions of a group value makes
the group row-wise (where the generator takes reductions, over at least its `min_rows` rows): its members
are then one value per element ("full") or one per row ("row": after a reduction, keepdim or not).
`x ** 2` is fused as `x * x` (numpy squares so too), which keeps pow out of a generator's vocabulary.

A group of one op is not a fusion: it runs its own kernel. The units run in program order, a group where
its last member was; a group is closed when a node outside it reads its value or writes in place into
a value it reads, so running its members there computes what the program computed.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

from ember.core.fused_kernel import FusedKernel
from ember.dispatcher import fused_kernel_compiler
from ember.frontend.tensor import Tensor
from ember.fx import Node
from ember.fx.node import map_arg

from . import logs

__all__ = ["Unit", "schedule", "values_written"]

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
    # a generator taking reductions may ask for enough rows to spread (one thread per row: cuda, opencl)
    min_rows = getattr(compiler, "min_rows", 1) if getattr(compiler, "reductions", False) else 0
    groups = _groups([node for node, _, _ in steps], frozenset(getattr(compiler, "functions", ())), min_rows)
    if not groups:
        return units
    program_outputs = {o for o in outputs if isinstance(o, Node)}
    own = {node: (kernel, spec) for node, kernel, spec in steps}
    grouped = {}
    for g in groups:
        unit = _fused_unit(g, program_outputs, compiler, own)
        if unit is not None:
            for m in g.members:
                grouped[m] = unit
    return _ordered(units, grouped)


# -- finding the groups --------------------------------------------------------------------------------
@dataclass
class _Group:
    shape: tuple                  # the iteration shape (a reduction's operand's shape)
    dtype: str
    reduced: int = 0              # how many trailing dimensions its reductions reduce (0: none yet)
    members: list = field(default_factory=list)
    roles: dict = field(default_factory=dict)   # member -> "full" (one value per element) or "row" (per row)
    reads: set = field(default_factory=set)     # the bases of the values it reads from outside
    open: bool = True

    @property
    def outer(self) -> tuple:
        return self.shape[:len(self.shape) - self.reduced]

    def row_shapes(self) -> tuple:
        """The shapes of a row value: the outer dimensions, with or without the reduced ones kept as 1."""
        return (self.outer, self.outer + (1,) * self.reduced) if self.reduced else ()


def _groups(nodes: list, functions: frozenset, min_rows: int) -> list[_Group]:
    """The groups of two or more fusible nodes (formulas in the generator's `functions`; reductions over
    trailing dimensions of at least `min_rows` rows too, none with `min_rows` 0), each with its members in
    program order.

    A group runs as one step where its last member was, so it must not matter that its members run
    later than in the program: a group is closed (takes no more members) when a node outside it reads
    one of its values, or writes in place into something the group reads (the graph shows what a node
    reads, not what a later write into that value changes)."""
    from ember.export.trace import view_base

    group_of: dict = {}                 # node -> its group
    made: list[_Group] = []
    for node in nodes:
        inputs = node.all_input_nodes
        read = {id(group_of[a]): group_of[a] for a in inputs if a in group_of}
        chosen = None
        found = _fusible(node, functions, min_rows)
        if found is not None:
            kind, shape, dtype, info = found
            for g in read.values():
                role = _role(g, node, kind, shape, dtype, info, group_of)
                if role is not None:
                    chosen = g
                    break
            if chosen is None:
                chosen = _Group(shape if kind == "pointwise" else info[0], dtype)
                role = _role(chosen, node, kind, shape, dtype, info, group_of)
                if role is None:                 # (a reduction of an input varying along part of its rows)
                    chosen = None
                else:
                    made.append(chosen)
            if chosen is not None:
                if kind == "reduce":
                    chosen.reduced = info[1]
                group_of[node] = chosen
                chosen.members.append(node)
                chosen.roles[node] = role
                chosen.reads.update(view_base(a) for a in inputs if group_of.get(a) is not chosen)
        closed = [g for g in read.values() if g is not chosen]
        for written in values_written(node):
            closed += [g for g in made if g.open and view_base(written) in g.reads]
        for g in closed:
            g.open = False
    return [g for g in made if len(g.members) > 1]


def values_written(node: Node) -> list:
    """The values `node` writes in place: its mutated arguments and the tensors of its written lists."""
    op = node.target
    written = [node.args[i] for i in getattr(op, "mutated", ())]
    for i in getattr(op, "written_lists", ()):
        written += list(node.args[i])
    return written


def _role(g: _Group, node: Node, kind: str, shape: tuple, dtype: str, info, group_of: dict) -> str | None:
    """The role `node` would have in the open group `g` ("full", "row"), None when it cannot join it."""
    if not g.open or dtype != g.dtype:
        return None
    if kind == "reduce":
        operand_shape, m = info
        if operand_shape != g.shape or g.reduced not in (0, m) or m == 0:
            return None
        operand = node.args[0]
        if group_of.get(operand) is g and g.roles[operand] != "full":
            return None
        rowwise = _Group(g.shape, g.dtype, m)     # what the group becomes: every outside input must suit it
        outside = [a for member in g.members + [node] for a in member.all_input_nodes if group_of.get(a) is not g]
        return "row" if all(_suits(rowwise, a) for a in outside) else None
    if shape == g.shape:
        role = "full"
    elif shape in g.row_shapes():
        role = "row"
        if any(group_of.get(a) is g and g.roles[a] == "full" for a in node.all_input_nodes):
            return None                     # a row value from full ones needs a reduction
    else:
        return None
    if g.reduced and not all(_suits(g, a, role) for a in node.all_input_nodes if group_of.get(a) is not g):
        return None
    return role


def _suits(g: _Group, arg: Node, role: str = "full") -> bool:
    """Whether an outside input reads, in a row-wise group, either every element or one value per row (or
    per column, or one value): a generated loop over rows and columns indexes it so."""
    if not g.reduced:
        return True
    if role == "row":
        return len(arg.meta["val"].shape) <= len(g.row_shapes()[1])
    outer_kind, inner_kind = _pattern(tuple(arg.meta["val"].shape), g)
    return outer_kind is not None and inner_kind is not None


def _pattern(input_shape: tuple, g: _Group) -> tuple:
    """("all" or "none", "all" or "none") for an input varying along every or no outer dimension and every
    or no reduced one (dimensions of size 1 do not count); None for a part of them."""
    varies = _varies(input_shape, g.shape)
    cut = len(g.shape) - g.reduced
    kinds = []
    for part, sizes in ((varies[:cut], g.shape[:cut]), (varies[cut:], g.shape[cut:])):
        relevant = [v for v, n in zip(part, sizes) if n != 1]
        kinds.append("all" if all(relevant) else "none" if not any(relevant) else None)
    return tuple(kinds)


def _fusible(node: Node, functions: frozenset, min_rows: int):
    """(kind, result shape, compute dtype, info) of a fusible node, None when it cannot fuse: a pointwise
    op whose formula uses only `functions` (info None), or a reduction over trailing dimensions
    (info: (operand shape, dimensions reduced))."""
    op = node.target
    if node.op != "call_function" or node.kwargs:
        return None
    if getattr(op, "reduce", None) is not None:
        return _reduction(node, min_rows) if min_rows else None
    key = _fusion_key(node, functions)
    return None if key is None else ("pointwise", key[0], key[1], None)


def _reduction(node: Node, min_rows: int):
    _, dim_at, _, dtype_at = node.target.reduce
    args = node.args
    operand = args[0]
    if not isinstance(operand, Node) or not isinstance(operand.meta.get("val"), Tensor):
        return None
    shape = tuple(operand.meta["val"].shape)
    dtype = _dtype_name(operand.meta["val"])
    if dtype_at is not None and dtype_at < len(args) and args[dtype_at] is not None and \
            str(args[dtype_at]).removeprefix("ember.") != dtype:
        return None                         # a reduction into another dtype
    if dtype not in FUSIBLE_DTYPES or _dtype_name(node.meta["val"]) != dtype or not shape:
        return None
    dims = args[dim_at] if dim_at < len(args) else None
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    dims = sorted({d % len(shape) for d in dims}) if dims else list(range(len(shape)))
    m = len(dims)
    if dims != list(range(len(shape) - m, len(shape))):
        return None                         # only trailing dimensions: a row is contiguous
    if math.prod(shape[:len(shape) - m]) < min_rows:
        return None                         # too few rows for the generator's threads (a whole sum: one)
    return ("reduce", tuple(node.meta["val"].shape), dtype, (shape, m))


def _fusion_key(node: Node, functions: frozenset | None = None) -> tuple | None:
    """(result shape, compute dtype) of a fusible pointwise node, None when it cannot fuse (with
    `functions`: also when its formula uses a function outside them)."""
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
    if head == "pow" and tree[2][0] == "arg" and type(node.args[tree[2][1]]) in (int, float) and \
            node.args[tree[2][1]] == 2:
        base = _instantiate(tree[1], node, leaf_of, scalars)      # x ** 2 is x * x, exactly (numpy's square)
        return ("mul", base, base)
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
def _fused_unit(g: _Group, program_outputs: set, compiler, own: dict) -> Unit | None:
    """The unit running the group's members as one generated kernel (None when the backend declines it).
    `own`: each member's (kernel, spec), which run instead, one by one, should the generated kernel fail
    (a generator's defect must not stop the program: it is reported once, as a warning)."""
    members = g.members
    inside = {m: k for k, m in enumerate(members)}
    inputs: list = []
    varies: list = []
    scalars: list = []
    position: dict = {}

    def leaf_for(role: str, result_shape: tuple):
        """Leaves for a member of `role` whose result has `result_shape` (its inputs broadcast to it)."""
        def leaf_of(arg: Node) -> tuple:
            if arg in inside:
                return ("value", inside[arg])
            if (arg, role, result_shape) not in position:
                position[(arg, role, result_shape)] = len(inputs)
                inputs.append(arg)
                along = _varies(tuple(arg.meta["val"].shape), result_shape)
                varies.append(along if role == "full" else along[:len(g.outer)] + (False,) * g.reduced)
            return ("in", position[(arg, role, result_shape)])
        return leaf_of
    statements = []
    for m in members:
        if m.target.reduce is not None:
            leaf_of = leaf_for("full", g.shape)
        else:
            leaf_of = leaf_for(g.roles[m], tuple(m.meta["val"].shape))
        if m.target.reduce is not None:
            statements.append(("reduce", m.target.reduce[0], leaf_of(m.args[0])))
        else:
            statements.append(_instantiate(m.target.scalar, m, leaf_of, scalars))
    outputs = [m for m in members if m in program_outputs or any(u not in inside for u in m.users)]
    if not outputs:
        return None
    kernel = FusedKernel(ndim=len(g.shape), dtype=g.dtype, inputs=tuple(_dtype_name(a.meta["val"]) for a in inputs),
                         varies=tuple(varies), n_scalars=len(scalars), statements=tuple(statements),
                         outputs=tuple((inside[m], _dtype_name(m.meta["val"])) for m in outputs),
                         ops=tuple(m.target.name for m in members), reduced=g.reduced,
                         rows=tuple(g.roles[m] == "row" for m in members))
    if logs.enabled("output_code") and hasattr(compiler, "source_of"):
        logs.log("output_code", f"{kernel.name}:\n{compiler.source_of(kernel)}")
    launch = compiler.compile(kernel)
    if launch is None:
        return None
    logs.log("kernels", f"{kernel.name}: {len(members)} ops ({', '.join(kernel.ops)}), {len(inputs)} inputs, "
                        f"{len(outputs)} outputs, shape {list(g.shape)}"
                        + (f", rows reduced over the last {g.reduced}" if g.reduced else ""))
    fixed, shape = tuple(scalars), g.shape
    out_shapes = tuple(tuple(m.meta["val"].shape) for m in outputs)
    failed: list = []

    def one_by_one(arrays) -> tuple:
        values = dict(zip(inputs, arrays))
        for m in members:
            own_kernel, spec = own[m]
            values[m] = own_kernel(spec, *map_arg(m.args, values.__getitem__))
        return tuple(values[m] for m in outputs)

    def run(spec, *arrays):
        if failed:
            return one_by_one(arrays)
        try:
            return launch(arrays, fixed, shape, out_shapes)
        except Exception as exc:        # the generated kernel's defect, not the program's: its ops run alone
            failed.append(exc)
            warnings.warn(f"ember.compile: the generated kernel {kernel.name} failed ({type(exc).__name__}: "
                          f"{exc}); its {len(members)} ops run one by one", RuntimeWarning, stacklevel=2)
            return one_by_one(arrays)
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
