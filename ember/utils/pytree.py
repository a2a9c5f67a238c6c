"""Nested containers as a flat list of leaves plus a spec to rebuild them (torch.utils._pytree's idea).

A module's inputs and outputs are tensors inside tuples, lists, dicts and named tuples. The graph
layer works on flat lists (a graph's placeholders and outputs), so it flattens a value into its
leaves and a `TreeSpec`, and rebuilds the same structure around other leaves. The spec is plain
data (the container kind, dict keys, the named tuple's class, the children's specs), printable
and serialisable.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_flatten_like", "tree_unflatten", "tree_map"]


@dataclass(frozen=True)
class TreeSpec:
    """`kind`: "leaf", "tuple", "list", "dict", "namedtuple" or "none"; `context`: the dict's keys or
    the named tuple's class; `children`: one spec per element."""

    kind: str
    context: Any = None
    children: tuple["TreeSpec", ...] = field(default_factory=tuple)

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind == "namedtuple":
            return f"{self.context.__name__}({inner})"
        return f"[{inner}]" if self.kind == "list" else f"({inner}{',' if len(self.children) == 1 else ''})"


LEAF = TreeSpec("leaf")
_NONE = TreeSpec("none")


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def tree_flatten(value) -> tuple[list, TreeSpec]:
    """The leaves of `value` (anything not a tuple, list, dict or None) in order, and its spec."""
    leaves: list = []

    def visit(v) -> TreeSpec:
        if v is None:
            return _NONE
        if _is_namedtuple(v):
            return TreeSpec("namedtuple", type(v), tuple(visit(c) for c in v))
        if isinstance(v, tuple):
            return TreeSpec("tuple", None, tuple(visit(c) for c in v))
        if isinstance(v, list):
            return TreeSpec("list", None, tuple(visit(c) for c in v))
        if isinstance(v, dict):
            keys = tuple(v)
            return TreeSpec("dict", keys, tuple(visit(v[k]) for k in keys))
        leaves.append(v)
        return LEAF

    spec = visit(value)
    return leaves, spec


def tree_flatten_like(value, spec: TreeSpec) -> list:
    """The leaves of `value` in the order `spec` lists them: dicts are read in the spec's key order (a
    dict or keyword arguments given in another order match), named tuples by name and fields (a class
    rebuilt elsewhere matches). Raises ValueError saying where `value`'s structure differs."""
    leaves: list = []

    def visit(v, s: TreeSpec, path: str) -> None:
        if s.kind == "leaf":
            leaves.append(v)
            return
        if s.kind == "none":
            if v is not None:
                raise ValueError(f"{path or 'the value'} is {type(v).__name__}, expected None")
            return
        if s.kind == "dict":
            if not isinstance(v, dict) or set(v) != set(s.context):
                raise ValueError(f"{path or 'the value'} has keys {sorted(map(repr, v)) if isinstance(v, dict) else v!r}, "
                                 f"expected {sorted(map(repr, s.context))}")
            for k, c in zip(s.context, s.children):
                visit(v[k], c, f"{path}[{k!r}]")
            return
        if s.kind == "namedtuple":
            ok = isinstance(v, tuple) and hasattr(type(v), "_fields") and type(v).__name__ == s.context.__name__ \
                and tuple(type(v)._fields) == tuple(s.context._fields)
        else:
            ok = type(v) is (tuple if s.kind == "tuple" else list) and not hasattr(type(v), "_fields")
        if not ok or len(v) != len(s.children):
            raise ValueError(f"{path or 'the value'} is {type(v).__name__} of {len(v) if isinstance(v, (tuple, list)) else '-'}"
                             f" items, expected {s!r}")
        for i, (e, c) in enumerate(zip(v, s.children)):
            visit(e, c, f"{path}[{i}]")

    visit(value, spec, "")
    return leaves


def tree_unflatten(leaves, spec: TreeSpec):
    """The value of structure `spec` around `leaves` (the inverse of tree_flatten)."""
    it = iter(leaves)

    def build(s: TreeSpec):
        if s.kind == "leaf":
            return next(it)
        if s.kind == "none":
            return None
        children = [build(c) for c in s.children]
        if s.kind == "tuple":
            return tuple(children)
        if s.kind == "list":
            return children
        if s.kind == "dict":
            return dict(zip(s.context, children))
        return s.context(*children)

    value = build(spec)
    if next(it, _END) is not _END:
        raise ValueError(f"tree_unflatten: more leaves than the spec {spec!r} holds ({spec.num_leaves})")
    return value


_END = object()


def tree_map(fn: Callable, value):
    """`value` with `fn` applied to each leaf."""
    leaves, spec = tree_flatten(value)
    return tree_unflatten([fn(v) for v in leaves], spec)
