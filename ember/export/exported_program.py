"""`ExportedProgram`: a captured program, its state and how to run it (torch.export's).

The graph (`.graph`, runnable as `.graph_module`) takes the program's state as inputs, lifted:
parameters, buffers, constants, then the user's flattened inputs (`.graph_signature` says which
is which). `.module()` puts the state back: an nn.Module holding the parameters and buffers
under their original names, whose forward checks the inputs against what the program was
exported for (the guards), runs the graph and rebuilds the output's structure.
"""
from __future__ import annotations

from dataclasses import dataclass

from ember.frontend.autograd.grad_mode import is_grad_enabled, no_grad
from ember.frontend.tensor import Tensor
from ember.fx import Graph, GraphModule, Interpreter
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.utils.pytree import TreeSpec, tree_flatten_like, tree_unflatten

from .graph_signature import ExportGraphSignature, InputKind

__all__ = ["ExportedProgram", "GuardError", "InputGuard"]


class ProgramInterpreter(Interpreter):
    """Runs a program's graph: a node the program called under no_grad runs under no_grad again."""

    def run_node(self, node):
        if node.meta.get("grad_enabled") is False and is_grad_enabled():
            with no_grad():
                return super().run_node(node)
        return super().run_node(node)


class GuardError(AssertionError):
    """An input breaks an assumption the exported program was traced under (its shape, dtype or device, or a
    non-tensor input's value). An AssertionError, as torch.export's guard failures are."""


@dataclass(frozen=True)
class InputGuard:
    """What one flattened user input must be: a tensor's shape, dtype and device, or a plain value.
    A dynamic dimension's entry in `shape` is its name; `hint` is then the example input's shape."""

    path: str                  # how the input is reached: "args[0]", "kwargs['mask']"
    shape: tuple | None = None
    dtype: object = None
    device: object = None
    value: object = None       # for a non-tensor input: the value the trace specialised on
    hint: tuple | None = None

    def check(self, value, sizes: dict) -> None:
        """Raise GuardError unless `value` passes; a dynamic dimension's size goes into `sizes`
        ({name: (size, where it was read)}), where an earlier input's size for it must match."""
        if self.shape is None:
            if type(value) is not type(self.value) or value != self.value:
                raise GuardError(f"Guard failed: {self.path} == {self.value!r} (the program was exported with that "
                                 f"value; got {_describe(value)})")
            return
        if not isinstance(value, Tensor):
            raise GuardError(f"Guard failed: {self.path} is a Tensor (got {_describe(value)})")
        if value.dim() != len(self.shape):
            raise GuardError(f"Guard failed: {self.path}.dim() == {len(self.shape)} (got a tensor of shape "
                             f"{list(value.shape)}, the program was exported for shape {list(self.shape)})")
        for d, (want, got) in enumerate(zip(self.shape, value.shape)):
            if type(want) is str:
                seen = sizes.setdefault(want, (got, f"{self.path}.size()[{d}]"))
                if seen[0] != got:
                    raise GuardError(f"Guard failed: {self.path}.size()[{d}] == {seen[1]} (both are dimension "
                                     f"{want!r}; got {got} and {seen[0]})")
            elif want != got:
                raise GuardError(f"Guard failed: {self.path}.size()[{d}] == {want} (got {got}; the program was "
                                 f"exported for shape {list(self.shape)})")
        if value.dtype != self.dtype:
            raise GuardError(f"Guard failed: {self.path}.dtype == {self.dtype} (got {value.dtype})")
        if value.device != self.device:
            raise GuardError(f"Guard failed: {self.path}.device == {self.device} (got {value.device})")


