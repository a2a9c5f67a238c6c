"""`export(module, args)`: run the module once on fakes under the capture mode, keep the graph.

The steps: a placeholder per parameter, buffer and user input (in that order; constants met
while tracing are lifted between the buffers and the inputs), each bound to a fake; the forward
call under `CaptureMode`, which records every op; an output node over the result's tensors; dead
code removed; the signature, the guards and the state gathered into an `ExportedProgram`.
Python control flow runs once, on the traced values: the graph is specialised on the shapes and
on every non-tensor input, which the guards then check at each call.
"""
from __future__ import annotations

import contextlib
import inspect
import operator

from ember.frontend.tensor import Tensor
from ember.fx import Graph, Node
from ember.nn.modules.hooks import register_module_forward_hook, register_module_forward_pre_hook
from ember.nn.modules.module import Module
from ember.utils.pytree import tree_flatten, tree_unflatten

from .capture import CaptureMode
from .exported_program import ExportedProgram, InputGuard
from .dynamic_shapes import leaf_dims
from .fake import labelled, meta_like, symbolic_meta
from .graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec

__all__ = ["export", "DataDependentError", "view_base"]


class DataDependentError(RuntimeError):
    """The traced program read a tensor's values (`.item()`, `bool(t)`, `.tolist()`), which a trace of
    shapes cannot follow. `ember.compile` turns it into a graph break."""


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None,
           strict: bool = False) -> ExportedProgram:
    """Capture `mod(*args, **kwargs)` as an `ExportedProgram` of registry ops.

    The module runs once, on fake tensors (no compute, no memory for data); `strict` is accepted
    for torch.export's signature and changes nothing (ember traces at the dispatcher, never Python
    bytecode)."""
    if not isinstance(mod, Module):
        raise TypeError(f"export(): expected an ember.nn.Module as `mod`, got {type(mod).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"export(): expected a tuple of positional inputs as `args`, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"export(): expected a dict of keyword inputs as `kwargs`, got {type(kwargs).__name__}")
    kwargs = dict(kwargs or {})
    dims = leaf_dims(mod.forward, args, kwargs, dynamic_shapes) if dynamic_shapes is not None else None
    return trace_program(mod, args, kwargs, dims=dims)


def trace_program(mod: Module, args: tuple, kwargs: dict, mode_class=CaptureMode,
                  input_names: list[str] | None = None, dims: list | None = None, **mode_options) -> ExportedProgram:
    """The capture itself: `mod(*args, **kwargs)` run once under `mode_class` (CaptureMode, or
    DecomposingCaptureMode for `run_decompositions`); `input_names` name the user-input placeholders;
    `dims` gives the dynamic dimensions of each flattened input ({dimension: Dim} or None)."""
    shape_env = None
    if dims is not None and any(dims):
        from .symbolic import ShapeEnv

        shape_env = ShapeEnv()
    graph = Graph()
    specs: list[InputSpec] = []
    state: dict[str, Tensor] = {}
    constants: dict[str, Tensor] = {}
    lifted: dict[str, Tensor] = {}

    def lift(t: Tensor):
        """A tensor made outside any op: a constant placeholder, placed before the user inputs."""
        name = _free_name("lifted_tensor_", constants, lifted)
        lifted[name] = t
        index = first_input + len(lifted) - 1
        nodes = graph.nodes
        with graph.inserting_before(nodes[index]) if index < len(nodes) else graph.inserting_after(None):
            node = graph.placeholder("c_" + name)
        node.meta["val"] = t
        specs.insert(index, InputSpec(InputKind.CONSTANT_TENSOR, node.name, name))
        return node, meta_like(t)

    mode = mode_class(graph, lift, **mode_options)
    _state_placeholders(mod, graph, mode, specs, state, constants)
    first_input = len(graph.nodes)
    leaves, in_spec = tree_flatten((args, kwargs))
    fake_leaves, guards = _input_placeholders(mod, graph, mode, specs, leaves, (args, kwargs, input_names),
                                              (dims, shape_env))
    fake_args, fake_kwargs = tree_unflatten(fake_leaves, in_spec)
    with _state_kept(mod) as reassigned, _module_paths(mod, mode), _data_reads_named(), mode:
        result = mod(*fake_args, **fake_kwargs)
        out_leaves, out_spec = tree_flatten(result)
        outputs = tuple(mode.graph_value(v) for v in out_leaves)
        outputs += tuple(mode.finish(out_leaves))     # a mode may add outputs after the program's own
        _write_back(graph, mode, reassigned())
    constants.update(lifted)
    graph.output(outputs)
    graph.eliminate_dead_code()
    graph.lint()
    if shape_env is not None:
        shape_env.check_still_dynamic()
    signature = ExportGraphSignature(specs, [OutputSpec(OutputKind.USER_OUTPUT, getattr(o, "name", repr(o)))
                                             for o in outputs], _buffers_written(graph, specs))
    return ExportedProgram(graph, signature, state, constants, in_spec, out_spec, guards,
                           shape_env.ranges() if shape_env else {}, shape_env.guards if shape_env else [])


