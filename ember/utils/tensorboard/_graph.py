"""A model's graph for TensorBoard's graph tab: an `ember.fx` trace written as a TensorFlow GraphDef.

torch's writer traces with torch.jit and writes the jit graph; ember traces with
`ember.fx.symbolic_trace` and writes one GraphDef node per fx node, named by the module it
belongs to so TensorBoard folds the model by its submodules, as torch's names do:

* a placeholder is `input/<name>` and each tensor the model returns `output/output.<i>`
  (op `IO Node`, torch's);
* a `call_module` node is `<Model>/<Type>[attr]/.../<node>` (the path of the module it calls),
  its op the module's class (`ember.nn.Linear`);
* a `get_attr` node (a parameter, buffer or constant) sits in the scope of the module owning
  it, op `get_attr`;
* `call_function` and `call_method` nodes sit in the model's scope (an fx trace does not
  record which module's code called them), op the function's qualified name
  (`ember.ops.add.Tensor`, `operator.add`) or `Tensor.<method>`.

Every node lists the nodes it reads as its inputs, and its `attr` attribute holds its other
arguments as text. Given the model's inputs, the traced graph is run once (in eval mode,
without autograd) and each node's `_output_shapes` records the shapes of the tensors it made.
"""
from __future__ import annotations

from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ember.frontend.autograd.grad_mode import no_grad
from ember.frontend.tensor import Tensor
import ember
from ember import nn
from ember.nn.modules.module import Module
from ember.utils.pytree import tree_flatten

__all__ = ["graph"]


def graph(model: Module, inputs: Any = None, verbose: bool = False) -> tuple[GraphDef, RunMetadata]:
    """`model`'s fx graph as a GraphDef, and the run metadata TensorBoard shows it with."""
    # ember.fx is the layer above ember.utils: imported here, when a graph is drawn (see the layer contract)
    from ember.fx import symbolic_trace
    from ember.fx.node import format_arg, map_arg

    if not isinstance(model, Module):
        raise TypeError(f"SummaryWriter.add_graph: model must be an ember.nn.Module, got {type(model).__name__}")
    args = () if inputs is None else tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    was_training = model.training
    model.train(False)
    try:
        traced = symbolic_trace(model)
        values = _run(traced, args) if args else {}
    finally:
        model.train(was_training)
    if verbose:
        print(traced.graph)

    root = type(model).__name__
    names: dict = {}
    nodes = []
    for node in traced.graph.nodes:
        if node.op == "output":
            outputs: list = []
            map_arg(node.args, outputs.append)
            for i, out in enumerate(outputs, 1):
                nodes.append(_node_def(f"output/output.{i}", "IO Node", [names[out]], "", values.get(out)))
            continue
        if node.op == "placeholder":
            name, op, text = f"input/{node.name}", "IO Node", ""
        else:
            name = f"{_scope(model, root, node)}/{node.name}"
            op = _op_name(model, node)
            text = f"{{ name : {node.target} }}" if node.op == "get_attr" else \
                "{ args : %s, kwargs : %s }" % (format_arg(node.args, _ref), format_arg(node.kwargs, _ref))
        names[node] = name
        nodes.append(_node_def(name, op, [names[n] for n in node.all_input_nodes], text, values.get(node)))

    devices = sorted({f"/device:{t.device.type.upper()}:{t.device.index or 0}" for t in _tensors(args)})
    metadata = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device=d)
                                                           for d in devices or ["/device:CPU:0"]]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), metadata


def _run(traced: Module, args: tuple) -> dict:
    """Each node's value from running `traced` on `args`."""
    from ember.fx import Interpreter

    values: dict = {}

    class Recorder(Interpreter):
        def run_node(self, node):
            values[node] = result = super().run_node(node)
            return result

    with no_grad():
        Recorder(traced, garbage_collect_values=False).run(*args)
    return values


def _tensors(value) -> list[Tensor]:
    """The tensors in `value` (nested tuples, lists, dict values) in order."""
    return [t for t in tree_flatten(value)[0] if isinstance(t, Tensor)]


def _ref(node) -> str:
    return f"%{node.name}"


def _scope(model: Module, root: str, node) -> str:
    """`Model/Type[attr]/...` down to the module a call_module node calls or a get_attr node's owner."""
    if node.op not in ("call_module", "get_attr"):
        return root
    path = node.target.split(".")
    if node.op == "get_attr":
        path = path[:-1]
    parts, module = [root], model
    for atom in path:
        module = getattr(module, atom, None)
        parts.append(f"{type(module).__name__}[{atom}]")
    return "/".join(parts)


def _op_name(model: Module, node) -> str:
    from ember.fx.node import target_name

    if node.op == "call_module":
        cls = type(model.get_submodule(node.target))
        if getattr(nn, cls.__name__, None) is cls:
            return f"ember.nn.{cls.__name__}"          # ember.nn.Linear, not ember.nn.modules.linear.Linear
        return f"{cls.__module__}.{cls.__qualname__}"
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "get_attr":
        return "get_attr"
    name = getattr(node.target, "__name__", None)
    for public, namespace in (("ember", ember), ("ember.nn.functional", nn.functional)):
        if name and getattr(namespace, name, None) is node.target:
            return f"{public}.{name}"                   # ember.matmul, not ember._generated.functions.matmul
    return target_name(node.target)


def _node_def(name: str, op: str, inputs: list[str], text: str, value) -> NodeDef:
    attr = {"attr": AttrValue(s=text.encode("utf-8"))}
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in t.shape])
              for t in _tensors(value)]
    if shapes:
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=shapes))
    return NodeDef(name=name, op=op, input=inputs, attr=attr)
