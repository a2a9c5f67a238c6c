"""The graph nodes of size arithmetic in a dynamic-shape program.

An op called with a symbolic size (`x.view(B * T, C)`, where B and T came from `x.shape`) needs
that size computed when the program runs. The capture writes it as nodes: `sym_size(x, 0)` reads
a dynamic dimension from the input it came from, and `operator.mul`, `add`, `sub`, `floordiv`,
`mod`, `pow` and `neg` compute the expression, as torch.export writes `sym_size.int` and `operator`
nodes. These, `operator.getitem` and the registry's ops are all a program's nodes call, and all
a program file may name (`SIZE_OPERATORS`). This module needs no sympy: it reads expressions
through the attributes every sympy expression has.
"""
from __future__ import annotations

import operator

from ember.core.symint import SymInt

__all__ = ["sym_size", "SIZE_OPERATORS", "size_node"]


def sym_size(x, dim: int) -> int:
    """The size of `x` in dimension `dim`: how a program reads a dynamic size from an input."""
    return x.shape[dim]


SIZE_OPERATORS = {"sym_size": sym_size, **{f"operator.{name}": getattr(operator, name)
                                            for name in ("add", "sub", "mul", "floordiv", "mod", "pow", "neg")}}


def size_node(graph, value, sources: dict, cache: dict):
    """The node computing the SymInt `value` (an int if it is one), appended to `graph`.

    `sources`: {dimension name: (placeholder node, dimension)}; `cache`: {expression: node}, kept by the
    caller across calls so that each size is computed once. Each node's meta["val"] is its SymInt."""
    return _emit(graph, value.expr, (value.env, sources, cache))


def _emit(graph, expr, context: tuple):
    env, sources, cache = context
    if expr.is_Integer:
        return int(expr)
    node = cache.get(expr)
    if node is not None:
        return node
    if expr.is_Symbol:
        placeholder, dim = sources[expr.name]
        node = graph.call_function(sym_size, (placeholder, dim))
    elif expr.is_Add or expr.is_Mul:
        node = _fold(graph, expr, context)
    elif expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
        node = graph.call_function(operator.pow, (_emit(graph, expr.base, context), int(expr.exp)))
    elif type(expr).__name__ in ("FloorDiv", "Mod"):
        a, b = (_emit(graph, x, context) for x in expr.args)
        node = graph.call_function(operator.floordiv if type(expr).__name__ == "FloorDiv" else operator.mod, (a, b))
    else:
        raise NotImplementedError(f"export: the size {expr} has no graph form")
    node.meta["val"] = SymInt(expr, env)
    cache[expr] = node
    return node


def _fold(graph, expr, context: tuple):
    """A sum (terms with a negative coefficient subtracted) or a product, left to right."""
    terms = sorted(expr.args, key=lambda a: (a.is_Integer, str(a)))       # symbols first, the constant last
    if expr.is_Mul:
        out = _emit(graph, terms[0], context)
        for t in terms[1:]:
            out = graph.call_function(operator.mul, (out, _emit(graph, t, context)))
        return out
    out = None
    for t in terms:
        negative = t.could_extract_minus_sign()
        value = _emit(graph, -t if negative else t, context)
        if out is None:
            out = graph.call_function(operator.neg, (value,)) if negative else value
        else:
            out = graph.call_function(operator.sub if negative else operator.add, (out, value))
    return out