def _free_name(prefix: str, *taken: dict) -> str:
    k = 0
    while any(f"{prefix}{k}" in t for t in taken):
        k += 1
    return f"{prefix}{k}"


@contextlib.contextmanager
def _state_kept(root: Module):
    """The module's parameters and buffers as they were before the trace, whatever forward assigned
    (`self.b = self.b + x` puts a fake there); yields a function listing (buffer, the value forward left
    in its place) for the buffers forward reassigned, which the program then writes in place."""
    before = [(m, name, t) for m in root.modules() for name, t in list(m._buffers.items())]
    params = [(m, name, t) for m in root.modules() for name, t in list(m._parameters.items())]

    def reassigned() -> list:
        return [(t, m._buffers[name]) for m, name, t in before
                if m._buffers.get(name) is not t and isinstance(m._buffers.get(name), Tensor)]
    try:
        yield reassigned
    finally:
        for m, name, t in before:
            m._buffers[name] = t
        for m, name, t in params:
            m._parameters[name] = t


def _write_back(graph: Graph, mode: CaptureMode, reassigned: list) -> None:
    """A buffer forward reassigned keeps its tensor; the program copies the new value into it."""
    from ember.dispatcher import ALL_OPS

    for original, new in reassigned:
        target, _ = mode.node_and_value(original)
        value, _ = mode.node_and_value(new)
        node = graph.call_function(ALL_OPS["copy_"], (target, value, False))
        node.meta["grad_enabled"] = False


@contextlib.contextmanager
def _data_reads_named():
    """A program reading a traced value's data (`.item()`, `.tolist()`, `if x.sum() > 0`) gets an error
    saying so, instead of the meta device's "no data"."""
    from ember.core.errors import MissingKernelError

    try:
        yield
    except MissingKernelError as exc:
        if "Cannot copy out of meta tensor" not in str(exc):
            raise
        raise DataDependentError("export: the program reads a traced tensor's values (.item(), .tolist(), bool() of a "
                           "tensor, or control flow on them), which an export cannot follow: it traces shapes, "
                           "not data; keep such code out of forward or pass the value as an input") from None


