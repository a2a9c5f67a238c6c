"""`Interpreter` runs a GraphModule node by node; `Transformer` rebuilds it (torch.fx's).

Subclass either and override the method of one opcode (`call_function`, `placeholder`, ...) to
change what happens at those nodes: an Interpreter that records shapes, a Transformer that swaps
one function for another. A GraphModule's own `forward` is an Interpreter run.
"""
from __future__ import annotations

from typing import Any, Iterator

from .graph import Graph
from .node import Node, map_arg

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    def __init__(self, module, garbage_collect_values: bool = True) -> None:
        self.module = module
        self.graph: Graph = module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env: dict[Node, Any] = {}
        # a value is dropped after its last reader ran (inputs are kept by the caller anyway)
        self._last_use: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self._last_use.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None):
        self.env = dict(initial_env or {})
        self._args_iter: Iterator = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            for dead in self._last_use.get(node, ()):
                self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, node: Node):
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        return getattr(self, node.op)(node.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, node: Node) -> tuple[tuple, dict]:
        return map_arg(node.args, self.env.__getitem__), map_arg(node.kwargs, self.env.__getitem__)

    # -- one method per opcode ---------------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        try:
            return next(self._args_iter)
        except StopIteration:
            if args:
                return args[0]                  # the placeholder's default value
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!") \
                from None

    def get_attr(self, target: str, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target: str, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target: str):
        obj = self.module
        for atom in target.split("."):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {target}")
            obj = getattr(obj, atom)
        return obj


class Transformer(Interpreter):
    """Run the graph on Nodes of a new graph: each method returns the node it creates there.
    `transform()` returns the new GraphModule."""

    def __init__(self, module) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()

    def placeholder(self, target, args, kwargs):
        return self.new_graph.placeholder(target, default_value=args[0] if args else None)

    def get_attr(self, target, args, kwargs):
        return self.new_graph.get_attr(target)

    def call_function(self, target, args, kwargs):
        return self.new_graph.call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.new_graph.call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.new_graph.call_module(target, args, kwargs)

    def run_node(self, node: Node):
        result = super().run_node(node)
        if isinstance(result, Node):
            result.meta = dict(node.meta)
        return result

    def transform(self):
        from .graph_module import GraphModule

        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        result = self.run(*[None] * len(placeholders))
        self.new_graph.output(result)
        return GraphModule(self.module, self.new_graph)
