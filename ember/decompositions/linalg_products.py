"""torch.linalg's norms and products (and torch.cross, torch.tensordot, torch.dist) in ember ops.

The vector norm is the `norm` reduction (its formula differentiates it); a matrix norm of order 1 or inf is
the largest column or row sum of |A| (amax, whose gradient splits among ties as torch's), -1 and -inf the
smallest (amin), 'fro' the vector 2-norm over both dims. A cross product is the three 2x2 determinants of
the broadcast operands' components, stacked; multi_dot multiplies its chain in the order with the fewest
scalar multiplications; tensordot permutes the contracted dims next to each other and makes one mm.
"""
from __future__ import annotations

import math
import warnings

from ember._generated import functions as F

from . import decomposition
from .linalg import _batch

INF = float("inf")


def _dim_list(dim) -> list:
    return [] if dim is None else [dim] if isinstance(dim, int) else list(dim)


def _in_dtype(x, dtype):
    return x if dtype is None or dtype is x.dtype else F._to_copy(x, dtype=dtype)


@decomposition("linalg_vector_norm")
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    x = _in_dtype(self, dtype)
    if dim is None and not keepdim:                 # every element: one vector, a 0-d result
        x = F.reshape(x, (-1,))
    return F._dispatch_norm_ScalarOpt_dim((x, ord, _dim_list(dim), keepdim))


def _matrix_norm(self, ord, dim, keepdim, dtype):
    x = _in_dtype(self, dtype)
    n = x.dim()
    d0, d1 = (d % n for d in dim)
    if ord == "fro":
        return F.linalg_vector_norm(x, 2, [d0, d1], keepdim)
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)     # column sums (1, -1) or row sums (inf, -inf)
    sums = F.sum(F.abs(x), [inner], True)
    if sums.shape[outer] == 0:      # the largest of no sums: a new 0, as torch's (the smallest is refused)
        out = F.zeros(tuple(1 if k == outer else s for k, s in enumerate(sums.shape)), dtype=x.dtype,
                      device=x.device)
    else:
        out = F.amax(sums, [outer], True) if ord > 0 else F.amin(sums, [outer], True)
    if keepdim:
        return out
    return F.reshape(out, tuple(s for k, s in enumerate(x.shape) if k not in (d0, d1)))


@decomposition("linalg_matrix_norm")
def linalg_matrix_norm(self, ord, dim=(-2, -1), keepdim=False, dtype=None):
    return _matrix_norm(self, ord, dim, keepdim, dtype)


@decomposition("linalg_matrix_norm.str_ord")
def linalg_matrix_norm_str(self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    return _matrix_norm(self, ord, dim, keepdim, dtype)


@decomposition("linalg_vecdot")
def linalg_vecdot(x, y, dim=-1):
    return F.sum(F.mul(x, y), [dim])


def _cross(self, other, d: int):
    shape = _batch(self.shape, other.shape)
    a, b = F.expand(self, shape), F.expand(other, shape)
    a0, a1, a2 = (F.select(a, d, i) for i in range(3))
    b0, b1, b2 = (F.select(b, d, i) for i in range(3))
    return F.stack([F.sub(F.mul(a1, b2), F.mul(a2, b1)),
                    F.sub(F.mul(a2, b0), F.mul(a0, b2)),
                    F.sub(F.mul(a0, b1), F.mul(a1, b0))], d)


@decomposition("linalg_cross")
def linalg_cross(self, other, dim=-1):
    n = len(_batch(self.shape, other.shape))
    return _cross(self, other, dim % n)


@decomposition("cross")
def cross(self, other, dim=None):
    shape = _batch(self.shape, other.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=4)
        dim = tuple(self.shape).index(3)            # the input's first dim of length 3
    return _cross(self, other, dim % len(shape))


def chain_order(sizes: list[int]) -> list[list[int]]:
    """split[i][j]: where the cheapest product of matrices i..j splits, for matrices of shapes
    (sizes[k], sizes[k + 1]) (the textbook dynamic programme over the chain's scalar multiplications)."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@decomposition("linalg_multi_dot")
def linalg_multi_dot(tensors):
    tensors = list(tensors)
    first_vector, last_vector = tensors[0].dim() == 1, tensors[-1].dim() == 1
    mats = list(tensors)
    if first_vector:
        mats[0] = F.unsqueeze(mats[0], 0)
    if last_vector:
        mats[-1] = F.unsqueeze(mats[-1], -1)
    split = chain_order([mats[0].shape[0]] + [m.shape[1] for m in mats])

    def product(i: int, j: int):
        if i == j:
            return mats[i]
        k = split[i][j]
        return F.mm(product(i, k), product(k + 1, j))

    out = product(0, len(mats) - 1)
    shape = (() if first_vector else (out.shape[0],)) + (() if last_vector else (out.shape[1],))
    return F.reshape(out, shape) if tuple(out.shape) != shape else out


@decomposition("tensordot")
def tensordot(self, other, dims_self, dims_other):
    da = [d % max(self.dim(), 1) for d in dims_self]
    db = [d % max(other.dim(), 1) for d in dims_other]
    free_a = [k for k in range(self.dim()) if k not in da]
    free_b = [k for k in range(other.dim()) if k not in db]
    inner = math.prod(self.shape[d] for d in da)
    left = F.reshape(F.permute(self, free_a + da), (math.prod(self.shape[k] for k in free_a), inner))
    right = F.reshape(F.permute(other, db + free_b), (inner, math.prod(other.shape[k] for k in free_b)))
    shape = tuple(self.shape[k] for k in free_a) + tuple(other.shape[k] for k in free_b)
    return F.reshape(F.mm(left, right), shape)


@decomposition("dist")
def dist(self, other, p=2):
    return F.linalg_vector_norm(F.sub(self, other), p)
