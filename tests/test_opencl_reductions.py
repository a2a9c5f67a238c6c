"""The opencl reduction engine (kernels/reduce_split.py) against torch, on both sides of its plan.

A reduction with few outputs and more than `SEQUENTIAL_R` reduced elements is split (partials
in the opmath type, then a pass over them); with many outputs or few reduced elements each
work-item reduces one output. The sizes sit just below and above those thresholds and far
above (several chunks per output); NaNs sit at the first, a middle and the last element, in
different chunks; integer data in a small range gives ties across chunks for argmax/argmin.
Each PoCL kernel build costs time, so the dtypes are spread over the kinds, not crossed.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from test_conformance_opencl import REASON
from torch_compare import values

pytest.importorskip("ember_opencl", reason="the ember-opencl plugin is not installed")
from ember_opencl.kernels import reduce_split  # noqa: E402

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "opencl available")

SEQ = reduce_split.SEQUENTIAL_R
MANY = reduce_split.MANY_OUTPUTS


def pair(data: np.ndarray, dtype: str):
    """The same values as an opencl ember tensor and a torch tensor of `dtype`."""
    t = torch.from_numpy(data).to(getattr(torch, dtype))
    # cast on the cpu backend: the opencl side gets torch's rounded values, and builds no cast kernels
    e = ember.tensor(t.to(torch.float64).numpy()).to(getattr(ember, dtype)).to("opencl")
    return e, t


def data(rng, n: int, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, size=n).astype(np.float64)
    if dtype in ("uint8", "int8", "int16", "int32", "int64"):
        return rng.integers(-3 if dtype != "uint8" else 0, 4, size=n).astype(np.float64)  # many ties
    return rng.uniform(-1, 1, size=n)


def check(e_out, t_out, dtype: str, kind: str, scale: float = 1.0):
    assert tuple(e_out.shape) == tuple(t_out.shape)
    assert str(e_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]
    ev, tv = values(e_out.cpu()), values(t_out)
    if kind == "sum" and dtype.startswith(("float", "bfloat")):
        rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
        np.testing.assert_allclose(ev, tv, rtol=rtol, atol=rtol * scale)
    else:
        np.testing.assert_array_equal(ev, tv)


def nan_and_tie_cases(n: int, rng) -> list[np.ndarray]:
    """NaNs at the first, a middle and the last element and in several chunks; extreme-value ties."""
    base = rng.uniform(-1, 1, size=n)
    out = []
    for where in ([0], [n // 2], [n - 1], [SEQ + 5, 3 * SEQ, n - 1], [n - 70, 40]):
        x = base.copy()
        x[where] = np.nan
        out.append(x)
    x = np.zeros(n)
    x[[SEQ * 7 + 3, 77, n - 1]] = 2.0                   # ties of the maximum in different chunks
    x[[n - 2, SEQ + 1, SEQ * 9]] = -2.0                 # and of the minimum
    return out + [x]


# Each PoCL kernel build costs a second or two, and a (kind, dtype) pair builds two kernels
# (the split pass and the pass over partials): the dtypes are spread over the kinds, chosen so
# each load path (vector float/half/bfloat16/integer, scalar) is built once.
SPLIT_CASES = [("sum", "float32"), ("sum", "bfloat16"), ("amax", "float16"), ("amin", "float32"),
               ("argmax", "bfloat16"), ("argmin", "int64")]


def test_split_reductions_against_torch():
    """Few outputs over many elements: a split pass into partials, then a pass over them."""
    rng = np.random.default_rng(0)
    for kind, dtype in SPLIT_CASES:
        for n in (SEQ + 1, 100_003):
            xs = [data(rng, n, dtype)]
            if dtype.startswith(("float", "bfloat")) and kind != "sum" and n > 10 * SEQ:
                xs += nan_and_tie_cases(n, rng)
            for x in xs:
                e, t = pair(x, dtype)
                try:
                    check(getattr(ember, kind)(e), getattr(torch, kind)(t), dtype, kind,
                          scale=np.abs(x).sum() / 50)
                except AssertionError as exc:
                    raise AssertionError(f"{kind} {dtype} n={n} NaNs at {np.flatnonzero(np.isnan(x))}") from exc


def test_sequential_and_many_outputs():
    """At the threshold, or with many outputs, one work-item reduces an output."""
    rng = np.random.default_rng(1)
    e, t = pair(data(rng, SEQ, "float32"), "float32")
    check(e.sum(), t.sum(), "float32", "sum", scale=SEQ / 50)
    x = data(rng, (MANY + 1) * 9, "int16").reshape(MANY + 1, 9)
    e, t = pair(x, "int16")
    check(e.sum(dim=1), t.sum(dim=1), "int16", "sum")                 # int64 accumulation and result
    check(e.argmax(dim=1), t.argmax(dim=1), "int16", "argmax")        # ties in every row
    big = data(rng, 3 * SEQ + 7, "int32") * 300_000_000                # overflows int32; int64 sums do not
    e, t = pair(big, "int32")
    check(e.sum(), t.sum(), "int32", "sum")


def test_dims_keepdim_and_strides():
    """Split reductions over several dims, keepdim, views with strides and offsets."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=(3, 2100, 5))
    x[1, 2000, 3] = x[1, 2050, 3] = np.nan
    e, t = pair(x, "float32")
    cases = [
        ("sum over (0, 1), keepdim", lambda m, a: m.sum(a, dim=(0, 1), keepdim=True)),
        ("argmax over dim 1 (NaNs in one row)", lambda m, a: m.argmax(a, dim=1, keepdim=True)),
        ("amin of a strided, transposed view over (0, 1)", lambda m, a: m.amin(a[:, 1::2, ::2].transpose(0, 2), dim=(0, 1))),
    ]
    for desc, f in cases:
        kind = "sum" if "sum" in desc else "exact"
        try:
            check(f(ember, e), f(torch, t), "float32", kind, scale=50.0)
        except AssertionError as exc:
            raise AssertionError(desc) from exc
