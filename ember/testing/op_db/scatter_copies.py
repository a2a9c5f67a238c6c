"""OpInfos of diagonal_scatter, narrow_copy, renorm (and renorm_) and isreal, against torch's."""
from __future__ import annotations

from ..tolerances import REDUCTION_TOL
from .samples import ALL, FLOAT, OpInfo, Sample, T, fn, is_float, make, method
from .database import E, add, f32


def _diagonal_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample((a((3, 4)), a((3,))), desc="main diagonal"), Sample((a((3, 4)), a((2,)), 2), desc="offset 2"),
            Sample((a((3, 4)), a((2,)), -1), desc="offset -1"), Sample((a((4, 3), "t"), a((3,))), desc="transposed"),
            Sample((a((2, 3, 3)), a((2, 3)), 0, 1, 2), desc="batched dims 1, 2"),
            Sample((a((3, 4)), a((0,)), 5), desc="an empty diagonal")]


add(OpInfo("diagonal_scatter", fn("diagonal_scatter"), _diagonal_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), T(f32(rng, (2,)))), RuntimeError, "src size = [2]",
                                 desc="src of another length"),
                               E((T(f32(rng, (3, 4))), T(f32(rng, (3,))), 0, 0, 0), RuntimeError, "diagonal",
                                 desc="same dims")]))


def _narrow_copy_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    # torch's narrow_copy gradient for a negative start is zeros (a torch bug): that sample's values only
    return [Sample((a((3, 4)), 1, 1, 2), desc="dim 1"), Sample((a((4, 3), "t"), 0, 1, 2), desc="transposed"),
            Sample((T(make(rng, (3, 4), dtype)), 1, -1, 1), desc="negative start"),
            Sample((a((3, 4)), 0, 3, 0), desc="empty"),
            Sample((a((3, 4)), 1, 1, 2), desc="method", fn=method("narrow_copy"))]


add(OpInfo("narrow_copy", fn("narrow_copy"), _narrow_copy_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (3, 4))), 1, 3, 2), RuntimeError, "exceeds dimension size",
                                 desc="past the end")]))


def _renorm_samples(rng, dtype):
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=True)  # noqa: E731
    return [Sample((a((3, 4)), 2, 0, 1.0), desc="rows, p 2"), Sample((a((3, 4)), 1, 1, 1.5), desc="columns, p 1"),
            Sample((a((4, 3), "t"), 3, 0, 0.5), desc="transposed, p 3"),
            Sample((a((2, 3, 2)), 2, -1, 100.0), desc="no sub-tensor past maxnorm"),
            Sample((a((3, 0)), 2, 0, 1.0), desc="empty sub-tensors")]


def _renorm_errors(rng):
    m = lambda: T(f32(rng, (2, 3)))           # noqa: E731
    return [E((m(), -1, 0, 5.0), RuntimeError, "non-positive-norm", desc="negative p"),
            E((m(), 2, 0, -1.0), RuntimeError, "maxnorm", desc="negative maxnorm"),
            E((T(f32(rng, (3,))), 2, 0, 1.0), RuntimeError, "at least 2 dimensions", desc="1-d")]


add(OpInfo("renorm", fn("renorm"), _renorm_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL, errors=_renorm_errors))


def _isreal_samples(rng, dtype):
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay)  # noqa: E731
    return [Sample((a((2, 3)),), desc="2-d"), Sample((a((3, 2), "t"),), desc="transposed"), Sample((a(()),), desc="0-d"),
            Sample((a((0, 3)),), desc="empty")]


add(OpInfo("isreal", fn("isreal"), _isreal_samples, dtypes=ALL,
           errors=lambda rng: [E((3.0,), TypeError, "isreal", desc="a number")]))
