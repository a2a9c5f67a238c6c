"""Dynamic dimensions: `Dim`, and the `ShapeEnv` that computes with symbolic sizes.

`export(..., dynamic_shapes={"x": {0: Dim("batch", max=64)}})` gives the fake input a symbolic
size `batch` in dimension 0. The program's shapes then hold `SymInt`s (ember/core/symint.py)
whose expressions are sympy expressions over the dimensions' symbols, owned by one `ShapeEnv`
per export:

- arithmetic builds expressions (sympy keeps them canonical: `B * T // T` is `B`); floor
  division that does not divide exactly stays a `FloorDiv` term;
- a comparison is decided for every allowed size when the ranges decide it (`batch == 1` is
  false: a dynamic dimension is traced as at least 2, as torch.export does), else on the
  example's sizes (the *hints*), and the answer is kept as a guard;
- turning a symbolic size into an int fixes it (a guard `expr == value`); fixing a dynamic
  dimension this way, or a guard tying it to a constant, makes the export fail with the
  dimension's name: the program is not dynamic in it.

Guards and sizes are evaluated at run time by `evaluate` (a walk of the expression, no sympy
call and no `eval`), and written to a program file as JSON trees (`to_json` / `from_json`), never
as strings to parse. sympy is imported only by an export that has dynamic dimensions.
"""
from __future__ import annotations

import math
import operator
import sys
import traceback
from dataclasses import dataclass, field

import sympy

from ember.core.symint import SymInt
from ember.utils.program_frames import innermost_program_line

from .dynamic_shapes import Dim

__all__ = ["ShapeEnv", "ShapeGuard", "SpecializedError", "evaluate", "to_json", "from_json"]

_INF = sympy.oo


