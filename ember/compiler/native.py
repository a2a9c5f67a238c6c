"""Native replay: a no-grad program run as its backend's kernels over native arrays.

What an op call costs in eager code besides its kernel (the dispatcher, the shape rule, wrapping
the result in a Tensor) depends only on the shapes, dtypes and devices, which a static program's
guards fix. So for a program run without autograd or autocast, `native_replay` does that work
once: each op's shape rule runs at build time on the traced values, giving the spec its kernel
takes, and a call then runs `kernel(spec, *native arrays)` for each node in turn, wrapping only
the outputs in Tensors. Values are dropped after their last reader, as in eager code; values that
read no input are computed once, when the runner is built (constant folding); a compiled op may run
another kernel than eager's where the backend's generator offers one (`compiled_kernels`).

Only programs that fit are replayed: every op has a native kernel on the inputs' backend (ops that
do not are decomposed first, by the graph layer's decomposing capture), none draws random numbers
or writes an input in place (a recorded step's runner may: `writes_inputs`), no output is an input or
a view of one, and every size is static. For any other, `native_replay` returns None and the program
runs as a straight line of op dispatches (replay.py).
"""
from __future__ import annotations

import operator
from typing import Callable

from ember.dispatcher import ALL_OPS, fused_kernel_compiler
from ember.dispatcher import keys as K
from ember.frontend.tensor import Tensor, make_tensor
from ember.export.trace import view_base
from ember.fx import Node
from ember.fx.node import map_arg

from .branches import check_branch
from .fusion import schedule, values_written
from .layout import fold_layout_copies, strided_bmm
from .plan import Plan

__all__ = ["native_replay", "native_runner", "backend_of", "kept_ops"]


def kept_ops(backend_key: int) -> dict:
    """A decomposition table keeping every op with a native kernel on `backend_key` (the rest decompose)."""
    return {name: None for name, op in ALL_OPS.items() if backend_key in op.kernels}


def backend_of(example_inputs: list) -> tuple[int, object] | None:
    """(backend key, device) shared by every tensor of `example_inputs`; None when there are none or several,
    or when one starts past its storage's start: the capture's fakes start at theirs, so the views native
    replay makes from their specs (absolute storage offsets) would read the wrong elements (the guard key
    holds the offset, so such inputs get a program of their own, replayed op by op)."""
    tensors = [v for v in example_inputs if isinstance(v, Tensor)]
    if not tensors:
        return None
    key = tensors[0]._keys & K.BACKEND_MASK
    if any((t._keys & K.BACKEND_MASK) != key or (t._base is not None and t.storage_offset()) for t in tensors):
        return None
    return key, tensors[0]._device


def native_replay(program, example_inputs: list) -> Callable | None:
    """The native runner of `program` (see the module docstring), or None when the program does not fit."""
    found = backend_of(example_inputs)
    if program.range_constraints or found is None:
        return None
    nodes = list(program.graph.nodes)
    outputs = nodes[-1].args[0]
    if any(isinstance(o, Node) and view_base(o).op == "placeholder" for o in outputs):
        return None                         # an output that is an input, or a view of one, keeps its Tensor
    return native_runner(nodes, [n for n in nodes if n.op == "placeholder"], outputs, *found)


