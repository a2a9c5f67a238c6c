"""`explain(fn, *args)`: what compiling `fn` makes of one call, graphs and graph breaks (torch._dynamo.explain).

    out = ember.compiler.explain(step, x)      # or explain(step)(x), torch's form
    print(out)                                 # graphs, ops, breaks with their lines
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .breaks import GraphBreak

__all__ = ["explain", "ExplainOutput"]


@dataclass
class ExplainOutput:
    graphs: list = field(default_factory=list)            # the captured ember.fx Graphs
    graph_break_count: int = 0
    break_reasons: list[GraphBreak] = field(default_factory=list)
    ops_per_graph: list[list[str]] = field(default_factory=list)

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def op_count(self) -> int:
        return sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}: {b}" for i, b in enumerate(self.break_reasons)]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}:")
            lines += [f"    {op}" for op in ops]
        return "\n".join(lines)


def explain(fn, *args, **kwargs):
    """The ExplainOutput of compiling `fn` and calling it on `args`/`kwargs` (which runs it once); with
    no arguments, a function taking them, as torch._dynamo.explain(fn)(*args) does."""
    if not args and not kwargs:
        return lambda *a, **k: explain(fn, *a, **k)
    from ember.nn.modules.module import Module

    from .api import DEFAULT_RECOMPILE_LIMIT
    from .compiled import CompiledCode

    settings = dict(fullgraph=False, dynamic=None, backend="eager", recompile_limit=DEFAULT_RECOMPILE_LIMIT)
    code = CompiledCode(fn, fn if isinstance(fn, Module) else None, settings)
    code(args, kwargs)
    out = ExplainOutput(graph_break_count=len(code.graph_breaks), break_reasons=list(code.graph_breaks))
    for entry in code.entries.values():
        if entry.program is not None:
            out.graphs.append(entry.program.graph)
            out.ops_per_graph.append([getattr(n.target, "name", getattr(n.target, "__name__", str(n.target)))
                                      for n in entry.program.graph.nodes if n.op == "call_function"])
    return out