def _example(guard: InputGuard, seen=None):
    """An input that passes `guard`: a fake of its shape (the example's, for a dynamic one), dtype and
    device, with the strides of `seen` (the trace's fake of it) for a static one, or its value."""
    if guard.shape is None:
        return guard.value
    from ember._generated import functions as F

    from .fake import labelled, meta_like

    if guard.hint is None and isinstance(seen, Tensor) and tuple(seen.shape) == tuple(guard.shape):
        return labelled(meta_like(seen), guard.device)
    return labelled(F.empty(guard.hint or guard.shape, dtype=guard.dtype, device="meta"), guard.device)


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"a tensor of shape {list(value.shape)}"
    return repr(value)


class ExportedProgram:
    def __init__(self, graph: Graph, graph_signature: ExportGraphSignature, state_dict: dict[str, Tensor],
                 constants: dict[str, Tensor], in_spec: TreeSpec, out_spec: TreeSpec,
                 guards: list[InputGuard], range_constraints: dict | None = None,
                 shape_guards: list | None = None) -> None:
        self.graph_module = GraphModule({}, graph)
        self.graph_signature = graph_signature
        self.state_dict = state_dict
        self.constants = constants
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.guards = guards
        # {dynamic dimension: (min, max or None)}, and the ShapeGuards (symbolic.py) the trace assumed
        self.range_constraints = dict(range_constraints or {})
        self.shape_guards = list(shape_guards or [])

    @property
    def graph(self) -> Graph:
        return self.graph_module.graph

    def state_inputs(self, lookup=None) -> list:
        """The values of the state placeholders, in graph order (`lookup(target, kind)`: where to read them)."""
        values = []
        for spec in self.graph_signature.input_specs:
            if spec.kind is InputKind.USER_INPUT:
                continue
            if lookup is not None:
                values.append(lookup(spec.target, spec.kind))
            elif spec.kind is InputKind.CONSTANT_TENSOR or spec.persistent is False:
                values.append(self.constants[spec.target])
            else:
                values.append(self.state_dict[spec.target])
        return values

    def user_leaves(self, args: tuple, kwargs: dict | None) -> list:
        """The user inputs flattened as the graph takes them, each checked against its guard."""
        try:
            leaves = tree_flatten_like((tuple(args), dict(kwargs or {})), self.in_spec)
        except ValueError as exc:
            raise GuardError(f"Guard failed: the inputs have the structure {self.in_spec!r} the program was "
                             f"exported with ({exc})") from None
        sizes: dict = {}
        for guard, leaf in zip(self.guards, leaves):
            guard.check(leaf, sizes)
        if self.range_constraints:
            self._check_sizes(sizes)
        return [leaf for guard, leaf in zip(self.guards, leaves) if guard.shape is not None]

    def _check_sizes(self, sizes: dict) -> None:
        """The dynamic dimensions' sizes are in their ranges and meet the trace's assumptions."""
        for name, (size, where) in sizes.items():
            lo, hi = self.range_constraints[name]
            if size < lo or (hi is not None and size > hi):
                raise GuardError(f"Guard failed: {where} = {size} is outside the range of dynamic dimension "
                                 f"{name!r}, [{lo}, {'inf' if hi is None else hi}]")
        if self.shape_guards:
            from .symbolic import evaluate

            values = {name: size for name, (size, _) in sizes.items()}
            for guard in self.shape_guards:
                if not evaluate(guard.expr, values):
                    now = ", ".join(f"{k} = {v}" for k, v in values.items())
                    raise GuardError(f"Guard failed: {guard} (the program was traced assuming it; here {now})")

    def __call__(self, *args, **kwargs):
        return self.run(args, kwargs)

    def run(self, args: tuple, kwargs: dict | None = None, lookup=None):
        """The program on `args`/`kwargs` (checked by the guards), its state read by `lookup` (see
        `state_inputs`), the outputs in the structure the traced module returned."""
        values = self.state_inputs(lookup) + self.user_leaves(args, kwargs)
        return tree_unflatten(list(ProgramInterpreter(self.graph_module).run(*values)), self.out_spec)

    def run_decompositions(self, table: dict | None = None) -> "ExportedProgram":
        """The same program with every op that is not a primitive replaced by its decomposition (or its
        explicit kernel), recursively: the result runs on a backend implementing only
        `ember.dispatcher.primitive_ops()`. `table` ({op name: function, or None to keep the op})
        overrides an op's own decomposition. The state is shared with this program."""
        from .capture import DecomposingCaptureMode
        from .trace import trace_program

        names = iter(self.graph_signature.user_inputs)
        input_names = [next(names) if g.shape is not None else g.path for g in self.guards]
        # each input as the trace saw it: with its strides, which decide what a reshape in a decomposition is
        # (a view, or a copy)
        seen = {n.name: n.meta.get("val") for n in self.graph.nodes if n.op == "placeholder"}
        args, kwargs = tree_unflatten([_example(g, seen.get(name)) for g, name in zip(self.guards, input_names)],
                                      self.in_spec)
        return trace_program(self.module(), args, kwargs, DecomposingCaptureMode, input_names, self._dims(),
                             table=table)

    def _dims(self) -> list | None:
        """The dynamic dimensions per flattened input, as `export`'s dynamic_shapes gave them."""
        if not self.range_constraints:
            return None
        from .dynamic_shapes import Dim

        made = {name: Dim(name, min=lo, max=hi) for name, (lo, hi) in self.range_constraints.items()}
        return [{d: made[s] for d, s in enumerate(g.shape) if type(s) is str} or None if g.shape is not None
                else None for g in self.guards]

    def module(self) -> Module:
        """An nn.Module running the program on its own parameters and buffers (shared with
        `.state_dict` and `.constants`, not copied)."""
        return UnliftedModule(self)

    def __str__(self) -> str:
        code = self.graph_module.print_readable(print_output=False).rstrip("\n")
        text = ("ExportedProgram:\n" + _indent(code, 4) + "\n\nGraph signature:\n"
                + _indent(str(self.graph_signature), 4) + "\n")
        if self.range_constraints:
            ranges = ", ".join(f"{k}: [{lo}, {'inf' if hi is None else hi}]"
                               for k, (lo, hi) in self.range_constraints.items())
            text += f"Range constraints: {{{ranges}}}\n"
        if self.shape_guards:
            text += "Shape guards: " + ", ".join(str(g) for g in self.shape_guards) + "\n"
        return text

    __repr__ = __str__


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.split("\n"))


