"""Matrix products against the array-module API (float16/bfloat16 accumulate in float32)."""
from __future__ import annotations

from .context import ArrayModule, column_sums, fold_leading, out


def matmul(am: ArrayModule, spec, a, b):
    """mm and bmm: `a @ b`, float16/bfloat16 multiplied in float32 and rounded once."""
    dt = am.native_of[spec[1]]
    if dt in am.lowp:
        f32 = am.f32
        return am.xp.matmul(a.astype(f32), b.astype(f32)).astype(dt)
    r = am.xp.matmul(a, b)
    return r if r.dtype == dt else r.astype(dt)


#: OpenBLAS multiplies `x @ w.T` with a few rows (a prompt of 32 tokens at batch 1) markedly slower than the
#: same product laid out with a few columns, `(w @ x.T).T`: 32 rows of GPT-2's 768 x 768 take about 0.6 of
#: the time that way, on one core of an AMD EPYC and of an Intel Xeon alike. The gain needs many output
#: features; with a few (a classifier's 10) or past 32 rows (a batch of 64 through 64 -> 128) the plain
#: product is as fast or faster. The transposed product is copied into the C-contiguous result, a transient
#: of the output's size, kept small by the byte bound. workspace.py declares that transient by the same test
SMALL_ROWS, SMALL_ROWS_MIN_FEATURES, SMALL_ROWS_OUTPUT_BYTES = 32, 128, 1 << 20


def transposed_product_pays(rows: int, features: int, itemsize: int) -> bool:
    """Whether `x2 @ w.T` of `rows` rows and `features` output features is computed as `(w @ x2.T).T`
    (numpy arrays of one dtype, w C-contiguous: the caller's checks)."""
    return 2 <= rows <= SMALL_ROWS and features >= SMALL_ROWS_MIN_FEATURES \
        and rows * features * itemsize <= SMALL_ROWS_OUTPUT_BYTES


def _rows_times(am: ArrayModule, x2, w):
    """x2 @ w.T for a 2-D x2 and 2-D weight w (out_features, in_features)."""
    xp = am.xp
    if am.is_numpy and w.flags.c_contiguous and x2.dtype == w.dtype \
            and transposed_product_pays(x2.shape[0], w.shape[0], x2.itemsize):
        return xp.matmul(w, x2.T).T.copy()
    return xp.matmul(x2, w.T)


def linear(am: ArrayModule, spec, x, w, b=None):
    """x @ w.T (+ b): the product rounded to the result dtype, then the bias added, as mm + add."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    wt = w.T if w.ndim == 2 else w
    if dt in am.lowp:
        f32 = am.f32
        r = xp.matmul(x.astype(f32), wt.astype(f32)).astype(dt)
        return r if b is None else (r.astype(f32) + b.astype(f32)).astype(dt)
    if x.ndim >= 2 and wt.ndim == 2 and x.flags.c_contiguous:
        # the leading dims folded into one GEMM's rows (matmul would loop over them)
        r = _rows_times(am, fold_leading(x) if x.ndim > 2 else x, w).reshape(x.shape[:-1] + (wt.shape[-1],))
    else:
        r = xp.matmul(x, wt)
    if b is not None:
        if r.dtype == b.dtype or r.dtype == xp.result_type(r, b):
            r += b                                     # the product is fresh (or a view of it): in place
        else:
            r = r + b
    return r if r.dtype == dt else r.astype(dt)


def linear_backward(am: ArrayModule, specs, x, g, w, output_mask):
    """The decomposition's three gradients in one kernel: g @ w, g.T @ x over the folded leading
    dims and g summed over them (products of float16/bfloat16 accumulate in float32)."""
    xp = am.xp
    native_of = am.native_of
    asked = [s for s in specs if s is not None]
    if asked and native_of[asked[0][1]] in am.lowp:      # only the operands a masked-in gradient reads
        f32 = am.f32
        g = g.astype(f32)
        w = w.astype(f32) if specs[0] is not None else None
        x = x.astype(f32) if specs[1] is not None else None
    # whether the weight is 1-D (the output then has no feature dim), as the shape rule worked it out
    weight_1d = len(specs[1][0]) == 1 if specs[1] is not None else \
        w.ndim == 1 if w is not None else specs[2] is not None and len(specs[2][0]) == 0
    gi = gw = gb = None
    g2 = g if g.ndim == 2 else fold_leading(g) if g.ndim > 2 else None   # the folded rows (2-D g as it is)
    if specs[0] is not None:
        if weight_1d:
            gi = g[..., None] * w
        else:
            gi = xp.matmul(g2, w).reshape(g.shape[:-1] + w.shape[1:]) if g.ndim > 2 else xp.matmul(g, w)
        gi = out(am, gi, native_of[specs[0][1]])
    if specs[1] is not None:
        if weight_1d:
            gw = g * x if x.ndim == 1 else xp.matmul(g.reshape(g.size), fold_leading(x))
        else:
            gw = g[:, None] * x[None, :] if x.ndim == 1 else \
                xp.matmul(g2.T, x if x.ndim == 2 else fold_leading(x))
        gw = out(am, gw, native_of[specs[1][1]])
    if specs[2] is not None:
        if weight_1d:
            gb = xp.asarray(am.add_reduce(g, axis=None))
        elif g.ndim == 1:
            gb = g.copy()
        else:                                   # BLAS for floats, a sum reduction otherwise
            gb = column_sums(am, g2) if g2.dtype.kind == "f" else am.add_reduce(g2, axis=0)
        gb = out(am, gb, native_of[specs[2][1]])
    return gi, gw, gb


KERNELS = {"mm": matmul, "bmm": matmul, "linear": linear, "linear_backward": linear_backward}
