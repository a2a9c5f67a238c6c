"""ember.fx: a small graph IR users can read and transform (torch.fx's API).

`Graph` and `Node` are the IR (graph.py, node.py), `GraphModule` runs one as an nn.Module
(graph_module.py), `Interpreter` and `Transformer` walk it (interpreter.py). `ember.export`
captures programs into this IR.
"""
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Transformer", "map_arg"]
