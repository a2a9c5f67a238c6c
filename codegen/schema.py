"""Parse operator schemas written in PyTorch's native_functions.yaml grammar.

    name.overload(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
    add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
    max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)

The parser knows the types Ember uses; an unknown type or a malformed string raises
SchemaError with the reason, which the registry loader reports with the entry's line.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

BASE_TYPES = {
    "Tensor", "Scalar", "int", "float", "bool", "str", "ScalarType", "Device", "Generator",
    "SymInt", "Layout", "MemoryFormat",
}


class SchemaError(ValueError):
    """A schema string that does not follow the grammar."""


@dataclass(frozen=True)
class Type:
    base: str                 # one of BASE_TYPES
    is_list: bool = False     # T[] / T[N]
    list_size: int | None = None
    optional: bool = False    # T?
    alias: str | None = None  # "a" in Tensor(a) / Tensor(a!)
    is_write: bool = False    # Tensor(a!)
    elem_optional: bool = False  # Tensor?[]: a list whose entries may be None (index's indices)

    @property
    def is_tensor(self) -> bool:
        return self.base == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self) -> bool:
        return self.base == "Tensor" and self.is_list

    def __str__(self) -> str:
        s = self.base
        if self.alias:
            s += f"({self.alias}{'!' if self.is_write else ''})"
        if self.elem_optional:
            s += "?"
        if self.is_list:
            s += f"[{self.list_size or ''}]"
        if self.optional:
            s += "?"
        return s


@dataclass(frozen=True)
class Argument:
    name: str
    type: Type
    default: object = None    # the Python value of the default
    has_default: bool = False
    kwarg_only: bool = False
    default_text: str = ""    # the default as written in the schema


@dataclass(frozen=True)
class Return:
    name: str | None
    type: Type


@dataclass(frozen=True)
class FunctionSchema:
    name: str
    overload: str
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]
    text: str = field(compare=False, default="")

    @property
    def full_name(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and not self.name.startswith("_")

    def render(self) -> str:
        """The schema as native_functions.yaml writes it (for a parsed schema, its own text)."""
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(f"{a.type} {a.name}" + (f"={a.default_text}" if a.has_default else ""))
        rets = [f"{r.type} {r.name}" if r.name else str(r.type) for r in self.returns]
        returns = rets[0] if len(rets) == 1 else f"({', '.join(rets)})"
        return f"{self.full_name}({', '.join(parts)}) -> {returns}"

    def argument(self, name: str) -> Argument:
        for a in self.arguments:
            if a.name == name:
                return a
        raise KeyError(name)


_TYPE_RE = re.compile(
    r"^(?P<base>[A-Za-z]+)(\((?P<alias>[a-z])(?P<write>!)?\))?(?P<eopt>\?(?=\[))?(?P<list>\[(?P<size>\d*)\])?(?P<opt>\?)?$"
)


def parse_type(text: str) -> Type:
    m = _TYPE_RE.match(text.strip())
    if not m:
        raise SchemaError(f"cannot parse type {text!r}")
    base = m.group("base")
    if base not in BASE_TYPES:
        raise SchemaError(f"unknown type {base!r}; known types: {sorted(BASE_TYPES)}")
    if m.group("alias") and base != "Tensor":
        raise SchemaError(f"only Tensor arguments may carry an alias annotation, got {text!r}")
    size = m.group("size")
    if m.group("eopt") and base != "Tensor":
        raise SchemaError(f"only Tensor lists may have optional entries (Tensor?[]), got {text!r}")
    return Type(
        base=base, is_list=m.group("list") is not None, list_size=int(size) if size else None,
        optional=m.group("opt") is not None, alias=m.group("alias"), is_write=bool(m.group("write")),
        elem_optional=m.group("eopt") is not None,
    )


def _parse_default(text: str, ty: Type) -> object:
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text == "[]":
        return ()
    if ty.base == "ScalarType" or ty.base == "Device":
        raise SchemaError(f"default {text!r} for {ty} is not supported; use None")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise SchemaError(f"cannot parse default value {text!r}") from None
    if isinstance(value, list):
        value = tuple(value)
    if ty.is_list and isinstance(value, int):  # int[1] dim=0 means (0,)
        value = (value,)
    return value


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


_HEAD_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(\.(?P<overload>[A-Za-z0-9_]+))?\((?P<args>.*)\)\s*->\s*(?P<ret>.+)$")


def parse_schema(text: str) -> FunctionSchema:
    """Parse one schema string into a FunctionSchema, or raise SchemaError."""
    m = _HEAD_RE.match(text.strip())
    if not m:
        raise SchemaError("expected 'name[.overload](args) -> returns'")
    args: list[Argument] = []
    kwarg_only = False
    seen_default = False
    for part in _split_top_level(m.group("args")):
        if part == "*":
            if kwarg_only:
                raise SchemaError("'*' appears twice")
            kwarg_only = True
            continue
        default_text = ""
        if "=" in part:
            part, default_text = (s.strip() for s in part.split("=", 1))
        pieces = part.split()
        if len(pieces) != 2:
            raise SchemaError(f"cannot parse argument {part!r}; expected 'Type name'")
        ty = parse_type(pieces[0])
        name = pieces[1]
        if not name.isidentifier():
            raise SchemaError(f"argument name {name!r} is not an identifier")
        if any(a.name == name for a in args):
            raise SchemaError(f"argument {name!r} appears twice")
        has_default = bool(default_text)
        if has_default:
            seen_default = True
        elif seen_default and not kwarg_only:
            raise SchemaError(f"argument {name!r} without a default follows one with a default")
        default = _parse_default(default_text, ty) if has_default else None
        args.append(Argument(name, ty, default, has_default, kwarg_only, default_text))

    ret_text = m.group("ret").strip()
    if ret_text.startswith("("):
        if not ret_text.endswith(")"):
            raise SchemaError(f"unbalanced returns {ret_text!r}")
        ret_parts = _split_top_level(ret_text[1:-1])
    else:
        ret_parts = [ret_text]
    returns: list[Return] = []
    for part in ret_parts:
        pieces = part.split()
        if len(pieces) not in (1, 2):
            raise SchemaError(f"cannot parse return {part!r}")
        returns.append(Return(pieces[1] if len(pieces) == 2 else None, parse_type(pieces[0])))
    return FunctionSchema(m.group("name"), m.group("overload") or "", tuple(args), tuple(returns), text.strip())
