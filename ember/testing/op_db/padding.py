"""Padding and upsampling: constant_pad_nd, reflection/replication pads, pad, nearest and bilinear upsampling.

The `.vec` upsampling overloads are called with `scale_factors=` by keyword: ember picks
an overload by the names it binds (the base overloads have no `scale_factors`).
"""
from __future__ import annotations

import numpy as np

from .convolution import aten_or_ember
from .samples import FLOAT, NP_DTYPE, OpInfo, Sample, T, fn, is_float, make
from .database import E, add, f32


def _a(rng, dtype):
    return lambda shape, layout="c": T(make(rng, shape, dtype), layout, grad=is_float(dtype))  # noqa: E731


def _constant_pad_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 3)), [1, 2]), desc="last dim"),
            Sample((a((2, 3)), [1, 1, 2, 0], 1), desc="two dims, value 1"),
            Sample((a((1, 2, 3)), [0, 1, 1, 0, 1, 1]), desc="three dims"),
            Sample((a((2, 4)), [-1, 2, 1, -1]), desc="negative pads crop"),
            Sample((a((3, 2), "t"), [1, 1]), desc="transposed input"),
            Sample((a((2, 3), "s"), [2, 0]), desc="strided input"),
            Sample((a((0, 3)), [1, 1]), desc="empty")]


add(OpInfo("constant_pad_nd", fn("constant_pad_nd"), _constant_pad_samples, dtypes=FLOAT + ("int64", "uint8"),
           grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), [1, 2, 3]), RuntimeError, "constant_pad_nd", desc="odd pad length"),
               E((T(f32(rng, (2, 3))), [1, 1, 1, 1, 1, 1]), RuntimeError, "constant_pad_nd", desc="pad too long"),
               E((T(f32(rng, (2, 3))), [-2, -2]), RuntimeError, "constant_pad_nd", desc="negative output size")]))


def _mode_samples(nd, reflect):
    def gen(rng, dtype):
        a = _a(rng, dtype)
        if nd == 1:
            return [Sample((a((1, 2, 5)), [2, 1]), desc="batched"),
                    Sample((a((2, 4)), [1, 3] if reflect else [3, 4]), desc="unbatched"),
                    Sample((a((2, 3, 4), "t"), [2, 2]), desc="transposed input"),
                    Sample((a((1, 2, 4)), [0, 0]), desc="no padding")]
        return [Sample((a((1, 2, 3, 4)), [1, 2, 2, 1]), desc="batched"),
                Sample((a((2, 3, 3)), [1, 1, 0, 2] if reflect else [3, 1, 0, 4]), desc="unbatched"),
                Sample((a((1, 1, 4, 3), "t"), [2, 0, 1, 1]), desc="transposed input")]
    return gen


def _mode_errors(name, nd, reflect):
    def errors(rng):
        pad = [1, 1] * nd
        out = [E((T(f32(rng, (3,) if nd == 1 else (3, 3))), pad), RuntimeError, name, desc="wrong input rank"),
               E((T(f32(rng, (1, 2, 3) if nd == 1 else (1, 2, 3, 3))), [1] * (2 * nd + 1)), RuntimeError, name,
                 desc="wrong padding length")]
        if reflect:
            out.append(E((T(f32(rng, (1, 2, 3) if nd == 1 else (1, 2, 3, 3))), [3] * (2 * nd)), RuntimeError, name,
                         desc="padding not smaller than the input"))
        return out
    return errors


for _nd in (1, 2):
    for _kind, _reflect in (("reflection", True), ("replication", False)):
        _nm = f"{_kind}_pad{_nd}d"
        add(OpInfo(_nm, aten_or_ember(_nm), _mode_samples(_nd, _reflect), dtypes=FLOAT + ("int64",), grad=True,
                   errors=_mode_errors(_nm, _nd, _reflect)))


def _pad_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((2, 3)), [1, 2]), desc="constant default"),
            Sample((a((1, 2, 3)), [1, 0, 2, 1], "constant", 2.5 if is_float(dtype) else 2), desc="constant value"),
            Sample((a((1, 2, 4)), [2, 1], "reflect"), desc="reflect 1-d"),
            Sample((a((1, 2, 3, 4)), [1, 2, 2, 0], "reflect"), desc="reflect 2-d"),
            Sample((a((2, 3)), [2, 4], "replicate"), desc="replicate 1-d unbatched"),
            Sample((a((1, 1, 2, 3)), [1, 1, 2, 2], "replicate"), desc="replicate 2-d"),
            Sample((a((1, 2, 4)), [2, 3], "circular"), desc="circular 1-d"),
            Sample((a((1, 2, 3, 3)), [1, 0, 2, 3], "circular"), desc="circular 2-d"),
            Sample((a((1, 1, 2, 2, 3)), [1, 1, 1, 0, 0, 1], "replicate"), desc="replicate 3-d"),
            Sample((a((1, 2, 4, 3), "t"), [1, 1, 1, 1], "reflect"), desc="transposed input")]


add(OpInfo("pad", aten_or_ember("pad"), _pad_samples, dtypes=FLOAT + ("int64",), grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), [1, 2, 3]), RuntimeError, "pad", desc="odd pad length"),
               E((T(f32(rng, (1, 2, 3))), [1, 1], "reflect", 1.0), RuntimeError, "pad", "value",
                 desc="value with reflect"),
               E((T(f32(rng, (1, 2, 3))), [3, 3], "reflect"), RuntimeError, "pad", desc="reflect pad too large"),
               E((T(f32(rng, (1, 2, 3))), [4, 0], "circular"), RuntimeError, "pad", desc="circular wraps twice")]))


