"""`Graph`: an ordered list of `Node`s, printable as a table and as Python (torch.fx's Graph).

A graph is built by a tracer (`ember.fx.symbolic_trace`, `ember.export.export`) or by hand, and
transformed by editing nodes: insert with `inserting_before`/`inserting_after` and the node
constructors, rewire with `Node.replace_all_uses_with`, remove with `erase_node`.
`python_code()` writes the graph as the body of a `forward` function, for reading: a
GraphModule runs its graph node by node (`ember.fx.Interpreter`), it never compiles that text.
"""
from __future__ import annotations

import contextlib
import keyword
import re
from typing import Any, Callable, Iterator

from ember.core.symint import SymInt

from .node import Node, format_arg, map_arg, target_name

__all__ = ["Graph"]


class Graph:
    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._names: set[str] = set()
        self._insert_before: Node | None = None      # new nodes go before this one (None: at the end)

    # -- reading -----------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """The nodes in order (a copy: editing the graph while iterating over it is safe)."""
        return list(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def find_nodes(self, *, op: str, target=None) -> list[Node]:
        return [n for n in self._nodes if n.op == op and (target is None or n.target is target or n.target == target)]

    @property
    def output_node(self) -> Node:
        for n in reversed(self._nodes):
            if n.op == "output":
                return n
        raise RuntimeError("Graph has no output node")

    # -- building ----------------------------------------------------------------------------
    def _unique_name(self, name: str) -> str:
        """`name` made a Python identifier, with `_1`, `_2`, ... added if the graph has it already."""
        base = _sanitize(name)
        candidate, i = base, 0
        while candidate in self._names:
            i += 1
            candidate = f"{base}_{i}"
        self._names.add(candidate)
        return candidate

    def create_node(self, op: str, target, args: tuple = (), kwargs: dict | None = None,
                    name: str | None = None) -> Node:
        node = Node(self, self._unique_name(name or _default_name(op, target)), op, target, args, kwargs or {})
        if self._insert_before is None:
            self._nodes.append(node)
        else:
            self._nodes.insert(self._nodes.index(self._insert_before), node)
        return node

    def placeholder(self, name: str, default_value: Any = None) -> Node:
        node = self.create_node("placeholder", name, name=name)
        if default_value is not None:
            node.args = (default_value,)
        return node

    def get_attr(self, qualified_name: str, name: str | None = None) -> Node:
        return self.create_node("get_attr", qualified_name, name=name or qualified_name.replace(".", "_"))

    def call_function(self, the_function: Callable, args: tuple = (), kwargs: dict | None = None,
                      name: str | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, name)

    def call_module(self, module_name: str, args: tuple = (), kwargs: dict | None = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs)

    def call_method(self, method_name: str, args: tuple = (), kwargs: dict | None = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs)

    def output(self, result) -> Node:
        return self.create_node("output", "output", (result,), name="output")

    @contextlib.contextmanager
    def inserting_before(self, node: Node | None = None):
        """New nodes go before `node` (None: at the start), in order, until the block ends."""
        saved = self._insert_before
        self._insert_before = node if node is not None else (self._nodes[0] if self._nodes else None)
        try:
            yield
        finally:
            self._insert_before = saved

    @contextlib.contextmanager
    def inserting_after(self, node: Node | None = None):
        """New nodes go after `node` (None: at the end), in order, until the block ends."""
        saved = self._insert_before
        if node is None:
            self._insert_before = None
        else:
            i = self._nodes.index(node)
            self._insert_before = self._nodes[i + 1] if i + 1 < len(self._nodes) else None
        try:
            yield
        finally:
            self._insert_before = saved

    def erase_node(self, node: Node) -> None:
        if node.users:
            raise RuntimeError(f"Tried to erase Node {node.name} but it still had {len(node.users)} users in the "
                               f"graph: {list(node.users)}!")
        if node is self._insert_before:
            raise RuntimeError(f"Graph.erase_node: {node.name} is where new nodes are being inserted")
        node._set_inputs((), {})
        self._nodes.remove(node)
        self._names.discard(node.name)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Node] = lambda n: n) -> Node:
        """A copy of `node` (from any graph) in this one, its inputs mapped by `arg_transform`."""
        copy = self.create_node(node.op, node.target, map_arg(node.args, arg_transform),
                                map_arg(node.kwargs, arg_transform), node.name)
        copy.meta = dict(node.meta)
        return copy

    def eliminate_dead_code(self) -> bool:
        """Remove nodes nobody reads (placeholders, the output, ops that write an argument and functions
        marked `side_effectful` stay)."""
        changed = False
        for node in reversed(self._nodes):
            if node.op in ("placeholder", "output") or node.users or _writes_an_argument(node):
                continue
            self.erase_node(node)
            changed = True
        return changed

    def lint(self) -> None:
        """Check that every node reads only nodes defined before it, and names are unique."""
        seen: set[Node] = set()
        names: set[str] = set()
        for node in self._nodes:
            if node.name in names:
                raise RuntimeError(f"Graph.lint: node name {node.name!r} is used twice")
            names.add(node.name)
            for arg in node.all_input_nodes:
                if arg not in seen:
                    raise RuntimeError(f"Graph.lint: node {node.name} reads {arg.name}, which is not defined before it")
            seen.add(node)

    # -- printing ----------------------------------------------------------------------------
    def __str__(self) -> str:
        lines = ["graph():"]
        lines += ["    " + n.format_node() for n in self._nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs."""
        print(self.tabular())

    def tabular(self) -> str:
        rows = [("opcode", "name", "target", "args", "kwargs")]
        for n in self._nodes:
            rows.append((n.op, n.name, target_name(n.target), _code(n.args), _code(n.kwargs)))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        rule = "  ".join("-" * w for w in widths)
        text = ["  ".join(c.ljust(w) for c, w in zip(rows[0], widths)).rstrip(), rule]
        text += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows[1:]]
        return "\n".join(text)

    def python_code(self, root_module: str = "self") -> str:
        """The graph as the source of a `forward` method (for reading and printing)."""
        params = [n.name + _annotation(n) for n in self._nodes if n.op == "placeholder"]
        body = []
        for n in self._nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                body.append(f"return {_code(n.args[0])}")
            elif n.op == "get_attr":
                body.append(f"{n.name} = {_attr_path(root_module, n.target)}")
            elif n.op == "call_module":
                body.append(f"{n.name} = {_attr_path(root_module, n.target)}({_call_args(n)})")
            elif n.op == "call_method":
                if not n.args:
                    raise ValueError(f"Graph.python_code: call_method node {n.name} has no object to call it on")
                first, *rest = n.args
                rest_args = ", ".join([_code(a) for a in rest] + [f"{k} = {_code(v)}" for k, v in n.kwargs.items()])
                body.append(f"{n.name} = {_code(first)}.{n.target}({rest_args})")
            else:
                body.append(f"{n.name}{_annotation(n)} = {target_name(n.target)}({_call_args(n)})")
        header = f"def forward({', '.join([root_module] + params)}):"
        return "\n".join([header] + ["    " + line for line in body or ["pass"]]) + "\n"


def _attr_path(root: str, target: str) -> str:
    """`self.layer.weight`, with getattr() for path parts that are not identifiers (`getattr(self, "0")`)."""
    text = root
    for atom in target.split("."):
        text = f"{text}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) else f"getattr({text}, {atom!r})"
    return text


def _writes_an_argument(node: Node) -> bool:
    """Whether the node has an effect besides its value: an op writing an argument, or a function marked
    `side_effectful` (a check that raises)."""
    mutated = getattr(node.target, "mutated", ()) or getattr(node.target, "written_lists", ())
    return node.op == "call_function" and (bool(mutated) or getattr(node.target, "side_effectful", False))


def _call_args(n: Node) -> str:
    return ", ".join([_code(a) for a in n.args] + [f"{k} = {_code(v)}" for k, v in n.kwargs.items()])


def _code(value) -> str:
    """A node argument as Python source (nodes by name): in `.code` and in print_tabular's columns."""
    return format_arg(value, lambda n: n.name, repr)


_SHORT_DTYPES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                 "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8"}


def _annotation(node: Node) -> str:
    """`: "f32[2, 3]"` for a node whose traced value (meta["val"]) is a tensor, `: "Sym(b*t)"` for a symbolic
    size (a dynamic-shape export's size nodes), else nothing."""
    val = node.meta.get("val")
    if isinstance(val, SymInt):
        return f': "Sym({val})"'
    dtype = getattr(val, "dtype", None)
    shape = getattr(val, "shape", None)
    if dtype is None or shape is None or not hasattr(val, "_data"):
        return ""
    name = str(dtype).rsplit(".", 1)[-1]
    return f': "{_SHORT_DTYPES.get(name, name)}[{", ".join(str(s) for s in shape)}]"'


def _default_name(op: str, target) -> str:
    if op == "placeholder" and isinstance(target, str):
        return target
    if isinstance(target, str):
        base = target.split(".")[-1]
    else:
        name = getattr(target, "name", None)
        base = name.split(".")[0] if isinstance(name, str) and hasattr(target, "schema") else \
            getattr(target, "__name__", "node")
    return base


_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")


def _sanitize(name: str) -> str:
    name = _ILLEGAL.sub("_", name).strip("_") or "node"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name) or name == "self":
        name += "_1"
    return name