@contextlib.contextmanager
def _module_paths(root: Module, mode: CaptureMode):
    """Keep `mode.module_path` the qualified name of the innermost module running (the nodes it records
    carry it as meta["nn_module"], for messages naming where in the model an op was called)."""
    names = {id(m): name for name, m in root.named_modules()}
    stack: list[str] = []

    def enter(module, args):
        stack.append(names.get(id(module), type(module).__name__))
        mode.module_path = stack[-1]

    def leave(module, args, output):
        stack.pop()
        mode.module_path = stack[-1] if stack else ""

    handles = [register_module_forward_pre_hook(enter), register_module_forward_hook(leave, always_call=True)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _state_placeholders(mod, graph, mode, specs, state, constants) -> None:
    """Placeholders `p_<name>` for the parameters and `b_<name>` for the buffers (a tied parameter once)."""
    non_persistent = {f"{prefix}{'.' if prefix else ''}{name}" for prefix, m in mod.named_modules()
                      for name in getattr(m, "_non_persistent_buffers_set", ())}
    for kind, prefix, named in ((InputKind.PARAMETER, "p_", mod.named_parameters()),
                                (InputKind.BUFFER, "b_", mod.named_buffers())):
        for name, t in named:
            if id(t) in mode.known:
                continue
            node = graph.placeholder(prefix + name.replace(".", "_"))
            node.meta["val"] = t
            mode.bind(t, node, meta_like(t))
            persistent = None if kind is InputKind.PARAMETER else name not in non_persistent
            specs.append(InputSpec(kind, node.name, name, persistent))
            (constants if persistent is False else state)[name] = t


def _input_placeholders(mod, graph, mode, specs, leaves, inputs: tuple, dynamic: tuple):
    """A placeholder and a fake per tensor input (named after forward's parameters), a guard per input.
    `inputs`: (args, kwargs, the placeholder names or None); `dynamic`: (dims per leaf or None, ShapeEnv)."""
    args, kwargs, input_names = inputs
    dims, shape_env = dynamic
    paths = _leaf_paths(mod, args, kwargs, len(leaves))
    if input_names is not None:
        paths = [(path, name) for (path, _), name in zip(paths, input_names)]
    fakes, guards = [], []
    for i, ((path, name), leaf) in enumerate(zip(paths, leaves)):
        if isinstance(leaf, Tensor):
            node = graph.placeholder(name)
            leaf_dims = dims[i] if dims is not None else None
            meta = meta_like(leaf) if not leaf_dims else symbolic_meta(leaf, leaf_dims, shape_env, path)
            node.meta["val"] = fake = labelled(meta, leaf.device)
            mode.bind(fake, node, meta)
            for d, dim in (leaf_dims or {}).items():
                mode.size_sources.setdefault(dim.__name__, (node, d))
            specs.append(InputSpec(InputKind.USER_INPUT, node.name))
            fakes.append(fake)
            guards.append(InputGuard(path, tuple(str(s) if not isinstance(s, int) else s for s in meta.shape),
                                     leaf.dtype, leaf.device, hint=tuple(leaf.shape) if leaf_dims else None))
        else:
            fakes.append(leaf)
            guards.append(InputGuard(path, value=leaf))
    return fakes, guards


def _leaf_paths(mod, args, kwargs, n: int) -> list[tuple[str, str]]:
    """(path, placeholder name) per flattened input: `args[0]` named after forward's first parameter."""
    try:
        names = [p.name for p in inspect.signature(mod.forward).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    out = []

    def walk(value, path, name):
        leaves, _ = tree_flatten(value)
        if len(leaves) == 1 and not isinstance(value, (tuple, list, dict)):
            out.append((path, name))
            return
        items = value.items() if isinstance(value, dict) else enumerate(value or ())
        for k, v in items:
            walk(v, f"{path}[{k!r}]", f"{name}_{k}")

    for i, a in enumerate(args):
        walk(a, f"args[{i}]", names[i] if i < len(names) else f"args_{i}")
    for k, v in kwargs.items():
        walk(v, f"kwargs[{k!r}]", k)
    return out[:n]


def _buffers_written(graph: Graph, specs: list[InputSpec]) -> dict[str, str]:
    """{node name: buffer name} for the ops that write a buffer in place, directly or through a view of
    it (`self.b[0] = 5` writes a `select` of the buffer)."""
    buffer_of = {s.name: s.target for s in specs if s.kind is InputKind.BUFFER}
    written = {}
    for node in graph.nodes:
        for pos in getattr(node.target, "mutated", ()) if node.op == "call_function" else ():
            base = view_base(node.args[pos])
            if getattr(base, "name", None) in buffer_of:
                written[node.name] = buffer_of[base.name]
    return written


def view_base(value):
    """The node a chain of views starts from (the value itself when it is no view); a result of a view op
    with several results (split, unbind) is read through its `getitem`, a view too."""
    while isinstance(value, Node) and value.op == "call_function":
        if value.target is operator.getitem and isinstance(value.args[0], Node):
            source = value.args[0]
            if source.op != "call_function" or not getattr(source.target, "is_view", False):
                break
            value = source
        elif getattr(value.target, "is_view", False):
            value = value.args[value.target.alias_return]
        else:
            break
    return value