def native_runner(nodes: list, inputs: list, outputs, key: int, device, wrap=None,
                  consume_inputs: bool = False, writes_inputs: bool = False) -> Callable | None:
    """A function running the call nodes of `nodes` (in order) natively: it takes one value per node of
    `inputs` (Tensors or native arrays) and returns `outputs`' values, each wrapped in a Tensor where
    `wrap` (a bool per output; all by default) says so. Chains of pointwise ops run as one generated
    kernel where the backend offers a generator (fusion.py). With `consume_inputs` it
    takes the values as one list, which it empties, and drops each after its last reader (a backward's
    saved values, freed as it goes, as eager autograd frees them). With `writes_inputs` ops may write the
    inputs' arrays in place (a recorded step's optimizer update: recording.py). None when a node does not
    fit."""
    strided = getattr(fused_kernel_compiler(device.type), "strided_bmm", None)
    if strided is not None:             # products reading their operands' batch strides in place (layout.py)
        nodes, inputs, outputs = fold_layout_copies(nodes, inputs, outputs, _bmm_spec)
    given = set(inputs)
    steps = _steps([n for n in nodes if n not in given], key, device.type, writes_inputs, strided)       # an input's node is not run, only read
    if steps is None:
        return None
    steps, constants = _folded(steps, outputs)
    units = schedule(steps, outputs, device.type)
    layout = Plan(nodes, ([] if consume_inputs else list(inputs)) + [o for o in outputs if isinstance(o, Node)])
    runs = _unpacking(units)
    frees = layout.frees([members for _, members, _ in runs])
    plan = [(u.kernel, u.spec, layout.reader(u.args),
             layout.slot[targets[0]] if u.kernel is None or len(targets) == 1 and len(members) == 1 else None,
             tuple(layout.slot[o] for o in targets), f) for (u, members, targets), f in zip(runs, frees)]
    input_slots = [layout.slot[n] for n in inputs]
    template = [None] * layout.size                 # each call's values start as this: the constants in place
    for n, value in constants.items():
        template[layout.slot[n]] = value
    out_reader = layout.reader(tuple(outputs))
    wrap = [True] * len(outputs) if wrap is None else wrap
    out_dtypes = [o.meta["val"].dtype if isinstance(o, Node) and w else None for o, w in zip(outputs, wrap)]

    def run(*values):
        return run_list(values)

    def run_list(values):
        env = template.copy()
        for s, v in zip(input_slots, values):
            env[s] = v._data if isinstance(v, Tensor) else v
        v = None                                # (holding no input past its last reader)
        if consume_inputs:
            values.clear()
        for kernel, spec, read, target, targets, frees in plan:
            args = read(env)
            if target is None:                      # a fused group: one kernel, several values
                for t, value in zip(targets, kernel(spec, *args)):
                    env[t] = value
            else:
                env[target] = kernel(spec, *args) if kernel is not None else args[0][args[1]]   # else: a getitem
            for s in frees:
                env[s] = None
        return tuple(make_tensor(a, dt, device, key, None) if dt is not None and a is not None else a
                     for a, dt in zip(out_reader(env), out_dtypes))
    chosen = run_list if consume_inputs else run
    chosen.units = units                            # what it runs, for reading (tests, explain)
    return chosen


def _folded(steps: list, outputs) -> tuple[list, dict]:
    """Constant folding: (the steps left to run each call, {node: value} of those run now, once). A step is
    run now when everything it reads was (an `arange`, a causal mask compared from two), it writes nothing
    in place, nothing writes into its value (or a view of it, or another result of the op that made it)
    later, and it is no output (a caller could change what it got): its value is then the same on every
    call."""
    written = {_holder(w) for node, _, _ in steps for w in values_written(node)}
    returned = {_holder(o) for o in outputs if isinstance(o, Node)}
    values: dict = {}
    left = []
    for step in steps:
        node, kernel, spec = step
        holder = _holder(node)
        if (node.target is not check_branch and holder not in written and holder not in returned
                and not values_written(node) and all(a in values for a in node.all_input_nodes)):
            args = map_arg(node.args, values.__getitem__)
            values[node] = kernel(spec, *args) if kernel is not None else args[0][args[1]]
        else:
            left.append(step)
    return left, values


def _holder(value: Node) -> Node:
    """The node whose memory `value` is part of: through views (view_base) and the results of an op with
    several (a getitem of sort's values is part of what sort made)."""
    while True:
        value = view_base(value)
        if value.op == "call_function" and value.target is operator.getitem and isinstance(value.args[0], Node):
            value = value.args[0]
        else:
            return value


