"""`Node`: one step of a graph (torch.fx's Node).

A node is a placeholder (an input), a get_attr (a parameter, buffer or constant of the module),
a call_function (a registry op or any Python callable), a call_module or call_method, or the
output. Its `args`/`kwargs` hold other nodes and plain values; `users` are the nodes that read
it. `meta` carries what a tracer learnt: `meta["val"]`, the value the node produced while tracing
(for an export, a fake tensor: shape, dtype, device, no data).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["Node", "map_arg"]

OPCODES = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")


def map_arg(value, fn: Callable[["Node"], Any]):
    """`value` with `fn` applied to every Node inside (tuples, lists, dict values, slices)."""
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        mapped = tuple(map_arg(v, fn) for v in value)
        return type(value)(*mapped) if hasattr(type(value), "_fields") else mapped
    if isinstance(value, list):
        return [map_arg(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_arg(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(map_arg(value.start, fn), map_arg(value.stop, fn), map_arg(value.step, fn))
    return value


def target_name(target) -> str:
    """How a node's target is written: `ember.ops.add.Tensor` for a registry op, the qualified name of a
    Python callable, the string itself for a module path or method name."""
    if isinstance(target, str):
        return target
    op_name = getattr(target, "schema", None) and getattr(target, "name", None)
    if isinstance(op_name, str):                      # a registry op (OpDef)
        return f"ember.ops.{op_name}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    if module in ("builtins", "_operator", "operator"):
        return f"operator.{name}" if module != "builtins" else name
    return f"{module}.{name}" if module else name


class Node:
    """One step of a `Graph`; create nodes through the graph (`graph.call_function(...)`)."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict) -> None:
        if op not in OPCODES:
            raise ValueError(f"Node: op must be one of {OPCODES}, got {op!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.meta: dict[str, Any] = {}
        self.users: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._set_inputs(tuple(args), dict(kwargs))

    # -- inputs and users --------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._set_inputs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list["Node"]:
        """The nodes this node reads, in order of first appearance."""
        found: dict[Node, None] = {}
        map_arg((self._args, self._kwargs), lambda n: found.setdefault(n))
        return list(found)

    def _set_inputs(self, args: tuple, kwargs: dict) -> None:
        for n in self.all_input_nodes if (self._args or self._kwargs) else ():
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        for n in self.all_input_nodes:
            if n.graph is not self.graph:
                raise ValueError(f"Node {self.name}: argument {n.name} belongs to another graph")
            n.users[self] = None

    def replace_all_uses_with(self, replacement: "Node") -> list["Node"]:
        """Make every user of this node read `replacement` instead; returns those users."""
        users = list(self.users)
        for user in users:
            def swap(n, user=user):
                return replacement if n is self else n
            user._set_inputs(map_arg(user._args, swap), map_arg(user._kwargs, swap))
        return users

    def replace_input_with(self, old: "Node", new: "Node") -> None:
        def swap(n):
            return new if n is old else n
        self._set_inputs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # -- printing ----------------------------------------------------------------------------
    def format_node(self) -> str:
        """The node as `Graph.__str__` prints it (torch.fx's format)."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self._args[0] if self._args else None)}"
        text = f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target_name(self.target)}]"
        if self.op == "get_attr":
            return text
        return f"{text}(args = {_fmt(self._args)}, kwargs = {_fmt(self._kwargs)})"

    def __repr__(self) -> str:
        return self.name


def format_arg(value, node_text: Callable[["Node"], str], key_text: Callable[[Any], str] = str) -> str:
    """A node argument as text: nodes by `node_text`, containers as Python writes them, dict keys by
    `key_text`, anything else by repr (how the graph prints, tabulates and writes code)."""
    if isinstance(value, Node):
        return node_text(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_arg(v, node_text, key_text) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(format_arg(v, node_text, key_text) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key_text(k)}: {format_arg(v, node_text, key_text)}" for k, v in value.items()) + "}"
    return repr(value)


def _fmt(value) -> str:
    return format_arg(value, lambda n: f"%{n.name}")
