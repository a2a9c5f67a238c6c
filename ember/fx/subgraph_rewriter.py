"""`replace_pattern(gm, pattern, replacement)`: rewrite every occurrence of a subgraph (torch.fx's).

`pattern` and `replacement` are functions (or modules) of the same inputs, traced with
`symbolic_trace`. A match is a set of nodes of `gm.graph` computing what `pattern` computes:
the same opcodes and targets, wired the same way, with the pattern's inputs bound to any nodes
or values (one binding per input). Matching starts from each node that could be the pattern's
output and walks the arguments back; nodes inside a match other than its output may have no
users outside it (the rewrite removes them). Each match's nodes are replaced by a copy of the
replacement's graph, its inputs wired to the bound nodes. Matches do not overlap; the graph is
recompiled and the matches are returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg
from .tracer import symbolic_trace

__all__ = ["Match", "replace_pattern"]


@dataclass
class Match:
    anchor: Node                                            # the graph node matching the pattern's output
    nodes_map: dict[Node, Node] = field(default_factory=dict)   # pattern node -> graph node


def replace_pattern(gm: GraphModule, pattern: Callable, replacement: Callable) -> list[Match]:
    pattern_graph = symbolic_trace(pattern).graph
    replacement_graph = symbolic_trace(replacement).graph
    outputs = pattern_graph.output_node.args[0]
    if not isinstance(outputs, Node):
        raise ValueError("replace_pattern: the pattern must return a single value")
    matches: list[Match] = []
    taken: set[Node] = set()
    for node in gm.graph.nodes:
        nodes_map: dict[Node, Node] = {}
        if node in taken or not _match(outputs, node, nodes_map):
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder" and isinstance(g, Node)]
        if taken.intersection(inner) or not _self_contained(inner, node):
            continue
        taken.update(inner)
        matches.append(Match(node, nodes_map))
    replaced: dict[Node, Node] = {}          # an earlier match's output -> what now computes it
    for match in matches:
        replaced[match.anchor] = _substitute(gm.graph, match, pattern_graph, replacement_graph, replaced)
    gm.graph.lint()
    gm.recompile()
    return matches


def _match(p: Node, g, nodes_map: dict) -> bool:
    """Whether the graph value `g` computes the pattern node `p` (bindings collected in `nodes_map`)."""
    if p.op == "placeholder":
        bound = nodes_map.get(p, _UNBOUND)
        if bound is _UNBOUND:
            nodes_map[p] = g
            return True
        return bound is g
    if not isinstance(g, Node) or g.op != p.op or g.target != p.target:
        return False
    if p in nodes_map:
        return nodes_map[p] is g
    if len(p.args) != len(g.args) or set(p.kwargs) != set(g.kwargs):
        return False
    nodes_map[p] = g
    pairs = list(zip(p.args, g.args)) + [(p.kwargs[k], g.kwargs[k]) for k in p.kwargs]
    if all(_match_arg(pa, ga, nodes_map) for pa, ga in pairs):
        return True
    del nodes_map[p]
    return False


def _match_arg(pa, ga, nodes_map: dict) -> bool:
    if isinstance(pa, Node):
        return _match(pa, ga, nodes_map)
    if isinstance(pa, (tuple, list)):
        return type(pa) is type(ga) and len(pa) == len(ga) and all(_match_arg(x, y, nodes_map)
                                                                     for x, y in zip(pa, ga))
    return not isinstance(ga, Node) and pa == ga


_UNBOUND = object()


def _self_contained(inner: list[Node], anchor: Node) -> bool:
    members = set(inner)
    return all(all(u in members for u in n.users) for n in inner if n is not anchor)


def _substitute(graph: Graph, match: Match, pattern_graph: Graph, replacement_graph: Graph,
                replaced: dict) -> Node:
    inputs = [match.nodes_map.get(p) for p in pattern_graph.nodes if p.op == "placeholder"]
    inputs = [replaced.get(v, v) if isinstance(v, Node) else v for v in inputs]
    env: dict[Node, object] = {}
    placeholders = iter(inputs)
    with graph.inserting_before(match.anchor):
        for r in replacement_graph.nodes:
            if r.op == "placeholder":
                env[r] = next(placeholders)
            elif r.op == "output":
                result = map_arg(r.args[0], lambda n: env[n])
            else:
                env[r] = graph.node_copy(r, lambda n: env[n])
    if not isinstance(result, Node):
        raise ValueError("replace_pattern: the replacement must return a single value")
    match.anchor.replace_all_uses_with(result)
    doomed = [g for p, g in match.nodes_map.items() if p.op != "placeholder" and isinstance(g, Node)]
    for node in sorted(doomed, key=graph.nodes.index, reverse=True):
        if not node.users:
            graph.erase_node(node)
    return result
