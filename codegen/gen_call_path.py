"""Emit the per-call functions of the call path as real source, one per layout the registry uses.

Every op call runs an op's dispatch function, a native kernel's unwrap of its arguments and, with
grad, an autograd record function. Each is written out for the op's argument positions (no loop over
them, as `collections.namedtuple` writes a class), here, from the templates below, instead of being
compiled at run time: every frame of a call has a file and a line, and the source can be read.

* ember/dispatcher/_generated/dispatchers.py: per layout of tensor positions (`OpDef.tensor_args`,
  `OpDef.tensor_list_args`) a factory of the op's dispatch function (`dispatch.caller_for`);
* ember/dispatcher/_generated/unwraps.py: per tuple of Tensor positions of the ops without Tensor[]
  arguments an unwrap of a native kernel's arguments (`runners._unwrapper`). Both lie in the
  dispatcher's layer, which imports no frontend.
* ember/_generated/recorders.py: per recorder shape (differentiable positions, which of them are
  Tensor[] lists, one output / several / only the first differentiable) a factory of the op's record
  function (`recording.recorder_for`, which computes the same shape with `recording.recorder_shape`)
  and one of its Autograd entry, the same body after running the op below (`recording.entry_for`).

Functions are named after their layout: T<i> a Tensor argument at position i, L<i> a Tensor[] one
(`make_dispatch_T0_T2_L1`, `unwrap_T0_T1`, `make_record_T0_T1_T2__outputs`).
"""
from __future__ import annotations

from textwrap import indent

from .gen_python import HEADER, backward_class_names, differentiable_positions, tensor_positions
from .registry import Registry


def _layout_name(parts: list[str], empty: str) -> str:
    return "_".join(parts) or empty


# ------------------------------------------------------------------------------- dispatch functions
def dispatch_name(t_idx: tuple, l_idx: tuple) -> str:
    return "make_dispatch_" + _layout_name([f"T{i}" for i in t_idx] + [f"L{i}" for i in l_idx], "no_tensors")


def unwrap_name(t_idx: tuple) -> str:
    return "unwrap_" + _layout_name([f"T{i}" for i in t_idx], "no_tensors")


# An op's dispatch function: the union of its tensor arguments' keys (written out for the positions of
# its Tensor and Tensor[] arguments, no loop over positions), the key set's backend checked (none: a
# factory's device argument; several: mixed devices), this thread's included and excluded keys
# applied, and the entry cached for that key set run. An exception that is not an EmberError has its
# arguments checked against the schema (`arguments.argument_error`: torch's TypeError for an argument
# of the wrong type); the check costs nothing until something raises. A Tensor argument that is no Tensor
# goes to `arguments.number_argument` where the op takes no Python number there (`OpDef.numbers`: a number is torch's
# argument parser's TypeError) or takes it as a 0-d tensor (`OpDef.wraps_numbers`: the call is dispatched
# again with it): a test on that branch only, none when every argument is a Tensor. `method`: the function
# of the op's Tensor method (its errors number the arguments after `self`).
_DISPATCH = """\
def {name}(op, cache, method=False):
    resolve = op.resolve
{strict}
    def dispatch(args):
        try:
            ks = 0
{union}
            bk = ks & _BACKEND_MASK
            if bk & (bk - 1) or not bk:
                ks, args = _backend_of_unusual_call(op, args, ks)
            if KEYED_THREADS:                   # some thread has included or excluded keys: this one's
                include, exclude = STATE._keys
                ks = (ks | include) & ~exclude
            try:
                entry = cache[ks]
            except KeyError:
                entry = resolve(ks)
            try:
                return entry(args)
            except MemoryError as exc:          # a backend's allocation failed: ember.OutOfMemoryError
                raise _out_of_memory(op, args, ks, exc) from None
        except Exception as exc:                # noqa: BLE001 - EmberErrors pass unchanged
            error = _argument_error(op, args, exc)
            if error is None:
                raise
            raise error from None
    return dispatch
"""

_TENSOR_GLOBAL = """\
# The frontend's Tensor class, which the functions below test their arguments with, read at call time
# as a global of this module: set by `dispatch.install_frontend` (the dispatcher imports no frontend).
Tensor: type = type(None)
"""

