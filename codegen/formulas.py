"""Compile autograd formulas into the bodies of generated backward nodes.

A formula is a Python expression over ember ops and helpers with `grad`, `grads`, the
op's arguments, `result` (`result0`, `result1`, ... for the k-th return) and named returns in scope. Compiling it rewrites names into
locals of the node (`self` -> `a_self`), `x.shape` / `x.dtype` / `x.device` of a tensor
argument into saved metadata (so the tensor itself need not be kept alive), op calls into
`_F.op` and helper calls into `_H.helper`, and records what must be saved.

In a grouped formula, an operand written `x if grad_input_mask[k] else None` is saved only when
the group's k-th input needs a gradient (torch saves addmm's mat1 only for mat2's gradient): a
frozen layer's input is then not kept alive for a gradient nobody asked for.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .registry import OpEntry, formula_inputs

# tensor metadata a formula may read without the tensor being saved (x.shape, x.stride, ...)
META_ATTRS = ("shape", "dtype", "device", "stride", "storage_offset")


@dataclass
class CompiledFormula:
    input_name: str                           # the input (the first, for a grouped formula)
    code: str                                 # the rewritten expression
    uses: set[str] = field(default_factory=set)   # saved slots read: a_<arg>, m_<arg>_<attr>, a_result...
    inputs: tuple[str, ...] = ()              # every input a grouped formula returns a gradient for, in order
    # slot -> the group positions k whose need alone it is read under (`x if grad_input_mask[k] else None`);
    # a slot read anywhere else is absent (saved whenever any input of the formula needs a gradient)
    guards: dict[str, set[int]] = field(default_factory=dict)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, entry: OpEntry, op_names: set[str], helpers: set[str]) -> None:
        self.args = {a.name: a for a in entry.schema.arguments}
        self.returns = [r.name for r in entry.schema.returns]
        self.op_names = op_names
        self.helpers = helpers
        self.uses: set[str] = set()
        self.guard: int | None = None         # k while inside `... if grad_input_mask[k] else None`
        self.guarded: dict[str, set[int]] = {}
        self.unguarded: set[str] = set()

    def use(self, slot: str) -> None:
        self.uses.add(slot)
        if self.guard is None:
            self.unguarded.add(slot)
        else:
            self.guarded.setdefault(slot, set()).add(self.guard)

    def visit_IfExp(self, node: ast.IfExp):
        test = node.test
        if (isinstance(test, ast.Subscript) and isinstance(test.value, ast.Name)
                and test.value.id == "grad_input_mask" and isinstance(test.slice, ast.Constant)
                and type(test.slice.value) is int and isinstance(node.orelse, ast.Constant)
                and node.orelse.value is None and self.guard is None):
            self.guard = test.slice.value
            node.body = self.visit(node.body)
            self.guard = None
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        if (isinstance(node.value, ast.Name) and node.value.id in self.args
                and self.args[node.value.id].type.base == "Tensor" and node.attr in META_ATTRS):
            slot = f"m_{node.value.id}_{node.attr}"
            self.use(slot)
            return ast.copy_location(ast.Name(slot, ast.Load()), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        if isinstance(node.func, ast.Name):
            fn = node.func.id
            module = "_H" if fn in self.helpers else "_F"
            node.func = ast.copy_location(ast.Attribute(ast.Name(module, ast.Load()), fn, ast.Load()), node.func)
        return node

    def visit_Name(self, node: ast.Name):
        name = node.id
        if name in ("grad", "grads", "grad_input_mask", "True", "False", "None"):
            return node
        if name == "result" or (name.startswith("result") and name[6:].isdigit()):   # result, result0, result1...
            self.use(f"a_{name}")
            return ast.copy_location(ast.Name(f"a_{name}", ast.Load()), node)
        if name in self.returns:
            self.use(f"a_{name}")
            return ast.copy_location(ast.Name(f"a_{name}", ast.Load()), node)
        if name in self.args:
            self.use(f"a_{name}")
            return ast.copy_location(ast.Name(f"a_{name}", ast.Load()), node)
        return node


def compile_formulas(entry: OpEntry, op_names: set[str], helpers: set[str]) -> list[CompiledFormula]:
    out = []
    for key, text in (entry.autograd or {}).items():
        rewriter = _Rewriter(entry, op_names, helpers)
        tree = rewriter.visit(ast.parse(text, mode="eval"))
        ast.fix_missing_locations(tree)
        inputs = formula_inputs(key)
        guards = {slot: ks for slot, ks in rewriter.guarded.items() if slot not in rewriter.unguarded}
        out.append(CompiledFormula(inputs[0], ast.unparse(tree), rewriter.uses, inputs, guards))
    return out


def compile_recompute(entry: OpEntry, op_names: set[str], helpers: set[str]) -> CompiledFormula | None:
    """The entry's `recompute` expression (its output 0 again, from the arguments and results the node
    saves), rewritten as the formulas are; None without one."""
    if entry.recompute is None:
        return None
    rewriter = _Rewriter(entry, op_names, helpers)
    tree = rewriter.visit(ast.parse(entry.recompute, mode="eval"))
    ast.fix_missing_locations(tree)
    return CompiledFormula("", ast.unparse(tree), rewriter.uses)


def formulas_reference_self(entry: OpEntry) -> bool:
    """Whether any formula reads the value of `self` (so an in-place twin must clone it)."""
    first = entry.schema.arguments[0].name
    for f in compile_formulas(entry, set(), set()):
        if f"a_{first}" in f.uses:
            return True
    return False