# ------------------------------------------------------------------------------ upsampling
def _nearest2d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 3, 4)), [6, 8]), desc="factor 2"),
            Sample((a((1, 1, 3, 4)), [5, 7]), desc="non-integer factor"),
            Sample((a((2, 1, 4, 6)), [2, 4]), desc="downsample"),
            Sample((a((1, 1, 2, 3)), [6, 6], 3.0, 2.0), desc="with scales"),
            Sample((a((1, 1, 3, 2)), [4, 5], 1.5, 2.6), desc="non-integer scales"),
            Sample((a((1, 2, 4, 3), "t"), [8, 6]), desc="transposed input")] + \
        ([Sample((T(np.array([[[[1.0, np.inf], [np.nan, -2.0]]]], dtype=make(rng, (1,), dtype).dtype)), [3, 5]),
                 desc="inf and nan copied, non-integer factor")] if is_float(dtype) else [])


def _upsample_errors(name, nd, extra=()):
    def errors(rng):
        x = (1, 2, 3, 4) if nd == 2 else (1, 2, 3)
        return [E((T(f32(rng, (3, 4))), [2] * nd) + extra, RuntimeError, name, desc="wrong input rank"),
                E((T(f32(rng, x)), [0] * nd) + extra, RuntimeError, name, desc="output size 0")]
    return errors


add(OpInfo("upsample_nearest2d", aten_or_ember("upsample_nearest2d"), _nearest2d_samples, dtypes=FLOAT + ("uint8",),
           grad=True, errors=_upsample_errors("upsample_nearest2d", 2)))


def _nearest1d_samples(rng, dtype):
    a = _a(rng, dtype)
    return [Sample((a((1, 2, 3)), [6]), desc="factor 2"),
            Sample((a((2, 1, 4)), [7]), desc="non-integer factor"),
            Sample((a((1, 1, 5)), [3]), {"scales": 0.7}, desc="downsample with scale (by keyword: see above)")]


add(OpInfo("upsample_nearest1d", aten_or_ember("upsample_nearest1d"), _nearest1d_samples, dtypes=FLOAT + ("uint8",),
           grad=True, errors=_upsample_errors("upsample_nearest1d", 1)))


def _vec_samples(nd, bilinear):
    def gen(rng, dtype):
        a = _a(rng, dtype)
        x = (1, 2, 3, 4) if nd == 2 else (1, 2, 3)
        kw = (lambda size, sf: {"output_size": size, "align_corners": True, "scale_factors": sf}) if bilinear else \
            (lambda size, sf: {"output_size": size, "scale_factors": sf})
        return [Sample((a(x),), kw(None, [2.0] * nd), desc="scale factor 2"),
                Sample((a(x),), kw(None, [1.7, 2.5][:nd]), desc="non-integer scale factors"),
                Sample((a(x),), kw([5, 7][:nd], None), desc="output size")] + \
            ([Sample((a(x),), {"output_size": None, "align_corners": False, "scale_factors": [1.5, 2.0]},
                     desc="align_corners False")] if bilinear else [])
    return gen


def _vec_errors(name, nd, bilinear):
    def errors(rng):
        x = (1, 2, 3, 4) if nd == 2 else (1, 2, 3)
        kw = {"align_corners": False} if bilinear else {}
        return [E((T(f32(rng, x)),), RuntimeError, name, kwargs={"output_size": None, "scale_factors": None, **kw},
                  desc="neither size nor scale")]
    return errors


add(OpInfo("upsample_nearest2d.vec", aten_or_ember("upsample_nearest2d.vec"), _vec_samples(2, False),
           dtypes=FLOAT + ("uint8",), grad=True, errors=_vec_errors("upsample_nearest2d", 2, False)))
add(OpInfo("upsample_nearest1d.vec", aten_or_ember("upsample_nearest1d.vec"), _vec_samples(1, False),
           dtypes=FLOAT, grad=True, errors=_vec_errors("upsample_nearest1d", 1, False)))
add(OpInfo("upsample_bilinear2d.vec", aten_or_ember("upsample_bilinear2d.vec"), _vec_samples(2, True),
           dtypes=FLOAT, grad=True, errors=_vec_errors("upsample_bilinear2d", 2, True)))


def _bilinear_samples(rng, dtype):
    a = _a(rng, dtype)
    S = []
    for ac in (False, True):
        S += [Sample((a((1, 2, 3, 4)), [6, 8], ac), desc=f"factor 2, align_corners={ac}"),
              Sample((a((1, 1, 3, 3)), [5, 7], ac), desc=f"non-integer, align_corners={ac}"),
              Sample((a((2, 1, 4, 5)), [2, 3], ac), desc=f"downsample, align_corners={ac}"),
              Sample((a((1, 1, 2, 3)), [1, 1], ac), desc=f"to 1x1, align_corners={ac}")]
    S += [Sample((a((1, 1, 2, 3)), [5, 4], False, 2.5, 1.5), desc="with scales"),
          Sample((a((1, 2, 4, 3), "t"), [6, 5], False), desc="transposed input"),
          Sample((T(np.array([[[[1.0, np.inf, 0.5, 2.0], [0.0, 1.0, np.nan, 3.0], [1.0, 2.0, 3.0, 4.0]]]],
                             dtype=NP_DTYPE[dtype])), [6, 8], False), desc="inf and nan stay local")]
    return S


add(OpInfo("upsample_bilinear2d", aten_or_ember("upsample_bilinear2d"), _bilinear_samples, dtypes=FLOAT, grad=True,
           errors=lambda rng: _upsample_errors("upsample_bilinear2d", 2, (False,))(rng) + [
               E((T(make(rng, (1, 1, 2, 2), "int64")), [4, 4], False), NotImplementedError, "upsample_bilinear2d",
                 desc="int input")]))
