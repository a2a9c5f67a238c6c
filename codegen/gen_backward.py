"""Emit ember/_generated/backward.py: one Node class per differentiable op, its formulas compiled from the
registry's `autograd:` entries (codegen/formulas.py), with what it saves, releases and recomputes."""
from __future__ import annotations

import re

from .formulas import META_ATTRS, compile_formulas, compile_recompute
from .gen_python import HEADER, backward_class_names
from .registry import OpEntry, Registry
from .schema import FunctionSchema


# the prologue lines of a node's methods, dropped from a method that never reads the name they bind
_PROLOGUES = {"        needs = self.needs": "needs", "        grad = grads[0]": "grad"}


def _without_unused_locals(lines: list[str]) -> list[str]:
    """A generated class's lines without the prologue assignments its methods do not use."""
    out: list[str] = []
    method: list[str] = []

    def flush() -> None:
        body = "\n".join(ln for ln in method if ln not in _PROLOGUES)
        kept = [ln for ln in method
                if ln not in _PROLOGUES or re.search(rf"\b{_PROLOGUES[ln]}\b", body.replace("self.needs", ""))]
        if kept and kept[0].startswith("    def ") and not any(ln.strip() for ln in kept[1:]):
            kept = []           # nothing left to do: the method Node inherits does nothing
        out.extend(kept)
        method.clear()
    for line in lines:
        if line.startswith("    def "):
            flush()
        method.append(line)
    flush()
    return out


def gen_backward(registry: Registry, helpers: set[str]) -> str:
    names = backward_class_names(registry)
    op_names = {op.schema.name for op in registry.ops}
    lines = [HEADER, '"""Backward nodes compiled from the registry\'s autograd formulas."""', "",
             "from ember._generated import functions as _F",
             "from ember.frontend.autograd import formulas as _H",
             "from ember.frontend.autograd.graph import FREED as _FREED, Node, SavedTensor, pack as _save",
             "from ember.frontend.tensor import Tensor as _Tensor", "",
             "",
             "def _release(value):",
             "    # a list slot (index's Tensor?[] indices): its saved tensors freed",
             "    return [_FREED if v.__class__ is SavedTensor else v for v in value] if value.__class__ is list else value",
             "",
             "",
             "def _load(value, node):",
             "    if value.__class__ is list:",
             "        return [_load(v, node) for v in value]",
             "    return value.unpack(node) if value.__class__ is SavedTensor else value",
             "", ""]
    for op in registry.ops:
        if op.name not in names:
            continue
        lines += _without_unused_locals(_backward_class(op, names[op.name], op_names, helpers)) + ["", ""]
    lines.append("CLASSES = {")
    for op_name, cls in names.items():
        lines.append(f"    {op_name!r}: {cls},")
    lines.append("}")
    lines.append("")
    return "\n".join(lines)


def _backward_class(op: OpEntry, cls: str, op_names: set[str], helpers: set[str]) -> list[str]:
    schema = op.schema
    formulas = compile_formulas(op, op_names, helpers)
    recompute = compile_recompute(op, op_names, helpers)
    arg_index = {a.name: i for i, a in enumerate(schema.arguments)}
    return_index = {r.name: i for i, r in enumerate(schema.returns) if r.name}
    slots = sorted(set().union(*(f.uses for f in formulas), recompute.uses if recompute else set()))
    list_inputs = [f.input_name for f in formulas if schema.argument(f.input_name).type.is_tensor_list]
    count_slots = [f"c_{n}" for n in list_inputs]
    lines = [f"class {cls}(Node):", f'    """Backward of {op.name}."""', "",
             f"    __slots__ = {tuple(slots + count_slots + ['needs'])!r}",
             f"    n_outputs = {len(schema.returns)}", "",
             "    def save(self, args, outs):", "        needs = self.needs"]
    # needs[k]: whether the k-th differentiable input (schema order, the formulas' order) needs a gradient
    first = 0
    needs_of = []                   # per formula: its inputs' positions in `needs`
    for f in formulas:
        needs_of.append(list(range(first, first + len(f.inputs))))
        first += len(f.inputs)
    exprs = {slot: _save_expr(slot, schema, arg_index, return_index) for slot in slots}
    # each slot is saved once, when any formula reading it needs it (formulas of several inputs may
    # read the same slot; a guarded operand only for some of its group's gradients); slots saved
    # under one condition share its test, in `save` and in `release`
    terms_of: dict[str, list[str]] = {}
    for f, ks in zip(formulas, needs_of):
        for slot in sorted(f.uses):
            positions = f.guards[slot] if slot in f.guards else range(len(ks))
            terms_of.setdefault(slot, []).extend(_guard_terms(positions, ks))
    if recompute is not None:           # read whenever the node exists: saved when any input needs a gradient
        for slot in sorted(recompute.uses):
            terms_of.setdefault(slot, []).extend(_guard_terms(range(first), list(range(first))))
    by_condition: dict[str, list[str]] = {}
    for slot, terms in terms_of.items():
        by_condition.setdefault(" or ".join(sorted(set(terms), key=terms.index)), []).append(slot)
    for cond, group in by_condition.items():
        lines.append(f"        if {cond}:")
        lines += [f"            self.{slot} = {exprs[slot]}" for slot in group]
    for n in list_inputs:
        lines.append(f"        self.c_{n} = len(args[{arg_index[n]}])")
    released = {cond: [slot for slot in group if "_save(" in exprs[slot]] for cond, group in by_condition.items()}
    if any(released.values()):
        # the saved tensors (not shapes or numbers), read only where `save` filled them: reading an
        # unfilled slot would format an AttributeError
        lines += ["", "    def release(self):", "        needs = self.needs"]
        for cond, group in released.items():
            if group:
                lines.append(f"        if {cond}:")
                lines += [_release_line(slot, exprs[slot]) for slot in group]

    def load(slot: str) -> str:
        return _load_expr(slot, exprs[slot])
    if recompute is not None:
        # a consumer that saved output 0 keeps this recipe instead of the tensor (graph.pack)
        lines += ["", "    def recompute(self):"]
        lines += [f"        {slot} = {load(slot)}" for slot in sorted(recompute.uses)]
        lines.append(f"        return {recompute.code}")
    lines += ["", "    def apply(self, grads):", "        grad = grads[0]", "        needs = self.needs",
              "        out = []"]
    for f, ks in zip(formulas, needs_of):
        if len(ks) > 1:             # one call computes the gradients of several inputs (grad_input_mask)
            lines.append(f"        if {' or '.join(f'needs[{k}]' for k in ks)}:")
            lines.append(f"            grad_input_mask = [{', '.join(f'needs[{k}]' for k in ks)}]")
            for slot in sorted(f.uses):
                if slot in f.guards:            # not saved when not needed: the formula reads it only then
                    lines.append(f"            {slot} = ({load(slot)}) if {_guard_expr(f.guards[slot], ks)} "
                                 "else None")
                else:
                    lines.append(f"            {slot} = {load(slot)}")
            lines.append(f"            out.extend({f.code})")
            lines.append("        else:")
            lines.append(f"            out.extend({[None] * len(ks)!r})")
            continue
        k = ks[0]
        is_list = f.input_name in list_inputs
        lines.append(f"        if needs[{k}]:")
        for slot in sorted(f.uses):
            lines.append(f"            {slot} = {load(slot)}")
        if is_list:
            lines.append(f"            out.extend({f.code})")
            lines.append("        else:")
            lines.append(f"            out.extend([None] * self.c_{f.input_name})")
        else:
            lines.append(f"            out.append({f.code})")
            lines.append("        else:")
            lines.append("            out.append(None)")
    lines.append("        return out")
    return lines


