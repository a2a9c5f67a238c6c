"""The opencl GEMM (bmm, reached by mm/matmul/linear/conv) against torch, for both its kernels.

The plugin picks the register-blocked kernel on CPU devices and the local-memory one on GPUs;
both run here on whatever device there is (PoCL in CI), chosen by patching `gemm.config_for`. Sizes
are odd (1, 7, 33, 65, 130) so every edge of the 8-row / vector-wide / 64-wide tiles is hit,
and operands come transposed, strided, offset, batched and batch-broadcast.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.testing.tolerances import EXACT, LINALG_TOL, VALUE_TOL
from test_conformance_opencl import REASON
from torch_compare import values

pytest.importorskip("ember_opencl", reason="the ember-opencl plugin is not installed")
from ember_opencl.kernels import gemm  # noqa: E402

pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "opencl available")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64"]


class _Pool:
    """Operands as views of one opencl buffer (and of one torch tensor holding the same values).

    One host-to-device transfer per dtype, so the test builds no per-size copy kernels, and
    every operand after the first starts at a storage offset.
    """

    def __init__(self, rng, dtype, size=50_000):
        if dtype == "int64":
            data = rng.integers(-5, 6, size=size).astype(np.float64)
        else:
            data = rng.uniform(-1, 1, size=size)
        self.t = torch.from_numpy(data).to(getattr(torch, dtype))
        # cast on the cpu: the opencl side gets exactly torch's rounded values
        self.e = ember.tensor(self.t.to(torch.float64).numpy()).to(getattr(ember, dtype)).to("opencl")
        self.next = 0

    def take(self, shape):
        n = int(np.prod(shape))
        o, self.next = self.next, self.next + n + 3
        return self.e[o:o + n].reshape(shape), self.t[o:o + n].reshape(shape)


def _cases(pool):
    """(description, ember result, torch result) for each layout."""
    out = []

    def mm(desc, sa, sb, fa=lambda x: x, fb=lambda x: x):
        (ea, ta), (eb, tb) = pool.take(sa), pool.take(sb)
        out.append((desc, fa(ea) @ fb(eb), fa(ta) @ fb(tb)))

    mm("1x1 @ 1x1", (1, 1), (1, 1))
    mm("7x33 @ 33x65", (7, 33), (33, 65))
    mm("65x130 @ 130x7", (65, 130), (130, 7))
    mm("33x1 @ 1x130 (outer product)", (33, 1), (1, 130))
    mm("A transposed", (33, 7), (33, 65), fa=lambda x: x.t())
    mm("B transposed (linear's weight)", (65, 33), (7, 33), fb=lambda x: x.t())
    mm("strided rows and columns, offsets", (14, 99), (99, 130), fa=lambda x: x[1::2, ::3], fb=lambda x: x[1::3, 2::2])
    (ea, ta), (eb, tb), (ec, tc) = pool.take((3, 7, 33)), pool.take((3, 33, 65)), pool.take((33, 9))
    out.append(("bmm batch 3", ember.bmm(ea, eb), torch.bmm(ta, tb)))
    out.append(("bmm transposed operands", ember.bmm(eb.transpose(1, 2), ea.transpose(1, 2)),
                torch.bmm(tb.transpose(1, 2), ta.transpose(1, 2))))
    out.append(("batch-broadcast B (3-d @ 2-d)", ea @ ec, ta @ tc))
    out.append(("batch-broadcast A (stride 0)", ember.bmm(ec.t().unsqueeze(0).expand(3, 9, 33), eb),
                torch.bmm(tc.t().unsqueeze(0).expand(3, 9, 33), tb)))
    return out


# The local kernel's loads and stores are cg.load/cg.store, the same for every dtype of a kind:
# one float and one integer dtype cover it (each PoCL build costs seconds). It runs here with
# 4 x 4 work-groups (16 x 16 tiles: more edges at these sizes), which PoCL also builds in a
# fraction of the time it takes for the 16 x 16 work-groups a GPU gets.
CASES = [("register", d) for d in DTYPES] + [("local", d) for d in ("float32", "int64")]


@pytest.mark.parametrize("variant, dtype", CASES)
def test_gemm_matches_torch(variant, dtype, monkeypatch):
    chosen = gemm.config_for
    forced = (lambda dev, dt: chosen(dev, dt, "register")) if variant == "register" else \
        (lambda dev, dt: gemm.GemmConfig("local", 4, 4, (4, 4)))
    monkeypatch.setattr(gemm, "config_for", forced)
    rtol, atol = EXACT if dtype == "int64" else LINALG_TOL.get(dtype, VALUE_TOL[dtype])
    for desc, got, want in _cases(_Pool(np.random.default_rng(0), dtype)):
        assert str(got.dtype).split(".")[-1] == dtype, desc
        assert tuple(got.shape) == tuple(want.shape), desc
        np.testing.assert_allclose(values(got.cpu()), values(want), rtol=rtol, atol=atol, err_msg=f"{variant}: {desc}")


def test_gemm_empty_inner_dimension_gives_zeros():
    e = ember.ones((3, 0), device="opencl") @ ember.ones((0, 5), device="opencl")
    assert tuple(e.shape) == (3, 5)
    assert (e.cpu().numpy() == 0).all()
