"""OpInfos of torch.linalg's norms and products and of torch.cross, torch.tensordot and torch.dist:
linalg_vector_norm, linalg_matrix_norm (numeric and str orders), linalg_vecdot, linalg_cross, cross,
linalg_multi_dot, tensordot and dist, called through their public Python functions (ember.linalg.*,
ember.tensordot) against torch's.

A matrix norm of order 1 or inf has a kink where two column (or row) sums tie; the samples' random values
make ties unlikely, except in an expanded input, whose repeated rows or columns tie by construction: those
samples skip gradcheck (the gradient is still compared with torch's, which splits it evenly as amax does)."""
from __future__ import annotations

from ..tolerances import LINALG_TOL, REDUCTION_TOL
from .samples import DT, FLOAT, OpInfo, Sample, T, fn, make
from .database import E, add, f32

INF = float("inf")


def linalg(name: str):
    """module.linalg.name(*args, **kwargs)."""
    def call(m, *a, **k):
        return getattr(m.linalg, name)(*a, **k)
    call.__name__ = f"linalg.{name}"
    return call


# ------------------------------------------------------------------------------------ vector norm
def _vector_norm_samples(rng, dtype):
    S = []
    x = lambda shape, layout="c", **kw: T(make(rng, shape, dtype), layout, grad=True, **kw)    # noqa: E731
    for ord in (2, 1, INF, -INF, 0, 3, 0.5, -1.5):
        tie = ord in (INF, -INF)
        S.append(Sample((x((2, 3)), ord), desc=f"all, ord={ord}", gradcheck=ord != 0))
        S.append(Sample((x((2, 3, 2)), ord, (0, 2)), desc=f"dims (0, 2), ord={ord}", gradcheck=ord != 0))
        S.append(Sample((x((3, 1), "e", expand=(3, 2)), ord, -1, True), desc=f"expanded, keepdim, ord={ord}",
                        gradcheck=ord != 0 and not tie))
    S += [Sample((x((3, 2), "t"),), {"dim": 0}, desc="transposed, dim 0"),
          Sample((x((2, 4), "s"),), {"dim": [], "keepdim": True}, desc="strided, dim [] keepdim"),
          Sample((x(()),), desc="0-d"),
          Sample((x((2, 3)),), {"keepdim": True}, desc="all, keepdim"),
          Sample((T(make(rng, (0, 3), dtype), grad=True), 2, 1), desc="empty, dim 1"),
          Sample((T(make(rng, (0, 3), dtype), grad=True), INF, 1), desc="empty, inf over a non-empty dim"),
          Sample((T(make(rng, (0, 3), dtype), grad=True),), desc="empty, all")]
    if dtype in ("float16", "bfloat16", "float32"):
        S.append(Sample((x((2, 3)), 2), {"dtype": DT("float64")}, desc="dtype=float64"))
    return S


def _vector_norm_errors(rng):
    call = linalg("vector_norm")
    return [E((T(make(rng, (2, 3), "int64")),), RuntimeError, "linalg.vector_norm", "floating point", fn=call,
              desc="int input"),
            E((T(f32(rng, (2, 3))),), RuntimeError, "linalg.vector_norm", "narrowing", kwargs={"dtype": DT("float16")},
              fn=call, desc="narrowing dtype"),
            E((T(f32(rng, (2, 3))),), RuntimeError, "linalg.vector_norm", "floating point",
              kwargs={"dtype": DT("int64")}, fn=call, desc="int dtype"),
            E((T(f32(rng, (0, 3))), INF), RuntimeError, "linalg.vector_norm", "identity", fn=call,
              desc="inf norm of an empty tensor"),
            E((T(f32(rng, (0, 3))), -1, 0), RuntimeError, "linalg.vector_norm", "identity", fn=call,
              desc="negative order over an empty dim"),
            E((T(f32(rng, (2, 3))), 2, (0, 0)), RuntimeError, "appears multiple times", fn=call, desc="repeated dim"),
            E((T(f32(rng, (2, 3))), 2, 5), IndexError, "Dimension out of range", fn=call, desc="dim out of range"),
            E((T(f32(rng, (2, 3))), "fro"), TypeError, "ord", fn=call, desc="str order")]


add(OpInfo("linalg_vector_norm", linalg("vector_norm"), _vector_norm_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=_vector_norm_errors))


