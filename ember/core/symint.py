"""SymInt: a size known only as an expression of symbolic dimensions (dynamic-shape export).

When a program is exported with dynamic dimensions (`ember.export.Dim`), the fake inputs'
shapes hold `SymInt`s instead of ints. Everything that computes with sizes (the shape rules,
the meta backend, the program's own Python: `B, T, C = x.shape; x.view(B * T, C)`) then
computes with expressions, and a `SymInt` is an int in every way those use: arithmetic with
ints and other SymInts gives SymInts, comparisons give bools.

A comparison has to pick a branch, so it is decided on the *hint* (the size the example input
had) unless the dimensions' ranges decide it for every allowed size; when they do not, the
answer becomes a *guard*, an assumption the exported program checks on every call. Turning a
SymInt into a plain int (`int(s)`, `range(s)`, a numpy call) fixes the expression to its hint,
also a guard.

This module is the protocol only: a SymInt holds an opaque `expr` and the `env` that owns the
symbols (ember/export/symbolic.py, which computes with sympy); the core and the shape rules
never depend on how expressions are represented. `env` provides `binary(op, a, b)` (an
arithmetic operator name and two operands, SymInt or int, at least one a SymInt),
`compare(op, a, b) -> bool`, `static_compare(op, a, b) -> bool | None` (decided by the ranges
alone, no guard), `specialize(s) -> int` and `format(s) -> str`.
"""
from __future__ import annotations

import operator

__all__ = ["SymInt", "SymShape", "is_symbolic", "surely"]


class SymInt:
    """A symbolic integer (see the module docstring). Immutable; hashed by its expression."""

    __slots__ = ("expr", "env")

    def __init__(self, expr, env) -> None:
        self.expr = expr
        self.env = env

    # arithmetic: SymInt op int / SymInt (and the reflected forms) -> SymInt or int
    def __add__(self, other):
        return self.env.binary("add", self, other) if _operand(other) else NotImplemented

    def __radd__(self, other):
        return self.env.binary("add", other, self) if _operand(other) else NotImplemented

    def __sub__(self, other):
        return self.env.binary("sub", self, other) if _operand(other) else NotImplemented

    def __rsub__(self, other):
        return self.env.binary("sub", other, self) if _operand(other) else NotImplemented

    def __mul__(self, other):
        return self.env.binary("mul", self, other) if _operand(other) else NotImplemented

    def __rmul__(self, other):
        return self.env.binary("mul", other, self) if _operand(other) else NotImplemented

    def __floordiv__(self, other):
        return self.env.binary("floordiv", self, other) if _operand(other) else NotImplemented

    def __rfloordiv__(self, other):
        return self.env.binary("floordiv", other, self) if _operand(other) else NotImplemented

    def __mod__(self, other):
        return self.env.binary("mod", self, other) if _operand(other) else NotImplemented

    def __rmod__(self, other):
        return self.env.binary("mod", other, self) if _operand(other) else NotImplemented

    def __neg__(self):
        return self.env.binary("mul", -1, self)

    def __pos__(self):
        return self

    def __truediv__(self, other):
        # a float of a symbolic size has no symbolic form: it is computed from the hint (a guard)
        return int(self) / other

    def __rtruediv__(self, other):
        return other / int(self)

    # comparisons: decided by the ranges, else on the hint and kept as a guard
    def __eq__(self, other):
        return self.env.compare("eq", self, other) if _operand(other) else NotImplemented

    def __ne__(self, other):
        return self.env.compare("ne", self, other) if _operand(other) else NotImplemented

    def __lt__(self, other):
        return self.env.compare("lt", self, other) if _operand(other) else NotImplemented

    def __le__(self, other):
        return self.env.compare("le", self, other) if _operand(other) else NotImplemented

    def __gt__(self, other):
        return self.env.compare("gt", self, other) if _operand(other) else NotImplemented

    def __ge__(self, other):
        return self.env.compare("ge", self, other) if _operand(other) else NotImplemented

    def __bool__(self) -> bool:
        return self.env.compare("ne", self, 0)

    def __hash__(self) -> int:
        return hash(self.expr)

    # conversions to a plain int fix the value (a guard)
    def __index__(self) -> int:
        return self.env.specialize(self)

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.env.specialize(self))

    def __repr__(self) -> str:
        return self.env.format(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec) if not spec or spec[-1] in "s<>^" else format(int(self), spec)


def _operand(value) -> bool:
    return (value.__class__ is int or isinstance(value, SymInt)) and value.__class__ is not bool


def surely(op: str, a, b) -> bool:
    """Whether `a op b` (op: "eq", "ne", "lt", "le", "gt", "ge") holds for every size a dynamic
    dimension may take, adding no guard: False when it may not. For ints, the plain comparison. For
    layout questions (is this view contiguous?) whose answer only picks a cheaper path, where a guard
    would needlessly tie the program to the example's sizes."""
    for v in (a, b):
        if isinstance(v, SymInt):
            return v.env.static_compare(op, a, b) is True
    return _PLAIN[op](a, b)


_PLAIN = {name: getattr(operator, name) for name in ("eq", "ne", "lt", "le", "gt", "ge")}


def is_symbolic(value) -> bool:
    """Whether `value` is a SymInt, or a tuple/list holding one (a symbolic shape)."""
    if isinstance(value, SymInt):
        return True
    return isinstance(value, (tuple, list)) and any(isinstance(v, SymInt) for v in value)


class SymShape(tuple):
    """A shape holding SymInts, as a meta array keeps it: equality with another shape compares the
    lengths first. A plain tuple compares the items first and the lengths last, so `(b, t, 3) == (3,)`
    would compare `b == 3` and keep a needless guard (on an example where b is 3, a wrong one)."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, tuple) and len(other) != len(self):
            return False
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        if isinstance(other, tuple) and len(other) != len(self):
            return True
        return tuple.__ne__(self, other)

    __hash__ = tuple.__hash__
