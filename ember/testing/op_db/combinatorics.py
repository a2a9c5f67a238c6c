"""OpInfos of block_diag, cartesian_prod and combinations (ember.block_diag and ember.cartesian_prod take their
tensors as varargs, as torch's do), against torch's."""
from __future__ import annotations

from .samples import ALL, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32, off_meta


def _varargs(name: str):
    def call(m, tensors):
        return getattr(m, name)(*tensors)
    call.__name__ = name
    return call


def _block_diag_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, lay="c": T(make(rng, shape, dtype), lay, grad=g)  # noqa: E731
    return [Sample(([a((2, 2)), a((1, 3)), a((2,))],), desc="matrices and a vector"),
            Sample(([a(()), a((3, 2), "t")],), desc="0-d and transposed"),
            Sample(([a((0, 2)), a((1, 0))],), desc="empty blocks"),
            Sample(([a((2, 2)), T(make(rng, (1, 1), "float64" if dtype != "float64" else "float32"))],),
                   desc="mixed dtypes")]


def _vector_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda n, lay="c": T(make(rng, (n,), dtype), lay, grad=g)  # noqa: E731
    return [Sample(([a(2), a(3)],), desc="two"), Sample(([a(2), a(1), a(3)],), desc="three"),
            Sample(([a(3)],), desc="one"), Sample(([a(2), a(0)],), desc="an empty one"),
            Sample(([a(4, "s"), a(2)],), desc="strided")]


def _combination_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda n, lay="c": T(make(rng, (n,), dtype), lay, grad=g)  # noqa: E731
    return [Sample((a(4),), desc="pairs"), Sample((a(4), 3), desc="triples"),
            Sample((a(3), 2, True), desc="with replacement"), Sample((a(3), 1), desc="r 1"),
            Sample((a(3), 4), desc="r past the length"), Sample((a(5, "s"), 2), desc="strided"),
            Sample((a(0), 2), desc="empty")]


add(OpInfo("block_diag", _varargs("block_diag"), _block_diag_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E(([T(f32(rng, (2, 2, 2)))],), RuntimeError, "2 or fewer dimensions",
                                 fn=_varargs("block_diag"), desc="3-d block")]))
add(OpInfo("cartesian_prod", _varargs("cartesian_prod"), _vector_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E(([T(f32(rng, (2, 2)))],), RuntimeError, "1D vector", fn=_varargs("cartesian_prod"),
                                 desc="2-d"),
                               E(([T(f32(rng, (2,))), T(make(rng, (2,), "int64"))],), RuntimeError, "same dtype",
                                 fn=_varargs("cartesian_prod"), desc="dtypes differ"),
                               E(([],), RuntimeError, "non-empty", fn=_varargs("cartesian_prod"), desc="none")]))
add(OpInfo("combinations", fn("combinations"), off_meta(_combination_samples), dtypes=ALL, grad=True,
           xfail={("meta", None): "torch's combinations selects through masked_select, which has no meta kernel"},
           errors=lambda rng: [E((T(f32(rng, (2, 2))),), RuntimeError, "1D vector", desc="2-d"),
                               E((T(f32(rng, (3,))), -1), RuntimeError, "non-negative", desc="negative r")]))