class FloorDiv(sympy.Function):
    """`a // b` on integers, kept as a term unless it divides exactly."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        if b == 1:
            return a
        num, den = sympy.fraction(sympy.cancel(a / b))
        if den == 1 and (num.is_Integer or all(c.is_Integer for c in sympy.Poly(num, *num.free_symbols).coeffs())):
            return num
        return None

    def _sympystr(self, printer) -> str:
        a, b = (printer.doprint(x) if x.is_Atom else f"({printer.doprint(x)})" for x in self.args)
        return f"({a}//{b})"


_ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
               "floordiv": FloorDiv, "mod": sympy.Mod}
_RELATIONS = {"eq": sympy.Eq, "ne": sympy.Ne, "lt": sympy.Lt, "le": sympy.Le, "gt": sympy.Gt, "ge": sympy.Ge}


class SpecializedError(ValueError):
    """The trace fixed dynamic dimensions to a size, or tied them together; `.names` lists them."""

    def __init__(self, message: str, names: set[str]) -> None:
        super().__init__(message)
        self.names = names


@dataclass
class ShapeGuard:
    """An assumption the trace made: `expr` (a sympy relation) holds; `where`: the program line that made it."""

    expr: object
    where: str = ""

    def __str__(self) -> str:
        return str(self.expr)


@dataclass
class _Symbol:
    symbol: object
    dim: Dim
    hint: int
    sources: list = field(default_factory=list)      # (input path, dimension) of every input it sizes


class ShapeEnv:
    """The symbols of one export, their ranges and hints, and the guards the trace recorded."""

    def __init__(self) -> None:
        self.symbols: dict[str, _Symbol] = {}
        self.guards: list[ShapeGuard] = []
        self._decided: dict = {}
        self._hints: dict = {}

    # -- symbols -----------------------------------------------------------------------------
    def create(self, dim: Dim, hint: int, source: tuple[str, int]) -> SymInt:
        """The size of dimension `source[1]` of input `source[0]`: `dim`'s symbol (one per name)."""
        name = dim.__name__
        path, d = source
        if hint < 2 or hint < dim.min or (dim.max is not None and hint > dim.max):
            why = "sizes 0 and 1 are specialised, as in torch.export" if hint < 2 else f"outside {dim.describe()}"
            raise ValueError(f"export(): {path}.size({d}) is {hint} in the example inputs, which cannot stand for "
                             f"dynamic dimension {name!r} ({why}); pass an example size in its range, at least 2")
        known = self.symbols.get(name)
        if known is None:
            symbol = sympy.Symbol(name, integer=True, positive=True)
            known = self.symbols[name] = _Symbol(symbol, dim, hint)
            self._hints[symbol] = sympy.Integer(hint)
        elif known.hint != hint or (known.dim.min, known.dim.max) != (dim.min, dim.max):
            first = known.sources[0]
            raise ValueError(f"export(): {path}.size({d}) = {hint} and {first[0]}.size({first[1]}) = {known.hint} "
                             f"are both dynamic dimension {name!r}, which needs equal sizes and one range")
        known.sources.append(source)
        return SymInt(known.symbol, self)

    def ranges(self) -> dict[str, tuple[int, int | None]]:
        """{dimension name: (min, max)} as the user declared them (max None: unbounded)."""
        return {name: (s.dim.min, s.dim.max) for name, s in self.symbols.items()}

    # -- the SymInt protocol -------------------------------------------------------------------
    def binary(self, op: str, a, b):
        result = _ARITHMETIC[op](_expr(a), _expr(b))
        return int(result) if result.is_Integer else SymInt(result, self)

    def compare(self, op: str, a, b) -> bool:
        relation = _RELATIONS[op](_expr(a), _expr(b))
        if relation is sympy.true or relation is sympy.false:
            return bool(relation)
        known = self._decided.get(relation)
        if known is not None:
            return known
        answer = self._static(relation)
        if answer is None:
            answer = bool(relation.xreplace(self._hints))
            self.guards.append(ShapeGuard(relation if answer else relation.negated, _program_line()))
        self._decided[relation] = answer
        return answer

    def static_compare(self, op: str, a, b):
        """`a op b` when the ranges decide it (True/False), else None; never a guard."""
        relation = _RELATIONS[op](_expr(a), _expr(b))
        if relation is sympy.true or relation is sympy.false:
            return bool(relation)
        known = self._decided.get(relation)
        return known if known is not None else self._static(relation)

    def specialize(self, s: SymInt) -> int:
        value = int(s.expr.xreplace(self._hints))
        self.compare("eq", s, value)
        return value

    def format(self, s: SymInt) -> str:
        return str(s.expr)

    def hint(self, value) -> int:
        return int(_expr(value).xreplace(self._hints))

    # -- deciding comparisons ----------------------------------------------------------------
    def _static(self, relation):
        """True/False when the symbols' ranges decide `relation` for every allowed size, else None."""
        diff = sympy.expand(relation.lhs - relation.rhs)
        for form in (diff, sympy.factor(diff)):
            lo, hi = self._bounds(form)
            decided = _decide(type(relation), lo, hi)
            if decided is not None:
                return decided
        return None

    def _bounds(self, expr) -> tuple:
        """An interval holding `expr` for every allowed size (traced dimensions are at least 2)."""
        if expr.is_Integer:
            return int(expr), int(expr)
        if expr.is_Symbol:
            dim = self.symbols[expr.name].dim
            return max(dim.min, 2), _INF if dim.max is None else dim.max
        if expr.is_Add or expr.is_Mul:
            lo, hi = self._bounds(expr.args[0])
            for arg in expr.args[1:]:
                a, b = self._bounds(arg)
                if expr.is_Add:
                    lo, hi = lo + a, hi + b
                else:
                    corners = [_times(x, y) for x in (lo, hi) for y in (a, b)]
                    lo, hi = min(corners), max(corners)
            return lo, hi
        if expr.is_Pow and expr.exp.is_Integer and expr.exp > 0:
            lo, hi = self._bounds(expr.base)
            if lo >= 0:
                return lo ** int(expr.exp), hi ** int(expr.exp)
        if isinstance(expr, sympy.Mod) and expr.args[1].is_Integer and expr.args[1] > 0:
            return 0, int(expr.args[1]) - 1
        if isinstance(expr, FloorDiv) and expr.args[1].is_Integer and expr.args[1] > 0:
            lo, hi = self._bounds(expr.args[0])
            return _floor_div(lo, int(expr.args[1])), _floor_div(hi, int(expr.args[1]))
        return -_INF, _INF

    # -- after the trace -----------------------------------------------------------------------
    def check_still_dynamic(self) -> None:
        """Fail when a guard fixes a dynamic dimension (`batch == 4`) or ties two (`batch == seq`)."""
        problems, fixed = [], set()
        for guard in self.guards:
            rel = guard.expr
            if isinstance(rel, sympy.Eq) and rel.free_symbols:
                names = sorted(s.name for s in rel.free_symbols)
                fixed.update(names)
                what = f"fixes {', '.join(map(repr, names))} to a single size" if len(names) == 1 and \
                    (rel.lhs.is_Integer or rel.rhs.is_Integer) else f"ties {' and '.join(map(repr, names))} together"
                problems.append(f"  {rel} {what}" + (f" ({guard.where})" if guard.where else ""))
        if problems:
            raise SpecializedError("export(): the program is not dynamic in the dimensions asked for; its trace assumed:\n"
                             + "\n".join(problems) + "\nmark those dimensions static, use one Dim for dimensions "
                             "that must be equal, or keep the program from fixing the size (int(), range(), "
                             "numpy calls on a size)", fixed)