_DISPATCH_MODULE = '''\
"""The dispatcher's per-call dispatch functions, written out per layout of tensor positions in the registry.

`DISPATCH_FACTORIES[(op.tensor_args, op.tensor_list_args)](op, op.cache)` makes an op's dispatch
function (`dispatch.caller_for`): the union of its tensor arguments' keys written out for its
positions, the key set's backend checked (none: a factory's device argument; several: mixed
devices), this thread's included and excluded keys applied, and the entry cached for that key set
run (a backend's MemoryError becomes ember.OutOfMemoryError; any other exception that is not an EmberError
has the arguments' types checked against the schema: ember.dispatcher.arguments).
"""
from ..arguments import argument_error as _argument_error, number_argument as _number_argument
from ..dispatch import _backend_of_unusual_call, _out_of_memory
from ..keys import BACKEND_MASK as _BACKEND_MASK
from ..state import KEYED_THREADS, STATE

''' + _TENSOR_GLOBAL

_UNWRAP_MODULE = '''\
"""The native kernels' argument unwraps, written out per tuple of Tensor positions in the registry.

`UNWRAPS[op.tensor_args]` (ops without Tensor[] arguments) turns an argument tuple into a native
kernel's arguments (`runners._unwrapper`): each Tensor replaced by its native array, no copy into a
list, no loop over positions.
"""

''' + _TENSOR_GLOBAL


def _dispatch_function(t_idx: tuple, l_idx: tuple) -> str:
    union = []
    for i in t_idx:
        union += [f"            a = args[{i}]", "            if isinstance(a, Tensor):", "                ks |= a._keys",
                  f"            elif check{i} and a is not None:",
                  f"                wrapped = _number_argument(op, args, {i}, method)",
                  "                if wrapped is not None:", "                    return dispatch(wrapped)"]
    for i in l_idx:
        union += [f"            for a in args[{i}]:", "                if isinstance(a, Tensor):",
                  "                    ks |= a._keys"]
    # check<i>: a Python number for the Tensor argument at position i is refused or wrapped
    strict = "".join(f"    check{i} = {i} not in op.numbers or op.wraps_numbers\n" for i in t_idx)
    text = _DISPATCH.format(name=dispatch_name(t_idx, l_idx), union="\n".join(union), strict=strict)
    return text.replace("ks = 0\n\n", "ks = 0\n")          # no tensor positions (factories)


def _unwrap_function(t_idx: tuple) -> str:
    """For positions (0, 2):

        def unwrap_T0_T2(args):
            a0 = args[0]
            a2 = args[2]
            return (
                a0._data if isinstance(a0, Tensor) else a0,
                args[1],
                a2._data if isinstance(a2, Tensor) else a2,
            ) + args[3:]
    """
    n = max(t_idx) + 1
    lines = [f"def {unwrap_name(t_idx)}(args):"] + [f"    a{i} = args[{i}]" for i in t_idx]
    lines.append("    return (")
    lines += [f"        a{i}._data if isinstance(a{i}, Tensor) else a{i}," if i in t_idx else f"        args[{i}],"
              for i in range(n)]
    lines.append(f"    ) + args[{n}:]")
    return "\n".join(lines) + "\n"


def dispatch_layouts(registry: Registry) -> list[tuple[tuple, tuple]]:
    """The layouts (tensor positions, tensor list positions) of the registry's ops, sorted."""
    return sorted({tensor_positions(op) for op in registry.ops})


def gen_dispatch_module(registry: Registry) -> str:
    """ember/dispatcher/_generated/dispatchers.py: a dispatch-function factory per layout."""
    layouts = dispatch_layouts(registry)
    parts = [HEADER + _DISPATCH_MODULE]
    parts += [_dispatch_function(t, lists) for t, lists in layouts]
    parts.append("DISPATCH_FACTORIES = {\n"
                 + "".join(f"    {(t, lists)!r}: {dispatch_name(t, lists)},\n" for t, lists in layouts) + "}\n")
    return "\n\n".join(parts)


def gen_unwrap_module(registry: Registry) -> str:
    """ember/dispatcher/_generated/unwraps.py: an unwrap per tuple of Tensor positions (no Tensor[])."""
    unwraps = sorted({t for t, lists in dispatch_layouts(registry) if t and not lists})
    parts = [HEADER + _UNWRAP_MODULE]
    parts += [_unwrap_function(t) for t in unwraps]
    parts.append("UNWRAPS = {\n" + "".join(f"    {t!r}: {unwrap_name(t)},\n" for t in unwraps) + "}\n")
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------- record functions
# A recorder shape: (differentiable positions, those of them that are Tensor[] arguments, outputs), outputs
# "one" (a single output), "all" (several, each floating-point one attached) or "first" (several, only the
# first attached: the op's only_first_output_differentiable tag). `recording.recorder_shape(op)` is the same.
RecorderShape = tuple[tuple[int, ...], tuple[int, ...], str]


