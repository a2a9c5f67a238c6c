"""ember.fx: a small graph IR users can read and transform (torch.fx's API).

`Graph` and `Node` are the IR (graph.py, node.py), `GraphModule` runs one as an nn.Module
(graph_module.py), `Interpreter` and `Transformer` walk it (interpreter.py), `symbolic_trace`
records a module's forward with proxies (tracer.py, proxy.py), `subgraph_rewriter.replace_pattern`
rewrites every occurrence of a pattern. `ember.export` captures programs into
this IR at the op level.
"""
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError
from .tracer import Tracer, symbolic_trace
from . import subgraph_rewriter

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "TraceError", "Tracer", "Transformer", "map_arg",
           "symbolic_trace", "subgraph_rewriter"]