def _expr(value):
    return value.expr if isinstance(value, SymInt) else sympy.Integer(value)


def _times(x, y):
    if x == 0 or y == 0:
        return 0
    return x * y


def _floor_div(x, n: int):
    return x if x in (_INF, -_INF) else x // n


def _decide(relation, lo, hi):
    """Whether `lhs - rhs` in [lo, hi] makes `relation` always true (True), always false (False), or neither."""
    tests = {sympy.Eq: (lo == hi == 0, hi < 0 or lo > 0), sympy.Ne: (hi < 0 or lo > 0, lo == hi == 0),
             sympy.Lt: (hi < 0, lo >= 0), sympy.Le: (hi <= 0, lo > 0),
             sympy.Gt: (lo > 0, hi <= 0), sympy.Ge: (lo >= 0, hi < 0)}
    always, never = tests[relation]
    return True if always else False if never else None


def _program_line() -> str:
    """`file:line` of the program line a guard comes from (the innermost frame outside ember)."""
    found = innermost_program_line(traceback.walk_stack(sys._getframe(1)), outermost_first=False)
    return found[0] if found is not None else ""


# -- run time: sizes and guards from the actual inputs ----------------------------------------
def evaluate(expr, values: dict[str, int]):
    """`expr` (a sympy expression or relation over dimension names) with the sizes `values`: an int or
    a bool, computed by walking the expression (no sympy evaluation, nothing parsed)."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return values[expr.name]
    if isinstance(expr, sympy.core.relational.Relational):
        return _PY_RELATIONS[type(expr)](evaluate(expr.lhs, values), evaluate(expr.rhs, values))
    args = [evaluate(a, values) for a in expr.args]
    if expr.is_Add:
        return sum(args)
    if expr.is_Mul:
        return math.prod(args)
    if expr.is_Pow:
        return args[0] ** args[1]
    if isinstance(expr, FloorDiv):
        return args[0] // args[1]
    if isinstance(expr, sympy.Mod):
        return args[0] % args[1]
    raise ValueError(f"cannot evaluate the size expression {expr}")


_PY_RELATIONS = {sympy.Eq: operator.eq, sympy.Ne: operator.ne, sympy.StrictLessThan: operator.lt,
                 sympy.LessThan: operator.le, sympy.StrictGreaterThan: operator.gt, sympy.GreaterThan: operator.ge}
_JSON_NAMES = {sympy.Add: "add", sympy.Mul: "mul", sympy.Pow: "pow", FloorDiv: "floordiv", sympy.Mod: "mod",
               sympy.Eq: "eq", sympy.Ne: "ne", sympy.StrictLessThan: "lt", sympy.LessThan: "le",
               sympy.StrictGreaterThan: "gt", sympy.GreaterThan: "ge"}
_FROM_JSON = {"add": sympy.Add, "mul": sympy.Mul, "pow": sympy.Pow, "floordiv": FloorDiv, "mod": sympy.Mod,
              **{name: _RELATIONS[name] for name in _RELATIONS}}


def to_json(expr):
    """`expr` as JSON: an int, a dimension name, or [operator name, operand, ...]."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return expr.name
    name = _JSON_NAMES.get(type(expr))
    if name is None:
        raise ValueError(f"cannot write the size expression {expr}")
    return [name] + [to_json(a) for a in (expr.args if name not in ("eq", "ne", "lt", "le", "gt", "ge")
                                          else (expr.lhs, expr.rhs))]


def from_json(tree, symbols: dict[str, object], depth: int = 0):
    """The sympy expression `to_json` wrote; names must be among `symbols`, operators among the known ones
    (a ValueError otherwise)."""
    if depth > 32:
        raise ValueError("a size expression is nested more than 32 levels deep")
    if isinstance(tree, bool):
        raise ValueError("a size expression holds a bool")
    if isinstance(tree, int):
        if abs(tree) >= 2**62:
            raise ValueError(f"a size expression holds the out-of-range integer {tree}")
        return sympy.Integer(tree)
    if isinstance(tree, str):
        if tree not in symbols:
            raise ValueError(f"a size expression names an unknown dimension {tree!r}")
        return symbols[tree]
    if not isinstance(tree, list) or not tree or tree[0] not in _FROM_JSON or not 3 <= len(tree) <= 65 or \
            (tree[0] not in ("add", "mul") and len(tree) != 3):
        raise ValueError(f"malformed size expression {str(tree)[:80]}")
    args = [from_json(a, symbols, depth + 1) for a in tree[1:]]
    if tree[0] == "pow" and not (args[1].is_Integer and 0 <= args[1] <= 64):
        raise ValueError(f"a size expression raises to the power {args[1]}")
    return _FROM_JSON[tree[0]](*args)