def recorder_shapes(registry: Registry) -> list[RecorderShape]:
    """The shapes of the ops with a backward node, sorted."""
    with_node = backward_class_names(registry)
    shapes = set()
    for op in registry.ops:
        if op.name not in with_node:
            continue
        diff = differentiable_positions(op)
        lists = set(tensor_positions(op)[1])
        if len(op.schema.returns) == 1:
            outputs = "one"
        else:
            outputs = "first" if "only_first_output_differentiable" in op.tags else "all"
        shapes.add((diff, tuple(i for i in diff if i in lists), outputs))
    return sorted(shapes)


def record_name(shape: RecorderShape) -> str:
    diff, lists, outputs = shape
    name = "make_record_" + _layout_name([("L" if i in lists else "T") + str(i) for i in diff], "no_inputs")
    return name + {"one": "", "all": "__outputs", "first": "__first_output"}[outputs]


def entry_name(shape: RecorderShape) -> str:
    return record_name(shape).replace("make_record_", "make_entry_", 1)


# One differentiable Tensor argument at position {i}: its edge e{k}, meta m{k} and need n{k}.
_TENSOR_ARG = """\
    a = args[{i}]
    if isinstance(a, Tensor) and a._ag is not None:
        ag = a._ag
        fn = ag.grad_fn
        if fn is None:                              # a leaf: its accumulator (accumulator_of's hit inlined)
            acc = a._grad_accumulator
            e{k} = (acc if acc is not None and acc.ag is ag else accumulator_of(a), 0)
        elif a._base is None:
            e{k} = (fn, ag.output_nr)           # an op result (edge_of's common case)
        else:
            e{k} = edge_of(a)                   # a view: its base may have moved on
        m{k} = ag.input_meta
        if m{k} is None:                            # (shape, dtype, device), kept with the autograd state
            m{k} = ag.input_meta = (a._data.shape, a._dtype, a._device)
        n{k} = True
    else:                                           # no history, or a Python number in a Tensor argument
        e{k} = m{k} = None
        n{k} = False
"""

# A differentiable Tensor[] argument at position {i}: tuples e{k}, m{k} (an entry per tensor) and one need.
_TENSOR_LIST_ARG = """\
    edges, metas, n{k} = [], [], False
    for t in args[{i}]:
        if t._ag is not None:
            edges.append(edge_of(t))
            metas.append((t._data.shape, t._dtype, t._device))
            n{k} = True
        else:
            edges.append(None)
            metas.append(None)
    e{k}, m{k} = tuple(edges), tuple(metas)
"""

# The node, once some input needs a gradient (`{edges}` etc. are the tuples of the blocks above).
_NODE = """\
    if not {any_need}:
        return{result}
    # Node.__init__'s stores, inlined (generated nodes define no __init__)
    node = new_object(backward_cls)
    node.next_edges = {edges}
    node.input_meta = {metas}
    node.seq = next_seq()
    node.needs = {needs}
    if ANOMALY_THREADS and STATE.anomaly:
        node.anomaly_trace = "".join(traceback.format_stack()[:-{frames}])     # from the op's caller
"""

_ONE_OUTPUT = """\
    node.save(args, (out,))
    if out._dtype.is_floating_point:            # AutogradMeta.__init__'s stores, inlined
        meta = out._ag = new_object(AutogradMeta)
        meta.grad_fn = node
        meta.output_nr = 0
        meta.input_meta = None
        out._keys |= AUTOGRAD
    base = out._base
"""

_OUTPUTS = """\
    node.save(args, out)
    for k, o in enumerate(out):
        if o._dtype.is_floating_point{first_only}:
            meta = o._ag = new_object(AutogradMeta)
            meta.grad_fn = node
            meta.output_nr = k
            meta.input_meta = None
            o._keys |= AUTOGRAD
    base = out[0]._base
"""

_VIEW = """\
    if base is not None:
        # a view: remember which history of its base it was derived from (see graph.edge_of)
        node._view_of = base._ag.grad_fn if base._ag is not None else None
"""