def _release_line(slot: str, save_expr: str) -> str:
    """The statement `release` frees a saved slot with: a saved tensor becomes the shared FREED marker
    (unpacking it raises torch's error for a second backward), None or a number stays as it is."""
    if save_expr.startswith("_save("):
        return f"            if self.{slot}.__class__ is SavedTensor:\n                self.{slot} = _FREED"
    return f"            self.{slot} = _release(self.{slot})"


def _load_expr(slot: str, save_expr: str) -> str:
    """The expression `apply` reads a saved slot with: a saved tensor is unpacked (its version checked)
    inline, a list of them through `_load`, anything else (shapes, numbers) read as it is."""
    if save_expr.startswith("_save(outs"):          # an output: a grad_fn-carrying copy only under create_graph
        return f"self.{slot}.unpack(self, False) if self.{slot}.__class__ is SavedTensor else self.{slot}"
    if save_expr.startswith("_save("):
        return f"self.{slot}.unpack(self) if self.{slot}.__class__ is SavedTensor else self.{slot}"
    if "_save(" in save_expr:
        return f"_load(self.{slot}, self)"
    return f"self.{slot}"


def _guard_terms(positions, ks: list[int]) -> list[str]:
    """`needs[...]` of the group positions `positions` of a formula whose inputs are needs[ks]."""
    return [f"needs[{ks[k]}]" for k in sorted(positions)]


def _guard_expr(positions: set[int], ks: list[int]) -> str:
    """`needs[...] or ...` for the group positions `positions` of a formula whose inputs are needs[ks]."""
    return " or ".join(_guard_terms(positions, ks))


def _save_expr(slot: str, schema: FunctionSchema, arg_index: dict, return_index: dict) -> str:
    if slot == "a_result":
        return "_save(outs[0], True, 0, self)"
    if slot.startswith("a_result") and slot[8:].isdigit():        # result<k>: the k-th return (unnamed returns)
        return f"_save(outs[{int(slot[8:])}], True, {int(slot[8:])}, self)"
    if slot.startswith("m_"):
        for name, i in arg_index.items():
            for attr in META_ATTRS:
                if slot == f"m_{name}_{attr}":
                    if attr == "shape":
                        return f"tuple(args[{i}].shape) if isinstance(args[{i}], _Tensor) else ()"
                    if attr in ("stride", "storage_offset"):
                        return f"args[{i}].{attr}()"
                    return f"args[{i}].{attr}"
        raise ValueError(slot)
    name = slot[2:]
    if name in return_index:
        return f"_save(outs[{return_index[name]}], True, {return_index[name]}, self)"
    i = arg_index[name]
    if schema.arguments[i].type.elem_optional:       # Tensor?[] (index's indices): the tensors
        return f"[_save(t) for t in args[{i}]]"
    if schema.arguments[i].type.is_tensor_list:
        return f"[tuple(t.shape) for t in args[{i}]]"
    if schema.arguments[i].type.base != "Tensor":
        return f"args[{i}]"          # a Scalar, int[], bool, ...: never a tensor to check for in-place changes
    return f"_save(args[{i}])"