class UnliftedModule(Module):
    """`ExportedProgram.module()`: the program's state as this module's parameters and buffers, under
    their original names, so `state_dict()`, `load_state_dict()`, `.to()` and optimizers work on it."""

    def __init__(self, program: ExportedProgram) -> None:
        super().__init__()
        object.__setattr__(self, "_program", program)
        for spec in program.graph_signature.input_specs:
            if spec.kind is InputKind.PARAMETER:
                _set_path(self, spec.target, program.state_dict[spec.target], parameter=True)
            elif spec.kind is InputKind.BUFFER:
                value = program.state_dict[spec.target] if spec.persistent is not False else \
                    program.constants[spec.target]
                _set_path(self, spec.target, value, persistent=spec.persistent is not False)

    def _state(self, target: str, kind: InputKind):
        if kind is InputKind.CONSTANT_TENSOR:
            return self._program.constants[target]
        obj = self
        *path, field = target.split(".")
        for atom in path:
            obj = getattr(obj, atom)
        return getattr(obj, field)

    def forward(self, *args, **kwargs):
        return self._program.run(args, kwargs, self._state)


def _set_path(root: Module, target: str, value: Tensor, parameter: bool = False, persistent: bool = True) -> None:
    *path, field = target.split(".")
    obj = root
    for atom in path:
        if atom not in obj._modules:
            obj.add_module(atom, Module())
        obj = obj._modules[atom]
    if parameter:
        obj.register_parameter(field, value if isinstance(value, Parameter) else Parameter(value))
    else:
        obj.register_buffer(field, value, persistent=persistent)
