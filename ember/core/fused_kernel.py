"""A fused pointwise kernel described as data: what the compiler asks a backend to generate.

The compiler's fusion pass (ember/compiler/fusion.py) merges a chain of pointwise ops into one
`FusedKernel`: every output element is computed from the inputs' elements at the same index, by a
list of statements, each an expression tree built from the ops' registry formulas (`scalar:` in
ops_registry.yaml, parsed by codegen/scalar_formulas.py). A backend that offers a fused-kernel
generator (the hookspec `ember_fused_kernel_compiler`) turns it into source code in its own language
(Python for numba, OpenCL C, CUDA C) and returns a launcher; the expression vocabulary is the
registry's (`FUNCTIONS` there). Leaves of a statement's tree:

    ("in", i)       the i-th input array's element (inputs broadcast to the iteration shape)
    ("scalar", j)   the j-th scalar parameter (a number passed with each launch, in `dtype`)
    ("const", v)    a number literal, in `dtype`
    ("value", k)    the value of statement k (an earlier one)

A kernel may also reduce (`reduced` > 0): its last `reduced` iteration dimensions form a row, and a
statement ("reduce", kind, leaf) (kind sum, mean, amax or amin; amax/amin propagate NaN) is one value
per row: the reduction of the leaf's values along it. Statements computed from row values only are row
statements too (`rows`); an input varying along no reduced dimension is read once per row.

Values are computed in `dtype` (float32 or float64); comparisons give truth values, and an input or
output of dtype bool holds truth values. An input broadcasts to the iteration shape (numpy's rules);
`varies` says along which iteration dimensions it changes (a bias of shape (C,) under (N, C) varies
along the last only), so a generator can index it without materialising the broadcast. The launcher
takes `(inputs, scalars, shape, out_shapes)` and returns the arrays of `outputs`, new and C-contiguous:
`shape` is the iteration shape, `out_shapes` each output's shape (the iteration shape, or for a row
output its outer dimensions, with or without the reduced ones kept as 1).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

__all__ = ["FusedKernel", "render", "leaf_names", "leaves", "RowPlan", "RowPass"]


@dataclass(frozen=True)
class FusedKernel:
    ndim: int                            # rank of the iteration shape
    dtype: str                           # the compute dtype's name: "float32" or "float64"
    inputs: tuple[str, ...]              # each input array's dtype name
    varies: tuple[tuple[bool, ...], ...]   # per input, per iteration dimension: whether it varies along it
    n_scalars: int                       # scalar parameters per launch
    statements: tuple[tuple, ...]        # expression trees; statement k's value is ("value", k)
    outputs: tuple[tuple[int, str], ...]   # (statement, dtype name) per output array
    ops: tuple[str, ...] = ()            # the ops fused, in order (for names and logs; not part of the maths)
    reduced: int = 0                     # trailing iteration dimensions reduced ("rows" are the others)
    rows: tuple[bool, ...] = ()          # per statement: one value per row (after a reduction) or per element

    @property
    def key(self) -> str:
        """A stable name for the kernel's maths (the same key is the same kernel: caches use it)."""
        text = repr((self.ndim, self.dtype, self.inputs, self.varies, self.n_scalars, self.statements,
                     self.outputs, self.reduced, self.rows))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @property
    def name(self) -> str:
        """`fused_<op>_<op>_..._<key>`: the ops it fuses (the first few), then the key."""
        ops = [op.split(".")[0] for op in self.ops[:4]] + (["etc"] if len(self.ops) > 4 else [])
        return "_".join(["fused", *ops, self.key[:10]])


def render(tree: tuple, spell: dict[str, str], leaf: Callable[[tuple], str]) -> str:
    """`tree` as source text: each function node through its format string in `spell` (`"({0} + {1})"`
    for add), each leaf ("in", "scalar", "const", "value") through `leaf`."""
    head = tree[0]
    if head in ("in", "scalar", "const", "value"):
        return leaf(tree)
    if head == "reduce":
        raise ValueError("render: a reduction is no expression; a generator computes it with a loop")
    return spell[head].format(*(render(child, spell, leaf) for child in tree[1:]))


