"""Backend-agnostic implementations: explicit kernels and decompositions.

`@explicit_kernel("op")` registers the one kernel of an op whose registry entry says
`impl: explicit`: it runs below Autograd (the op's own formula is used for gradients) on
any backend lacking a native kernel. `@decomposition("op")` registers the decomposition of
an `impl: composite` op: autograd differentiates through it. Both are written with ember
ops only, so every backend that implements the primitives runs them.
"""
from __future__ import annotations

from typing import Callable

EXPLICIT: dict[str, Callable] = {}
DECOMPOSITIONS: dict[str, Callable] = {}


def explicit_kernel(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        EXPLICIT[name] = fn
        return fn
    return register


def decomposition(name: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        DECOMPOSITIONS[name] = fn
        return fn
    return register


def as_opmath(x):
    """`x` in the dtype kernels compute in (float32 for float16/bfloat16, else `x` itself)."""
    from ember._generated import functions as F
    from ember.core.type_promotion import computation_dtype

    wide = computation_dtype(x.dtype)
    return x if wide is x.dtype else F._to_copy(x, dtype=wide)


def as_float(x):
    """`x` itself if floating, else `x` cast to the default dtype (int_to_float ops' inputs)."""
    from ember._generated import functions as F
    from ember.core.dtype import get_default_dtype

    return x if x.dtype.is_floating_point else F._to_copy(x, dtype=get_default_dtype())


def wrapped_number(value, like):
    """The Python number `value` as a 0-d tensor beside the tensor `like`, for an argument taking no number
    (an explicit kernel computing gt(self, 2) as lt(2, self)): of the dtype the number takes beside `like`
    (weak in type promotion, as PyTorch's wrapped numbers), on `like`'s device, so the op computes in the dtype
    it would with the number."""
    from ember._generated import functions as F
    from ember.core.type_promotion import result_type

    return F.scalar_tensor(value, dtype=result_type(like, value), device=like.device)


from . import elementwise, math, reductions, shape_ops, factories, distances, indexing, sorting_scans, shape_extra  # noqa: E402,F401  (registration)
from . import convolution, pooling, normalization, padding, folding, nn_backward  # noqa: E402,F401  (nn layers)
from . import recurrent, special  # noqa: E402,F401  (the recurrent layer op, special functions)
from . import activations, losses, random_ops, attention  # noqa: E402,F401  (nn functional)
from . import embedding_bag, grid_sampler  # noqa: E402,F401  (embedding_bag, grid sampling)
from . import optimizers, fused_losses  # noqa: E402,F401  (fused optimizer updates and cross entropy)
from . import linalg, linalg_lu, linalg_products  # noqa: E402,F401  (Cholesky, solves, LU-based ops; norms, products)
from . import scans, numerical, combinatorics  # noqa: E402,F401  (scans; trapezoid, cov, ...; block_diag, ...)
from . import quantiles  # noqa: E402,F401  (quantile, nanquantile)
from . import counting  # noqa: E402,F401  (gcd, lcm, histc, mode)
from . import scatter_copies  # noqa: E402,F401  (diagonal_scatter, narrow_copy, renorm, isreal)
from . import max_pooling_extra, ctc  # noqa: E402,F401  (adaptive and fractional max pooling, CTC loss)
from . import sparse  # noqa: E402,F401  (the products of sparse COO tensors' parts)
