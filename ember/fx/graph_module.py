"""`GraphModule`: an nn.Module whose forward is a Graph (torch.fx's GraphModule).

It holds the parameters, buffers and submodules its graph's get_attr and call_module nodes
name, copied (shared, not cloned) from the root module it was made from. `forward` runs the
graph with an `Interpreter`: ember compiles no generated source at run time, so every frame of
a call is a file and a line of ember. `.code` is the graph written as Python, for reading;
`recompile()` rewrites it after the graph was edited.
"""
from __future__ import annotations

from typing import Any

from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.frontend.tensor import Tensor

from .graph import Graph
from .interpreter import Interpreter

__all__ = ["GraphModule"]


class GraphModule(Module):
    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        object.__setattr__(self, "_class_name", class_name)
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module"):
                _copy_attr(root, self, node.target)
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        object.__setattr__(self, "_graph", graph)
        self.recompile()

    @property
    def code(self) -> str:
        return self._code

    def recompile(self) -> str:
        """Re-derive `.code` from the graph (call after editing it); returns the code."""
        object.__setattr__(self, "_code", self._graph.python_code())
        return self._code

    def forward(self, *args):
        return Interpreter(self).run(*args)

    def print_readable(self, print_output: bool = True) -> str:
        lines = self._code.rstrip("\n").split("\n")
        text = f"class {self._class_name}(ember.nn.Module):\n" + "\n".join("    " + line for line in lines) + "\n"
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return f"{super().__str__()}\n\n\n\n{self._code}"


def _copy_attr(src, dst: Module, target: str) -> None:
    """Make `dst.<target>` (a dotted path) the object `src` has there, creating empty Modules on the way
    (a dict root holds either the full dotted name or nested dicts/modules)."""
    *path, field = target.split(".")
    if isinstance(src, dict) and target in src:
        for atom in path:
            if not hasattr(dst, atom):
                dst.add_module(atom, Module())
            dst = getattr(dst, atom)
        return _set(dst, field, src[target])
    for atom in path:
        src = src[atom] if isinstance(src, dict) else getattr(src, atom)
        if not hasattr(dst, atom):
            dst.add_module(atom, Module())
        dst = getattr(dst, atom)
    _set(dst, field, src[field] if isinstance(src, dict) else getattr(src, field))


def _set(dst: Module, field: str, value) -> None:
    if isinstance(value, Parameter) or isinstance(value, Module):
        setattr(dst, field, value)
    elif isinstance(value, Tensor):
        dst.register_buffer(field, value)
    else:
        setattr(dst, field, value)