def _unpacking(units: list) -> list:
    """(unit, the nodes it runs, the nodes its results go to) per step of the replay. An op with several
    results read only through getitems puts each result into its getitem's slot itself, so the getitems
    are not steps of their own (a result nobody reads goes to the op's own slot, which nobody reads)."""
    items: dict = {}
    for u in units:
        if u.kernel is None:
            items.setdefault(u.members[0].args[0], []).append(u.members[0])
    runs, absorbed = [], set()
    for u in units:
        if u.kernel is None and u.members[0] in absorbed:
            continue
        node = u.members[0]
        found = items.get(node) if u.kernel is not None and len(u.members) == 1 else None
        results = node.meta.get("val") if found else None
        by_index = {g.args[1]: g for g in found} if found else {}
        if found and isinstance(results, (tuple, list)) and len(node.users) == len(found) == len(by_index):
            absorbed.update(found)
            runs.append((u, (node, *found), tuple(by_index.get(i, node) for i in range(len(results)))))
        else:
            runs.append((u, u.members, u.outputs))
    return runs


def _steps(nodes: list, key: int, device_type: str, writes_inputs: bool = False, strided: Callable | None = None):
    """(node, kernel, spec) per call node, a getitem's spec None; None when a node does not fit. `strided`:
    the generator's kernel for the strided_bmm nodes of layout.py."""
    compiled = compiled_kernels(device_type)
    steps = []
    for node in nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            steps.append((node, None, None))
            continue
        if node.target is strided_bmm:
            steps.append((node, strided, node.meta["spec"]))
            continue
        if node.target is check_branch:             # a decided branch's check, on the native value
            steps.append((node, _branch_check(key), None))
            continue
        op = node.target
        found = getattr(op, "kernels", {}).get(key)
        if found is None or (op.written_lists and not writes_inputs) or op.generator_arg is not None \
                or op.shape_rule is None:
            return None
        if not writes_inputs and any(view_base(node.args[i]).op == "placeholder" for i in op.mutated):
            return None                     # writes an input or the state: eager semantics need its Tensor
        spec = op.shape_rule(op, *_vals(node.args))
        kernel = found[0] if op.name not in compiled else _preferring(compiled[op.name], found[0])
        steps.append((node, _writing(kernel, op.mutated[0]) if op.mutated else kernel, spec))
    return steps


def _bmm_spec(node: Node):
    """The spec bmm's kernel takes for the bmm `node` (its shape rule's)."""
    return node.target.shape_rule(node.target, *_vals(node.args))


def compiled_kernels(device_type: str) -> dict:
    """{op name: kernel} that compiled code runs instead of the op's registered kernel on `device_type` (the
    fused-kernel generator's `kernels`, hookspec ember_fused_kernel_compiler)."""
    return getattr(fused_kernel_compiler(device_type), "kernels", None) or {}


def _preferring(kernel: Callable, registered: Callable) -> Callable:
    """`kernel`, with the registered kernel running the calls it answers NotImplemented."""
    def run(spec, *args):
        out = kernel(spec, *args)
        return registered(spec, *args) if out is NotImplemented else out
    return run


def _branch_check(key: int) -> Callable:
    """check_branch on a native array (read through its backend)."""
    from ember.dispatcher.plugins import REGISTRY

    to_host = REGISTRY.by_key[key].to_host

    def run(spec, value, taken):
        check_branch(to_host(value), taken)
    return run


def _writing(kernel: Callable, position: int) -> Callable:
    """An in-place kernel (into a value the program made, `empty` + `copy_`) as one returning what it wrote."""
    def run(spec, *args):
        kernel(spec, *args)
        return args[position]
    return run


def _vals(args):
    return tuple(a.meta["val"] if isinstance(a, Node) else _vals(a) if isinstance(a, (list, tuple)) else a
                 for a in args)
