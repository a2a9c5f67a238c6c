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
statements too (`rows`); an input varying along no reduced dimension is read once per row. Row outputs
have the outer shape (the iteration shape without the reduced dimensions).

Values are computed in `dtype` (float32 or float64); comparisons give truth values, and an input or
output of dtype bool holds truth values. An input broadcasts to the iteration shape (numpy's rules);
`varies` says along which iteration dimensions it changes (a bias of shape (C,) under (N, C) varies
along the last only), so a generator can index it without materialising the broadcast. The launcher
takes `(inputs, scalars, shape)` and returns the arrays of `outputs`, new and C-contiguous, of the
iteration `shape`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

__all__ = ["FusedKernel", "render"]


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
