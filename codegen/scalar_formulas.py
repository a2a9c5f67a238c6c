"""The registry's `scalar:` key: a pointwise op's value per element, parsed into a small tree.

An entry's `scalar` is a Python expression over the op's argument names, written for one element:

    add.Tensor:     self + alpha * other
    gelu:           "0.5 * self * (1 + tanh(0.7978845608028654 * (self + 0.044715 * self * self * self)))
                     if approximate == 'tanh' else 0.5 * self * (1 + erf(self * 0.7071067811865476))"

It is what the compiler's fusion pass generates fused kernels from (ember/compiler/fusion.py), so
the formula and the op's eager kernel must compute the same value. codegen parses it here, refusing
anything outside the grammar below, and writes the tree into the op table (`OpSchema.scalar`); nothing
parses a formula at run time. The tree is nested tuples:

    ("arg", i)                          the op's i-th argument (a Tensor's element, or a Python number)
    ("const", v)                        a number literal (computed in the kernel's dtype)
    ("if", (i, cmp, v), then, other)    a choice on a non-Tensor argument (`approximate == 'tanh'`),
                                        decided when the kernel is generated, never per element
    ("none",)                           `None`: no formula for these arguments (div's rounding modes):
                                        the op is not fused, its own kernel runs
    (name, *operands)                   an operator or function of FUNCTIONS

The operators are + - * / ** (add, sub, mul, div, pow), unary minus (neg) and comparisons
(lt, le, gt, ge, eq, ne, giving a truth value for `where`).
"""
from __future__ import annotations

import ast

# name -> number of operands; a backend's fused-kernel generator spells each (docs/compiler.md)
FUNCTIONS = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "pow": 2, "neg": 1,
    "lt": 2, "le": 2, "gt": 2, "ge": 2, "eq": 2, "ne": 2,
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "erf": 1,
    "sin": 1, "cos": 1, "abs": 1, "sigmoid": 1, "reciprocal": 1,
    "where": 3, "maximum": 2, "minimum": 2,
}
_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}
_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_CHOICE_OPS = {ast.Eq: "==", ast.NotEq: "!="}


class FormulaError(ValueError):
    """A `scalar` formula outside the grammar: the message says what and where."""


def parse_formula(text: str, arg_names: tuple[str, ...], tensor_args: set[str]) -> tuple:
    """The tree of `text` over the op's arguments `arg_names`, of which `tensor_args` are Tensors."""
    try:
        root = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise FormulaError(f"not a Python expression: {exc.msg}") from None
    position = {name: i for i, name in enumerate(arg_names)}

    def walk(node) -> tuple:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return ("const", node.value)
        if isinstance(node, ast.Constant) and node.value is None:
            return ("none",)
        if isinstance(node, ast.Name):
            if node.id not in position:
                raise FormulaError(f"unknown name {node.id!r}; the op's arguments are {list(arg_names)}")
            return ("arg", position[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return (_BINARY[type(node.op)], walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return ("neg", walk(node.operand))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return (_COMPARE[type(node.ops[0])], walk(node.left), walk(node.comparators[0]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            name = node.func.id
            if name not in FUNCTIONS:
                raise FormulaError(f"unknown function {name!r}; known: {sorted(FUNCTIONS)}")
            if len(node.args) != FUNCTIONS[name]:
                raise FormulaError(f"{name}() takes {FUNCTIONS[name]} operand(s), got {len(node.args)}")
            return (name,) + tuple(walk(a) for a in node.args)
        if isinstance(node, ast.IfExp):
            return ("if", choice(node.test), walk(node.body), walk(node.orelse))
        raise FormulaError(f"unsupported syntax {ast.unparse(node)!r}")

    def choice(test) -> tuple:
        ok = (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _CHOICE_OPS
              and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant))
        if not ok or test.left.id not in position or test.left.id in tensor_args:
            raise FormulaError(f"a choice must compare a non-Tensor argument with a constant "
                               f"(`approximate == 'tanh'`), got {ast.unparse(test)!r}")
        return (position[test.left.id], _CHOICE_OPS[type(test.ops[0])], test.comparators[0].value)

    return walk(root)
