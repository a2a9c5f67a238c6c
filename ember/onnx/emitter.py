"""Turning an exported program's graph into an ONNX graph, node by node.

`Emitter` walks the graph of an `ExportedProgram`: placeholders become the model's inputs
(the user's) or initializers (parameters, buffers, constants), each call_function node is
lowered by its entry in the op table (table.py) to ONNX nodes, and the output node names the
model's outputs. A lowering sees `LoweringContext`: the node's arguments, with tensors as the
names of ONNX values, and helpers to add nodes and constants.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ember.core import dtype as _dt
from ember.core.symint import SymInt
from ember.export.graph_signature import InputKind
from ember.export.size_nodes import SIZE_OPERATORS, sym_size
from ember.frontend.tensor import Tensor
from ember.fx import Node

__all__ = ["Emitter", "LoweringContext", "UnsupportedOperatorError", "onnx_type"]


class UnsupportedOperatorError(RuntimeError):
    """An op of the model has no ONNX lowering at the requested opset."""


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "float64": 11, "bfloat16": 16}


def onnx_type(dtype: _dt.dtype) -> int:
    """The onnx.TensorProto element type of an ember dtype."""
    try:
        return _ONNX_TYPES[dtype.name]
    except KeyError:
        raise UnsupportedOperatorError(f"ember.onnx.export: dtype {dtype} has no ONNX element type") from None


class LoweringContext:
    """What a lowering works with: `args` (the node's arguments in schema order, tensors given as ONNX
    value names), `vals` (the traced values: fake tensors with shape and dtype), `out_val`, and
    `add`/`const` to build ONNX nodes and constants."""

    def __init__(self, emitter: "Emitter", node: Node, args: tuple, vals: tuple) -> None:
        self.emitter = emitter
        self.node = node
        self.args = args
        self.vals = vals
        self.out_val = node.meta.get("val")

    def add(self, op_type: str, inputs: list, n_outputs: int = 1, **attributes) -> Any:
        """Add an ONNX node; returns its output name (or a list of them when n_outputs > 1)."""
        return self.emitter.add(op_type, inputs, n_outputs, self.node.name, **attributes)

    def const(self, value, dtype: _dt.dtype | None = None) -> str:
        """A constant (an initializer) holding `value`, of `dtype` (or numpy's choice)."""
        return self.emitter.const(value, dtype)

    def dtype(self, i: int) -> _dt.dtype:
        """The dtype of argument `i` (a tensor)."""
        return self.vals[i].dtype

    def compute_dtype(self, *positions: int) -> _dt.dtype:
        """The dtype PyTorch computes an elementwise op of the arguments at `positions` in: the result's,
        or for a bool result (a comparison) the operands' promoted type (Python numbers weak)."""
        if isinstance(self.out_val, Tensor) and self.out_val.dtype is not _dt.bool:
            return self.out_val.dtype
        from ember.core.type_promotion import result_type

        return result_type(*[self.vals[i] for i in positions])

    def operand(self, i: int, dtype: _dt.dtype) -> str:
        """Argument `i` as an ONNX value of `dtype`: a tensor (cast when its dtype differs) or a number
        (a constant)."""
        a = self.args[i]
        if isinstance(self.vals[i], Tensor):
            return a if self.vals[i].dtype is dtype else self.add("Cast", [a], to=onnx_type(dtype))
        if isinstance(self.vals[i], SymInt):         # a size computed in the graph: a 1-element int64 tensor
            scalar = self.add("Reshape", [a, self.const(np.zeros(0, np.int64))])
            return scalar if dtype is _dt.int64 else self.add("Cast", [scalar], to=onnx_type(dtype))
        return self.const(np.array(a), dtype)

    def sizes(self, values) -> str:
        """A 1-D int64 ONNX value holding `values`: ints, and sizes the graph computes (a dynamic program's
        size nodes, each a 1-element tensor); a constant when all are ints."""
        values = list(values)
        if all(isinstance(v, int) for v in values):
            return self.const(np.array(values, dtype=np.int64))
        parts: list = []
        for v in values:
            if isinstance(v, int):
                if parts and isinstance(parts[-1], list):
                    parts[-1].append(v)
                else:
                    parts.append([v])
            else:
                parts.append(v)
        return self.add("Concat", [self.const(np.array(p, dtype=np.int64)) if isinstance(p, list) else p
                                   for p in parts], axis=0)

    @property
    def static(self) -> bool:
        """Whether the node's result has a shape of plain ints (no dynamic dimension)."""
        val = self.out_val
        return not isinstance(val, Tensor) or all(isinstance(s, int) for s in val.shape)


class Emitter:
    def __init__(self, ep, opset: int, input_names: list[str] | None, output_names: list[str] | None,
                 axis_names: dict | None = None) -> None:
        import onnx  # noqa: F401  (fail early, with the extra to install)

        self.ep = ep
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.values: dict[Node, Any] = {}
        self.inputs: list = []
        self.outputs: list = []
        self.input_names = input_names
        self.output_names = output_names
        self._counter = 0
        # {(value name, axis): the name dynamic_axes gives that axis}: the dim_param of an input or output
        self.axis_names = dict(axis_names or {})

    # -- building ---------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self._counter += 1
        return f"{base}__{self._counter}"

    def add(self, op_type: str, inputs: list, n_outputs: int, base: str, **attributes):
        from onnx import helper

        outputs = [self.fresh(base) for _ in range(n_outputs)]
        attrs = {k: v for k, v in attributes.items() if v is not None}
        names = [i if i is not None else "" for i in inputs]
        while names and names[-1] == "":                # an omitted optional input is left off the end
            names.pop()
        self.nodes.append(helper.make_node(op_type, names, outputs, name=self.fresh(op_type), **attrs))
        return outputs[0] if n_outputs == 1 else outputs

    def const(self, value, dtype: _dt.dtype | None = None) -> str:
        from onnx import numpy_helper

        array = np.asarray(value)
        if dtype is not None:
            from ember.core.numpy_interop import to_numpy_dtype

            array = array.astype(to_numpy_dtype(dtype))
        name = self.fresh("const")
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    # -- the walk ---------------------------------------------------------------------------------
    def emit(self, table: dict):
        from onnx import helper

        specs = {s.name: s for s in self.ep.graph_signature.input_specs}
        user_nodes = [n for n in self.ep.graph.nodes if n.op == "placeholder" and specs[n.name].kind is InputKind.USER_INPUT]
        given = list(self.input_names or [])
        user_names = {n: given[i] if i < len(given) else n.name for i, n in enumerate(user_nodes)}
        self.used = set(user_names.values())          # value names taken (the graph is in SSA form)
        for node in self.ep.graph.nodes:
            if node.op == "placeholder":
                spec = specs[node.name]
                if spec.kind is InputKind.USER_INPUT:
                    name = user_names[node]
                    val = node.meta["val"]
                    self.inputs.append(helper.make_tensor_value_info(name, onnx_type(val.dtype),
                                                                     self._dims(name, val.shape)))
                    self.values[node] = name
                elif node.users:
                    store = self.ep.constants if spec.kind is InputKind.CONSTANT_TENSOR or spec.persistent is False \
                        else self.ep.state_dict
                    self.values[node] = self._initializer(spec.target, store[spec.target])
            elif node.op == "call_function":
                self.values[node] = self._lower(node, table)
            elif node.op == "output":
                self._outputs(node)
        return self

    def _initializer(self, name: str, t: Tensor) -> str:
        from onnx import numpy_helper

        if name in self.used:                       # a state name equal to an input's: keep both apart
            name = self.fresh(name)
        self.used.add(name)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(t.detach().numpy()), name))
        return name

    def _dims(self, name: str, shape) -> list:
        """An ONNX value's dims: ints, and for a dynamic dimension its name (dim_param): the one dynamic_axes
        gives, else the symbol's; None for a size computed from several."""
        dims = []
        for axis, s in enumerate(shape):
            given = self.axis_names.get((name, axis))
            dims.append(given if given is not None else s if isinstance(s, int) else
                        str(s) if s.expr.is_Symbol else None)
        return dims

    def _size(self, node: Node) -> str:
        """A size node (size_nodes.py) as a 1-element int64 tensor: Shape for sym_size, else the operator."""
        if node.target is sym_size:
            x, d = node.args
            ndim = len(node.args[0].meta["val"].shape)
            return self.add("Shape", [self.values[x]], 1, node.name, start=d % ndim, end=d % ndim + 1)
        inputs = [self.values[a] if isinstance(a, Node) else self.const(np.array([a], dtype=np.int64))
                  for a in node.args]
        return self.add(_SIZE_OPS[node.target], inputs, 1, node.name)

    def _lower(self, node: Node, table: dict):
        if node.target is operator.getitem:
            source, index = node.args
            return self.values[source][index]
        if node.target in _SIZE_OPERATORS:
            return self._size(node)
        op = node.target
        lowering = table.get(op.name)
        if lowering is None and op.inplace_of is not None:
            lowering = table.get(op.inplace_of)     # relu_ as relu: later readers of its argument get the result
        if lowering is None or getattr(lowering, "min_opset", 0) > self.opset:
            where = node.meta.get("nn_module") or "the top-level module"
            raise UnsupportedOperatorError(
                f"ember.onnx.export: the op {op.name} has no ONNX lowering at opset {self.opset} (called in "
                f"{where}, graph node {node.name}); the op table is ember/onnx/table.py")
        args = tuple(self._arg(a) for a in node.args)
        vals = tuple(_val(a) for a in node.args)
        result = lowering(LoweringContext(self, node, args, vals))
        for position in op.mutated:                 # an in-place op: its argument now holds the result
            if isinstance(node.args[position], Node):
                self.values[node.args[position]] = result
        return result

    def _arg(self, a):
        if isinstance(a, Node):
            return self.values[a]
        if isinstance(a, (list, tuple)) and any(isinstance(v, Node) for v in a):
            return type(a)(self._arg(v) for v in a)
        return a

    def _outputs(self, node: Node) -> None:
        from onnx import helper

        names = iter(self.output_names or [])
        for value in node.args[0]:
            if not isinstance(value, Node):
                continue
            inner = self.values[value]
            name = next(names, value.name)
            if name in self.used:                   # an input returned as it is, or one value twice
                name = self.fresh(name)
            self.used.add(name)
            self.nodes.append(helper.make_node("Identity", [inner], [name], name=self.fresh("output")))
            val = value.meta["val"]
            self.outputs.append(helper.make_tensor_value_info(name, onnx_type(val.dtype), self._dims(name, val.shape)))

    def model(self, graph_name: str):
        from onnx import helper

        graph = helper.make_graph(self.nodes, graph_name, self.inputs, self.outputs, self.initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                 producer_name="ember")


_SIZE_OPERATORS = frozenset(SIZE_OPERATORS.values())
# ONNX's integer Div truncates where // floors: equal on the non-negative sizes a program computes
_SIZE_OPS = {operator.add: "Add", operator.sub: "Sub", operator.mul: "Mul", operator.floordiv: "Div",
             operator.mod: "Mod", operator.pow: "Pow", operator.neg: "Neg"}


def _val(a):
    if isinstance(a, Node):
        return a.meta.get("val")
    if isinstance(a, (list, tuple)):
        return type(a)(_val(v) for v in a)
    return a
