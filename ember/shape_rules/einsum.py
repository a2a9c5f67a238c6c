"""The shape rule of einsum and its equation parser (which the einsum decomposition reuses)."""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError, ArgumentValueError, DTypeError, ShapeError
from ember.core.spec import TensorSpec

from . import shape_rule
from .common import shape_of, type_name


def parse_einsum(op, equation, shapes):
    """(input subscripts, output subscripts, {letter: size}) of an einsum equation ("..." supported)."""
    if not isinstance(equation, str):
        raise ArgumentTypeError(f"{op.name}(): argument 'equation' must be str, not {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ArgumentValueError(f"{op.name}(): more operands were provided than specified in the equation"
                                 if len(shapes) > len(terms) else
                                 f"{op.name}(): fewer operands were provided than specified in the equation")
    ell_letters = "".join(chr(0x100 + i) for i in range(64))      # stand-ins for the dims under "..."
    n_ell = 0
    parsed = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            n = len(shape) - (len(term) - 3)
            if n < 0:
                raise ArgumentValueError(f"{op.name}(): the number of subscripts in the equation ({len(term) - 3}) is "
                                         f"more than the number of dimensions ({len(shape)}) for operand")
            n_ell = max(n_ell, n)
            term = term.replace("...", ell_letters[64 - n:] if n else "")
        for c in term:
            if not (c.isalpha() or ord(c) >= 0x100):
                raise ArgumentValueError(f"{op.name}(): invalid subscript given at index {eq.index(c)} in the "
                                         f"equation string, subscripts must be in [a-zA-Z]")
        if len(term) != len(shape):
            raise ArgumentValueError(f"{op.name}(): the number of subscripts in the equation ({len(term)}) does not "
                                     f"match the number of dimensions ({len(shape)}) for operand and no ellipsis "
                                     "was given")
        parsed.append(term)
    sizes: dict[str, int] = {}
    for term, shape in zip(parsed, shapes):
        for c, s in zip(term, shape):
            if c in sizes and sizes[c] != s and 1 not in (sizes[c], s):
                raise ShapeError(f"{op.name}(): operands do not broadcast with remapped shapes (original->remapped)"
                                 f": subscript {c!r} has sizes {sizes[c]} and {s}")
            sizes[c] = s if c not in sizes or sizes[c] == 1 else sizes[c]
    ell = ell_letters[64 - n_ell:] if n_ell else ""
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if c not in sizes:
                raise ArgumentValueError(f"{op.name}(): output subscript {c} does not appear in the equation for "
                                         "any input operand")
        if len(set(out)) != len(out):
            raise ArgumentValueError(f"{op.name}(): output subscript appears more than once in the output")
    else:
        counts = {}
        for term in parsed:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and ord(c) < 0x100))
    return parsed, out, sizes


@shape_rule("einsum")
def einsum(op, equation, tensors, path=None):
    if not isinstance(equation, str):        # torch's parser checks the equation's type first
        raise ArgumentTypeError(f"{op.name}(): argument 'equation' (position 1) must be str, not "
                                f"{type(equation).__name__}")
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, TensorSpec) for t in tensors):
        raise ArgumentTypeError(f"{op.name}(): argument 'tensors' must be tuple of Tensors")
    if not tensors:
        raise ArgumentValueError(f"{op.name}(): must provide at least one operand")
    for t in tensors[1:]:
        if t._dtype is not tensors[0]._dtype:
            raise DTypeError(f"{op.name}(): expected scalar type {type_name(tensors[0]._dtype)} but found "
                             f"{type_name(t._dtype)}")
    parsed, out, sizes = parse_einsum(op, equation, [shape_of(t) for t in tensors])
    dtype = tensors[0]._dtype
    if len(tensors) == 1 and not dtype.is_floating_point and set(parsed[0]) - set(out):
        dtype = _dt.int64               # one operand summed over an index: sum's integer promotion, as torch's
    return (tuple(sizes[c] for c in out), dtype)