def leaf_names(constant: Callable[[float], str]) -> Callable[[tuple], str]:
    """The `leaf` function for `render` that generators share: input i is `x<i>` (loaded per element),
    scalar j is `s<j>`, statement k's value is `v<k>`, and a constant is spelled by `constant`."""
    def leaf(tree: tuple) -> str:
        kind, value = tree
        if kind == "in":
            return f"x{value}"
        if kind == "scalar":
            return f"s{value}"
        if kind == "const":
            return constant(float(value))
        return f"v{value}"
    return leaf


def leaves(tree: tuple):
    """The leaves of a statement's tree ("in", "scalar", "const", "value"), a reduction's operand included."""
    if tree[0] in ("in", "scalar", "const", "value"):
        yield tree
        return
    for child in tree[1:] if tree[0] != "reduce" else tree[2:]:
        yield from leaves(child)


@dataclass(frozen=True)
class RowPass:
    """One loop over a row's elements: the full statements `computed` (in order, loading `loads`), the
    reductions `reducing` accumulated, the full outputs `storing` stored (statement indices)."""

    reducing: tuple[int, ...]
    storing: tuple[int, ...]
    computed: tuple[int, ...]
    loads: tuple[int, ...]


class RowPlan:
    """How a reducing kernel (`reduced` > 0) runs per row, for a generator to write out: a statement's
    *phase* is the number of reductions it depends on one after another (a layer norm's centred values are
    phase 1: after the mean); per row, the row statements of phase 0 run first, then for each pass p (in
    `passes`) a loop over the row computes what the reductions of operand phase p and the full outputs of
    phase p need, then those reductions finish and the row statements of phase p + 1 run
    (`row_stage(p + 1)`). `kind[i]` says whether input i varies per row and along the row."""

    def __init__(self, kernel: FusedKernel) -> None:
        self.kernel = kernel
        cut = kernel.ndim - kernel.reduced
        self.kind = [(any(v[:cut]), any(v[cut:])) for v in kernel.varies]
        self.deps = [list(leaves(t)) for t in kernel.statements]
        self.phase: list[int] = []
        for k, tree in enumerate(kernel.statements):
            below = max([self.phase[v] for t, v in self.deps[k] if t == "value"] or [0])
            self.phase.append(below + 1 if tree[0] == "reduce" else below)
        self.full = [not r for r in kernel.rows]
        self.reductions = [k for k, t in enumerate(kernel.statements) if t[0] == "reduce"]
        stored = {k for k, _ in kernel.outputs}
        self.passes: list[tuple[int, RowPass]] = []
        for p in sorted({self.phase[k] - 1 for k in self.reductions} | {self.phase[k] for k in stored if self.full[k]}):
            reducing = tuple(k for k in self.reductions if self.phase[k] - 1 == p)
            storing = tuple(sorted(k for k in stored if self.full[k] and self.phase[k] == p))
            operands = [kernel.statements[k][2] for k in reducing]
            computed = self._closure([v for t, v in operands if t == "value"] + list(storing))
            loads = {v for k in computed for t, v in self.deps[k] if t == "in"} | {v for t, v in operands if t == "in"}
            self.passes.append((p, RowPass(reducing, storing, tuple(computed), tuple(sorted(loads)))))
        self.row_outputs = [(j, k) for j, (k, _) in enumerate(kernel.outputs) if not self.full[k]]

    def row_stage(self, p: int) -> list[tuple[int, tuple[int, ...]]]:
        """(statement, the inputs it loads) for the row statements of phase p, in order."""
        return [(k, tuple(sorted({v for t, v in self.deps[k] if t == "in"})))
                for k, tree in enumerate(self.kernel.statements)
                if not self.full[k] and tree[0] != "reduce" and self.phase[k] == p]

    def _closure(self, roots: list[int]) -> list[int]:
        need, stack = set(), list(roots)
        while stack:
            k = stack.pop()
            if k in need or not self.full[k]:
                continue
            need.add(k)
            stack += [v for t, v in self.deps[k] if t == "value"]
        return sorted(need)