# ------------------------------------------------------------------------------------ matrix norm
def _matrix_norm_samples(rng, dtype):
    S = []
    x = lambda shape, layout="c", **kw: T(make(rng, shape, dtype), layout, grad=True, **kw)    # noqa: E731
    for ord in (1, -1, INF, -INF):
        S.append(Sample((x((3, 4)), ord), desc=f"3x4, ord={ord}"))
        S.append(Sample((x((2, 3, 4)), ord, (2, 0)), desc=f"dims (2, 0), ord={ord}"))
        S.append(Sample((x((4, 3), "t"), ord), {"keepdim": True}, desc=f"transposed, keepdim, ord={ord}"))
        S.append(Sample((x((3, 1), "e", expand=(3, 2)), ord), desc=f"expanded (ties), ord={ord}", gradcheck=False))
    for ord in (1, INF):                   # the largest of no sums is 0 (torch's; the smallest is an error)
        S.append(Sample((T(make(rng, (3, 0), dtype), grad=True), ord), desc=f"3x0, ord={ord}"))
        S.append(Sample((T(make(rng, (0, 3), dtype), grad=True), ord), desc=f"0x3, ord={ord}"))
    if dtype in ("float16", "bfloat16", "float32"):
        S.append(Sample((x((3, 3)), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    return S


def _matrix_norm_errors(rng):
    call = linalg("matrix_norm")
    m = lambda: T(f32(rng, (2, 3, 4)))          # noqa: E731
    return [E((T(f32(rng, (3,))), 1), RuntimeError, "linalg.matrix_norm", "at least 2 dimensions", fn=call,
              desc="1-d"),
            E((T(make(rng, (2, 3), "int64")), 1), RuntimeError, "linalg.matrix_norm", "floating point", fn=call,
              desc="int input"),
            E((m(), 3), RuntimeError, "linalg.matrix_norm", "Order 3 not supported", fn=call, desc="order 3"),
            E((m(), "abc"), RuntimeError, "linalg.matrix_norm", "Order abc not supported", fn=call, desc="order abc"),
            E((m(), 1, (0, 1, 2)), RuntimeError, "linalg.matrix_norm", "2-tuple", fn=call, desc="three dims"),
            E((m(), 1, (0, 0)), RuntimeError, "linalg.matrix_norm", "different", fn=call, desc="same dims"),
            E((m(), 1), RuntimeError, "linalg.matrix_norm", "narrowing", kwargs={"dtype": DT("float16")}, fn=call,
              desc="narrowing dtype"),
            E((T(f32(rng, (3, 0))), -1), IndexError, "amin", "non-zero size", fn=call,
              desc="smallest column sum of no columns")]


add(OpInfo("linalg_matrix_norm", linalg("matrix_norm"), _matrix_norm_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=_matrix_norm_errors))


def _fro_samples(rng, dtype):
    x = lambda shape, layout="c", **kw: T(make(rng, shape, dtype), layout, grad=True, **kw)    # noqa: E731
    return [Sample((x((3, 4)),), desc="3x4"), Sample((x((2, 3, 4)), "fro", (0, 2), True), desc="dims (0, 2), keepdim"),
            Sample((x((4, 3), "t"), "fro"), desc="transposed"), Sample((x((2, 0, 3)),), desc="empty"),
            Sample((x((3, 3)),), desc="linalg.norm, ord None", fn=linalg("norm")),
            Sample((x((2, 3, 4)), 1, (1, 2)), desc="linalg.norm, numeric ord over two dims", fn=linalg("norm")),
            Sample((x((2, 3, 4)), 3, 1), desc="linalg.norm, one dim", fn=linalg("norm")),
            Sample((x((2, 3, 4)),), desc="linalg.norm, every element", fn=linalg("norm")),
            Sample((x((4,)), INF), desc="linalg.norm, a vector", fn=linalg("norm"), gradcheck=False),
            Sample((x((3, 4)), "fro"), {"dim": (0, 1)}, desc="linalg.norm, 'fro'", fn=linalg("norm"))]


def _norm_dispatch_errors(rng):
    call = linalg("norm")
    return [E((T(f32(rng, (2, 3, 4))), 2), RuntimeError, "linalg.norm", "1D or 2D", fn=call,
              desc="ord without dim on 3-d"),
            E((T(f32(rng, (2, 3, 4))), None, (0, 1, 2)), RuntimeError, "linalg.norm", "length 1 or 2", fn=call,
              desc="three dims"),
            E((T(f32(rng, (2, 3))), "fro", 1), RuntimeError, "linalg.matrix_norm", "2-tuple", fn=call,
              desc="'fro' over one dim")]


add(OpInfo("linalg_matrix_norm.str_ord", linalg("matrix_norm"), _fro_samples, dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL, errors=_norm_dispatch_errors))


# ------------------------------------------------------------------------------------------ vecdot
def _vecdot_samples(rng, dtype):
    x = lambda shape, layout="c", **kw: T(make(rng, shape, dtype), layout, grad=True, **kw)    # noqa: E731
    return [Sample((x((2, 3)), x((3,))), desc="broadcast"), Sample((x((3, 2)), x((3, 1))), {"dim": 0}, desc="dim 0"),
            Sample((x((2, 3), "t"), x((2, 3))), desc="transposed"), Sample((x(()), x(())), desc="0-d"),
            Sample((x((2, 0)), x((2, 0))), desc="empty vectors")]


def _vecdot_errors(rng):
    call = linalg("vecdot")
    return [E((T(f32(rng, (3,))), T(make(rng, (3,), "float64"))), RuntimeError, "linalg.vecdot", "same dtype",
              fn=call, desc="dtypes differ"),
            E((T(make(rng, (3,), "int64")), T(make(rng, (3,), "int64"))), RuntimeError, "linalg.vecdot",
              "floating point", fn=call, desc="int inputs"),
            E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, "size", fn=call, desc="shapes do not broadcast")]


add(OpInfo("linalg_vecdot", linalg("vecdot"), _vecdot_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL,
           errors=_vecdot_errors))


# ------------------------------------------------------------------------------------------- cross
_CROSS_DTYPES = FLOAT + ("int64", "int32")


def _cross_samples(dim_default):
    def samples(rng, dtype):
        g = dtype in FLOAT
        x = lambda shape, layout="c", **kw: T(make(rng, shape, dtype), layout, grad=g, **kw)    # noqa: E731
        S = [Sample((x((4, 3)), x((4, 3))), {"dim": 1}, desc="rows"),
             Sample((x((3, 3)), x((3, 3))), {"dim": 0}, desc="3x3, dim 0"),
             Sample((x((3, 2)), x((3, 2))), {"dim": 0}, desc="columns"),
             Sample((x((1, 3)), x((2, 3))), {"dim": -1}, desc="broadcast"),
             Sample((x((4, 3), "t"), x((4, 3))), {"dim": -1}, desc="transposed"),
             Sample((x((0, 3)), x((0, 3))), {"dim": 1}, desc="empty")]
        if dim_default:
            S += [Sample((x((2, 3)), x((2, 3))), desc="default dim -1"),
                  Sample((x((3, 2, 3)), x((3, 1, 3))), desc="default dim: the input's first of length 3")]
        return S
    return samples


def _cross_errors(call, name):
    def errors(rng):
        return [E((T(f32(rng, (4, 3))), T(make(rng, (4, 3), "float64"))), RuntimeError, "scalar type", fn=call,
                  kwargs={"dim": -1}, desc="dtypes differ"),
                E((T(f32(rng, (4, 3))), T(f32(rng, (4, 3)))), RuntimeError, "length 3", fn=call, kwargs={"dim": 0},
                  desc="dim of length 4"),
                E((T(f32(rng, (2, 3))), T(f32(rng, (4, 3)))), RuntimeError, "size", fn=call, kwargs={"dim": -1},
                  desc="shapes do not broadcast"),
                E((T(f32(rng, (4, 3))), T(f32(rng, (3,)))), RuntimeError, "same number of dimensions", fn=call,
                  kwargs={"dim": -1}, desc="ranks differ"),
                E((T(f32(rng, (4, 3))), T(f32(rng, (4, 1)))), RuntimeError, "length 3", fn=call,
                  kwargs={"dim": -1}, desc="the cross dim does not broadcast"),
                E((T(f32(rng, (4, 3))), T(f32(rng, (4, 3)))), IndexError, "Dimension out of range", fn=call,
                  kwargs={"dim": 5}, desc="dim out of range"),
                E((T(make(rng, (2, 3), "bool")), T(make(rng, (2, 3), "bool"))), NotImplementedError, name, "Bool",
                  fn=call, kwargs={"dim": 1}, desc="bool")]
    return errors


def _cross_default_dim_errors(rng):
    call = fn("cross")
    return _cross_errors(call, "cross")(rng) + [
        E((T(f32(rng, (4, 2))), T(f32(rng, (4, 2)))), RuntimeError, "no dimension of size 3", fn=call,
          desc="no dim of length 3")]


add(OpInfo("linalg_cross", linalg("cross"), _cross_samples(False), dtypes=_CROSS_DTYPES, grad=True,
           errors=_cross_errors(linalg("cross"), "cross")))
add(OpInfo("cross", fn("cross"), _cross_samples(True), dtypes=_CROSS_DTYPES, grad=True,
           errors=_cross_default_dim_errors))


# --------------------------------------------------------------------------------------- multi_dot
_PRODUCT_DTYPES = FLOAT + ("int64",)


def _multi_dot_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample(([x((2, 3)), x((3, 4))],), desc="two matrices"),
            Sample(([x((5, 2)), x((2, 6)), x((6, 3))],), desc="three, the cheap order first"),
            Sample(([x((2, 6)), x((6, 5)), x((5, 1)), x((1, 4))],), desc="four"),
            Sample(([x((3,)), x((3, 4)), x((4,))],), desc="vector, matrix, vector"),
            Sample(([x((3,)), x((3,))],), desc="two vectors"),
            Sample(([x((2, 4), "t"), x((4, 3))],), desc="transposed"),
            Sample(([x((0, 3)), x((3, 4))],), desc="no rows"), Sample(([x((2, 0)), x((0, 4))],), desc="inner 0")]


def _multi_dot_errors(rng):
    call = linalg("multi_dot")
    m = lambda shape: T(f32(rng, shape))        # noqa: E731
    return [E(([m((3,))],), RuntimeError, "multi_dot", "at least 2 tensors", fn=call, desc="one tensor"),
            E(([m((2, 3, 4)), m((4, 5))],), RuntimeError, "multi_dot", "first tensor must be 1D or 2D", fn=call,
              desc="3-d first"),
            E(([m((2, 3)), m((3,)), m((3, 4))],), RuntimeError, "multi_dot", "tensor 1 must be 2D", fn=call,
              desc="vector in the middle"),
            E(([m((2, 3)), m((4, 5))],), RuntimeError, "multi_dot", "cannot be multiplied", fn=call,
              desc="shapes do not chain"),
            E(([m((2, 3)), T(make(rng, (3, 5), "float64"))],), RuntimeError, "multi_dot", "same dtype", fn=call,
              desc="dtypes differ")]


add(OpInfo("linalg_multi_dot", linalg("multi_dot"), _multi_dot_samples, dtypes=_PRODUCT_DTYPES, grad=True,
           tol=LINALG_TOL, errors=_multi_dot_errors))


# --------------------------------------------------------------------------------------- tensordot
def _tensordot_samples(rng, dtype):
    g = dtype in FLOAT
    x = lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    return [Sample((x((2, 3, 4)), x((3, 4, 5))), desc="dims=2"),
            Sample((x((2, 3, 4)), x((4, 3, 5))), {"dims": ([1, 2], [1, 0])}, desc="paired lists"),
            Sample((x((2, 3)), x((3, 4))), {"dims": 0}, desc="outer product"),
            Sample((x((2, 3), "t"), x((3, 4))), {"dims": 1}, desc="transposed"),
            Sample((x((2, 3)), x((3, 4))), {"dims": ([-1], [0])}, desc="negative dim"),
            Sample((x((2, 0)), x((0, 4))), {"dims": 1}, desc="empty contraction")]


def _tensordot_errors(rng):
    call = fn("tensordot")
    m = lambda shape: T(f32(rng, shape))        # noqa: E731
    return [E((m((2, 3, 4)), m((3, 5, 5))), RuntimeError, "contracted dimensions need to match", fn=call,
              desc="sizes differ"),
            E((m((2, 3)), m((3, 4))), RuntimeError, "dims >= 0", kwargs={"dims": -1}, fn=call, desc="negative count"),
            E((m((2, 3)), T(make(rng, (3, 4), "float64"))), RuntimeError, "same dtype", kwargs={"dims": 1}, fn=call,
              desc="dtypes differ"),
            E((m((2, 3)), m((3, 4))), RuntimeError, "same length", kwargs={"dims": ([0], [0, 1])}, fn=call,
              desc="lists of different lengths"),
            E((m((2, 3)), m((3, 4))), TypeError, "dims_self", kwargs={"dims": (1, 0)}, fn=call,
              desc="a pair of ints")]


add(OpInfo("tensordot", fn("tensordot"), _tensordot_samples, dtypes=_PRODUCT_DTYPES, grad=True, tol=LINALG_TOL,
           errors=_tensordot_errors))


# -------------------------------------------------------------------------------------------- dist
def _dist_samples(rng, dtype):
    x = lambda shape, layout="c", g=True: T(make(rng, shape, dtype), layout, grad=g)    # noqa: E731
    S = [Sample((x((2, 3)), x((3,)), p), desc=f"broadcast, p={p}", gradcheck=p != INF) for p in (2, 1, INF, 3)]
    S.append(Sample((x((2, 3), g=False), x((3,), g=False), 0), desc="p=0 (torch's backward fails on it)"))
    return S + [Sample((x((2, 3)), x((2, 3))), desc="method", fn=lambda m, a, b: a.dist(b)),
                Sample((x((2, 3), "t"), x((2, 3))), desc="transposed")]


def _dist_errors(rng):
    call = fn("dist")
    return [E((T(f32(rng, (3,))), T(f32(rng, (4,)))), RuntimeError, "size", fn=call, desc="shapes do not broadcast"),
            E((T(make(rng, (3,), "int64")), T(make(rng, (3,), "int64"))), RuntimeError, "floating point", fn=call,
              desc="int inputs"),
            E((T(f32(rng, (3,))), T(f32(rng, (3,))), "fro"), TypeError, "'p'", fn=call, desc="str p")]


add(OpInfo("dist", fn("dist"), _dist_samples, dtypes=FLOAT, grad=True, tol=REDUCTION_TOL, errors=_dist_errors))
