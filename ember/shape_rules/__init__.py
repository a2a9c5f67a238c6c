"""Shape rules: the meta functions shared by every backend.

A shape rule validates an op's arguments and computes its output spec (see
ember.dispatcher.backend) before any kernel runs, so every backend raises the same error
for the same bad input and allocates the same result. The registry names a rule per op
(`shape: pointwise`); `@shape_rule("name")` registers one. Rules take `(op, *args)` with the
arguments in schema order and must be cheap: they run on every call. Per-op behaviour (the dtypes a
kernel supports, extra checks, promotion and TensorIterator quirks) comes from the registry through
OpDef fields (docs/registry.md), never from tests on the op's name.
"""
from __future__ import annotations

from typing import Callable

RULES: dict[str, Callable] = {}


def shape_rule(name: str, reads: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register the decorated function as the shape rule called `name`. `reads` declares the per-op
    registry keys it honours (`dtypes`, `checks`, `promotion_if_given`, `iterator_operands`): codegen
    refuses an entry setting a key its rule does not read."""
    def register(fn: Callable) -> Callable:
        RULES[name] = fn
        return fn
    return register


from . import pointwise, reductions, views, tensor_ops, factories, distances, indexing, shape_ops, einsum  # noqa: E402,F401,E501  (registration)
from . import repetition, reorder  # noqa: E402,F401  (repeat, tile, repeat_interleave; flips, rot90, roll)
from . import nn_layers, nn_norm_pad, nn_core  # noqa: E402,F401  (nn layers)
from . import activations, losses, random_ops  # noqa: E402,F401  (nn functional)
from . import fused  # noqa: E402,F401  (fused optimizer updates, cross-entropy backward)
from . import recurrent  # noqa: E402,F401  (the recurrent layer op)
from . import sampling  # noqa: E402,F401  (embedding_bag, grid sampling, nonzero_numpy)
from . import linalg, linalg_lu, linalg_products  # noqa: E402,F401  (Cholesky, solves, LU-based ops; norms, products)
from . import scans, numerical, combinatorics  # noqa: E402,F401  (scans; trapezoid, cov, ...; block_diag, ...)
from . import quantiles  # noqa: E402,F401  (quantile, nanquantile)
from . import counting  # noqa: E402,F401  (histc, mode)
from . import scatter_copies  # noqa: E402,F401  (diagonal_scatter, narrow_copy, renorm, isreal)
from . import pool_ctc  # noqa: E402,F401  (adaptive and fractional max pooling, CTC loss)
from . import sparse  # noqa: E402,F401  (the products of sparse COO tensors' parts)
