"""`symbolic_trace` and `Tracer`: a module's forward recorded as a Graph, without running any op.

The trace calls `forward` once with a `Proxy` per parameter of its signature (torch.fx's
symbolic tracing): what the code does to them becomes nodes. Submodules that are leaves
(`Tracer.is_leaf_module`: ember's own layers, not containers) become call_module nodes instead
of being traced into; a module's parameters and buffers read in forward become get_attr nodes;
a tensor the code builds outside any op becomes a constant attribute (`_tensor_constant0`, ...).
`concrete_args` fixes some inputs to values (their placeholders keep the value as a default and
Python control flow on them is specialised).

Subclass `Tracer` to change what is a leaf, e.g. to keep a custom attention module whole
because its forward computes with sizes in Python (`math.sqrt(k.size(-1))`).
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable

from ember.frontend.tensor import Tensor
from ember.nn.modules.module import Module

from .graph import Graph
from .graph_module import GraphModule
from .node import Node
from .proxy import Proxy

__all__ = ["Tracer", "symbolic_trace"]

_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")


class Tracer:
    def __init__(self) -> None:
        self.graph: Graph | None = None
        self.root: Module | None = None

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Ember's own layers (ember.nn, not its containers) are leaves, as torch.nn's are for torch.fx."""
        return type(m).__module__.startswith("ember.nn") and type(m).__name__ not in _CONTAINERS

    # -- building nodes ----------------------------------------------------------------------------
    def create_proxy(self, kind: str, target, args: tuple, kwargs: dict, name: str | None = None) -> Proxy:
        node = self.graph.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)), name)
        return Proxy(node, self)

    def create_arg(self, a: Any):
        """A node argument for `a`: proxies as their nodes, the root's tensors as get_attr nodes, other
        tensors as constants of the root, containers element by element."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            return tuple(self.create_arg(v) for v in a) if not hasattr(type(a), "_fields") else \
                type(a)(*[self.create_arg(v) for v in a])
        if isinstance(a, list):
            return [self.create_arg(v) for v in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Tensor):
            return self._tensor_node(a)
        if isinstance(a, Module):
            raise RuntimeError(f"symbolic_trace: a module ({type(a).__name__}) is passed as an argument; call it "
                               "instead, or mark it a leaf")
        return a

    def _tensor_node(self, t: Tensor) -> Node:
        name = self._state_names.get(id(t))
        if name is None:
            name = f"_tensor_constant{len(self._constants)}"
            self._constants[name] = t
            self._state_names[id(t)] = name
        node = self._attr_nodes.get(name)
        if node is None:
            node = self._attr_nodes[name] = self.graph.get_attr(name)
        return node

    # -- the trace ---------------------------------------------------------------------------------
    def trace(self, root: Module | Callable, concrete_args: dict | None = None) -> Graph:
        if not isinstance(root, Module):
            fn, root = root, Module()
            root.forward = fn
        else:
            fn = type(root).forward.__get__(root)
        self.root, self.graph = root, Graph()
        self._constants: dict[str, Tensor] = {}
        self._attr_nodes: dict[str, Node] = {}
        self._state_names = {id(t): n for n, t in list(root.named_parameters()) + list(root.named_buffers())}
        self._module_names = {id(m): n for n, m in root.named_modules()}
        args = self._placeholders(fn, concrete_args or {})
        with self._patched():
            result = fn(*args)
        self.graph.output(self.create_arg(result))
        return self.graph

    @property
    def constants(self) -> dict[str, Tensor]:
        """The tensors the traced code built outside any op, by the attribute name the graph reads."""
        return dict(self._constants)

    def _placeholders(self, fn: Callable, concrete: dict) -> list:
        args = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"symbolic_trace: forward takes *{p.name}; give the inputs as named parameters")
            if p.name in concrete:
                args.append(concrete[p.name])
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            node = self.graph.create_node("placeholder", p.name, default, name=p.name)
            args.append(Proxy(node, self))
        return args

    @contextlib.contextmanager
    def _patched(self):
        """Module calls through `call_module`; the root's tensors read as attributes are get_attr proxies."""
        tracer = self
        original_call = Module.__call__
        original_getattr = Module.__getattr__

        def call(module, *args, **kwargs):
            return tracer.call_module(module, original_call, args, kwargs)

        def getattr_(module, name):
            value = original_getattr(module, name)
            if isinstance(value, Tensor) and id(value) in tracer._state_names:
                return Proxy(tracer._tensor_node(value), tracer)
            return value

        Module.__call__ = call
        Module.__getattr__ = getattr_
        try:
            yield
        finally:
            Module.__call__ = original_call
            Module.__getattr__ = original_getattr

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict):
        name = self._module_names.get(id(m))
        if name is not None and name != "" and self.is_leaf_module(m, name):
            return self.create_proxy("call_module", name, args, kwargs)
        return forward(m, *args, **kwargs)


def symbolic_trace(root: Module | Callable, concrete_args: dict | None = None) -> GraphModule:
    """`root`'s forward (or the function `root`) as a GraphModule, traced symbolically."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "GraphModule")
    return GraphModule(_RootWithConstants(tracer.root, tracer.constants), graph, name)


class _RootWithConstants:
    """The root module seen by GraphModule's attribute copy, with the trace's constants added."""

    def __init__(self, module: Module, constants: dict) -> None:
        self._module = module
        self._constants = constants

    def __getattr__(self, name: str):
        if name in self._constants:
            return self._constants[name]
        return getattr(self._module, name)