_RECORDERS_MODULE = '''\
"""Autograd record functions, written out per recorder shape of the registry's ops.

`RECORDER_FACTORIES[recording.recorder_shape(op)](op)` makes `record(args, out)` for one op
(`recording.recorder_for`): a block per differentiable argument (no loop over the positions, no lists
to append to; a Tensor[] argument keeps its loop), then, when some input needs a gradient, the op's
backward node (`op.backward_cls`, bound when the function is made) with its edges, input metadata and needs, what it saves, and the
node attached to the floating-point outputs. A shape is (differentiable positions, those of them that
are Tensor[] arguments, outputs: "one", "all" or "first", only the first output differentiable).
`ENTRY_FACTORIES[shape](op, run_below)` makes `run_and_record(args)`, the op's Autograd entry for one
key set (`recording.entry_for`): `out = run_below(args)`, the same body, then `return out`.
"""
import traceback

from ember.dispatcher.keys import AUTOGRAD
from ember.dispatcher.state import ANOMALY_THREADS, STATE
from ember.frontend.autograd.graph import accumulator_of, edge_of
from ember.frontend.autograd.graph import next_sequence_number as next_seq
from ember.frontend.tensor import AutogradMeta, Tensor

new_object = object.__new__
'''


def _tuple_display(names: list[str]) -> str:
    return f"({names[0]},)" if len(names) == 1 else "(" + ", ".join(names) + ")"


def _concat(prefix: str, is_list: list[bool]) -> str:
    """The expression of a node's per-input tuple: one display of the Tensor arguments' values, joined
    with the tuples a Tensor[] argument made (`(e0, e1)`, `e0 + (e1,)`)."""
    parts, run = [], []
    for k, listed in enumerate(is_list):
        if listed:
            if run:
                parts.append(_tuple_display(run))
                run = []
            parts.append(f"{prefix}{k}")
        else:
            run.append(f"{prefix}{k}")
    if run:
        parts.append(_tuple_display(run))
    return " + ".join(parts) or "()"


def _record_function(shape: RecorderShape, entry: bool = False) -> str:
    """The factory `make_record_...(op)` of `record(args, out)` for ops of `shape`; with `entry`, the
    factory `make_entry_...(op, run_below)` of `run_and_record(args)`, the op's whole Autograd entry:
    the same body after `out = run_below(args)`, returning `out` (one Python call less per op than a
    wrapper calling both)."""
    diff, lists, outputs = shape
    lines = ["def run_and_record(args):", "    out = run_below(args)"] if entry else ["def record(args, out):"]
    for k, i in enumerate(diff):
        lines.append((_TENSOR_LIST_ARG if i in lists else _TENSOR_ARG).format(i=i, k=k))
    is_list = [i in lists for i in diff]
    needs = [f"n{k}" for k in range(len(is_list))]
    any_need = " or ".join(needs) or "False"
    lines.append(_NODE.format(any_need=f"({any_need})" if len(needs) > 1 else any_need, edges=_concat("e", is_list),
                              metas=_concat("m", is_list), needs=_tuple_display(needs), result=" out" if entry else "",
                              frames=2 if entry else 3))
    if outputs == "one":
        lines.append(_ONE_OUTPUT)
    else:
        lines.append(_OUTPUTS.format(first_only=" and not k" if outputs == "first" else ""))
    lines.append(_VIEW)
    if entry:
        lines.append("    return out")
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    # the node class is bound when the function is made (wiring sets op.backward_cls at import, before
    # any entry is built): a closure read per call instead of a global and an attribute
    if entry:
        return (f"def {entry_name(shape)}(op, run_below):\n    backward_cls = op.backward_cls\n\n"
                + indent(body, "    ") + "    return run_and_record\n")
    return (f"def {record_name(shape)}(op):\n    backward_cls = op.backward_cls\n\n" + indent(body, "    ")
            + "    return record\n")


def gen_recorders(registry: Registry) -> str:
    shapes = recorder_shapes(registry)
    parts = [HEADER + _RECORDERS_MODULE]
    parts += [_record_function(shape) for shape in shapes]
    parts += [_record_function(shape, entry=True) for shape in shapes]
    parts.append("RECORDER_FACTORIES = {\n"
                 + "".join(f"    {shape!r}: {record_name(shape)},\n" for shape in shapes) + "}\n")
    parts.append("ENTRY_FACTORIES = {\n"
                 + "".join(f"    {shape!r}: {entry_name(shape)},\n" for shape in shapes) + "}\n")
    return "\n\n".join(parts)
