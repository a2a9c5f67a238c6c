"""The ember-opencl plugin itself: device selection, memory accounting, views, conversions, fallback.

The conformance suite (tests/test_conformance_opencl.py) checks op values against torch; this
file checks what is particular to the plugin. Device tests skip with the reason when the
plugin is missing or finds no OpenCL device.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ember
from test_conformance_opencl import REASON

pytest.importorskip("ember_opencl", reason="the ember-opencl plugin is not installed")
from ember_opencl import context  # noqa: E402

needs_device = pytest.mark.skipif(bool(REASON), reason=REASON or "opencl available")


def fake(p, d, platform, name, type_="cpu"):
    return context.DeviceInfo(None, p, d, platform, name, type_, True, 2**30)


FOUND = [fake(0, 0, "Portable Computing Language", "pthread-cpu"), fake(1, 0, "AMD Accelerated Parallel Processing",
         "gfx1100", "gpu"), fake(1, 1, "AMD Accelerated Parallel Processing", "gfx90a", "gpu")]


def names(selected):
    return [d.name for d in selected]


def test_device_selection_syntax():
    assert names(context.select(None, FOUND)) == ["gfx1100", "gfx90a"]          # GPUs first by default
    assert names(context.select("", FOUND[:1])) == ["pthread-cpu"]                # else every device
    assert names(context.select("1:1", FOUND)) == ["gfx90a"]
    assert names(context.select("1", FOUND)) == ["gfx1100", "gfx90a"]
    assert names(context.select("portable, 1:1 ,1:1", FOUND)) == ["pthread-cpu", "gfx90a"]
    assert names(context.select("cpu", FOUND)) == ["pthread-cpu"]
    assert names(context.select("GFX1100", FOUND)) == ["gfx1100"]
    with pytest.raises(ValueError, match="selector '3:0' matches no OpenCL device"):
        context.select("3:0", FOUND)


@pytest.fixture
def fresh_selection(monkeypatch):
    """Device selection runs again (over whatever the test puts in place) and is restored after."""
    monkeypatch.setattr(context, "_selected", None)
    monkeypatch.setattr(context, "_error", "")
    monkeypatch.delenv(context.ENV_DEVICE, raising=False)
    monkeypatch.setattr(context, "Device", lambda info: SimpleNamespace(info=info, context=info.name))


def test_a_device_whose_compiler_fails_is_left_out_with_the_compilers_message(monkeypatch, fresh_selection):
    import pyopencl as cl

    class Program:              # the probe build as a driver that does not know the host CPU answers it
        def __init__(self, ctx, source):
            self.ctx = ctx

        def build(self, options=None):
            if self.ctx == "pthread-cpu":
                raise cl.RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pthread-cpu>:\n\n"
                                      "error: unknown target CPU 'generic'\nDevice pthread-cpu failed to build")
            return self

    monkeypatch.setattr(cl, "Program", Program)
    monkeypatch.setattr(context, "_all_devices", lambda: [replace(d) for d in FOUND[:1]])   # selection numbers them
    assert context.selected() == []
    assert context.selection_error() == ("Portable Computing Language / pthread-cpu cannot compile OpenCL kernels "
                                         "(error: unknown target CPU 'generic')")
    # a device that compiles is kept and numbered from 0, whatever failed beside it
    monkeypatch.setattr(context, "_selected", None)
    monkeypatch.setattr(context, "_all_devices", lambda: [replace(d) for d in FOUND[:2]])
    monkeypatch.setenv(context.ENV_DEVICE, "cpu,gpu")
    assert [(d.info.index, d.info.name) for d in context.selected()] == [(0, "gfx1100")]


def test_only_cpu_devices_make_the_backend_the_host_cpu(monkeypatch, fresh_selection):
    from ember_opencl.plugin import OpenCLBackend

    backend = OpenCLBackend()
    for found, host_cpu in (([], False), (FOUND[:1], True), (FOUND, False), (FOUND[1:], False)):
        monkeypatch.setattr(context, "_selected", [SimpleNamespace(info=info) for info in found])
        assert backend.is_host_cpu() is host_cpu, found


@needs_device
def test_devices_and_runtime_helpers():
    import ember_opencl

    devs = ember_opencl.devices()
    assert devs and devs[0].index == 0 and devs[0].selector
    assert any(d.selector == devs[0].selector for d in ember_opencl.devices(all=True))
    rt = ember_opencl.runtime
    assert rt.is_available() and rt.device_count() == len(devs)
    rec = [r for r in ember.backends.status() if r["name"] == "opencl"][0]
    assert rec["state"] == "available" and rec["devices"][0] == devs[0].describe()
    with pytest.raises(Exception, match="does not exist"):
        ember.zeros(2, device=f"opencl:{len(devs)}")


@needs_device
def test_memory_accounting():
    import gc

    gc.collect()            # earlier tests' tensors held in reference cycles (tracebacks) are freed now, not mid-test
    rt = ember_opencl_runtime()
    rt.synchronize()
    before = rt.memory_allocated()
    x = ember.empty(1000, dtype=ember.float32, device="opencl")        # 4000 bytes -> 4096 (512-byte blocks)
    assert rt.memory_allocated() == before + 4096
    assert rt.max_memory_allocated() >= before + 4096
    v = x[10:20]                                                        # a view allocates nothing
    assert rt.memory_allocated() == before + 4096
    del x
    assert rt.memory_allocated() == before + 4096                      # the view keeps the buffer alive
    del v
    assert rt.memory_allocated() == before
    y = ember.empty(1000, dtype=ember.float32, device="opencl")        # reuses the cached block
    reserved = rt.memory_reserved()
    del y
    assert rt.memory_reserved() == reserved
    assert "opencl:0 memory summary" in rt.memory_summary()


def ember_opencl_runtime():
    import ember_opencl

    return ember_opencl.runtime


@needs_device
def test_views_share_the_buffer_and_round_trip():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = ember.from_numpy(base).to("opencl")
    v = x.permute(2, 0, 1)[1:, :, ::2]
    assert v.storage_offset() == 1 and v.stride() == (1, 12, 8)
    np.testing.assert_array_equal(v.cpu().numpy(), base.transpose(2, 0, 1)[1:, :, ::2])
    v.fill_(-1.0)                                                        # writes through the view
    expect = base.copy()
    expect.transpose(2, 0, 1)[1:, :, ::2] = -1
    np.testing.assert_array_equal(x.cpu().numpy(), expect)
    x[:, 1:] = x[:, :-1].clone()
    expect[:, 1:] = expect[:, :-1].copy()
    np.testing.assert_array_equal(x.cpu().numpy(), expect)
    x[0, 1:] = x[0, :-1]                                                 # overlapping copy_
    expect[0, 1:] = expect[0, :-1].copy()
    np.testing.assert_array_equal(x.cpu().numpy(), expect)


@needs_device
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_rounding_is_bit_exact(dtype):
    import ml_dtypes

    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0x3F808000, 0x3F818000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x477FF000,
                         0x477FE000, 0x80000000, 0x7F7FFFFF], dtype=np.uint32)
    f = np.concatenate([bits, specials]).view(np.float32)
    target = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    with np.errstate(over="ignore", invalid="ignore"):
        expect = f.astype(target)
    got = ember.from_numpy(f).to("opencl").to(getattr(ember, dtype)).cpu().numpy()
    e, g = expect.view(np.uint16), got.view(np.uint16)
    nan = np.isnan(expect.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.array_equal(e[~nan], g[~nan])


def run_with_fallback(mode: str) -> subprocess.CompletedProcess:
    """nonzero on opencl with its kernel taken out, as a plugin lacking one would run it."""
    code = ("import warnings, ember\n"
            "from ember.dispatcher.operator import ALL_OPS, invalidate_caches\n"
            "from ember.dispatcher.plugins import REGISTRY\n"
            "warnings.simplefilter('always')\n"
            "x = ember.arange(5.0, device='opencl')\n"
            "del ALL_OPS['nonzero'].kernels[REGISTRY.load('opencl').key]\n"
            "invalidate_caches()\n"
            "for _ in range(2):\n"
            "    print(ember.nonzero(x).cpu().tolist())\n")
    env = dict(os.environ, EMBER_OPENCL_FALLBACK=mode)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@needs_device
def test_fallback_modes():
    warn = run_with_fallback("warn")
    assert warn.returncode == 0, warn.stderr
    assert warn.stdout.count("[[1], [2], [3], [4]]") == 2
    assert warn.stderr.count("nonzero: backend 'opencl' has no kernel for this op; running it on 'cpu'") == 1
    silent = run_with_fallback("silent")
    assert silent.returncode == 0 and "no kernel" not in silent.stderr and silent.stdout.count("[[1], [2], [3], [4]]") == 2
    error = run_with_fallback("error")
    assert error.returncode != 0 and "MissingKernelError" in error.stderr and "'nonzero'" in error.stderr


def test_every_primitive_op_has_a_native_opencl_kernel():
    """Zero cpu fallbacks for primitives: the plugin's own kernel table holds every one (no device
    needed), and docs/ops.md's coverage matrix, generated from that table, says so."""
    from ember.dispatcher import primitive_ops
    from ember_opencl.plugin import OpenCLBackend

    table = OpenCLBackend().kernels()
    prims = set(primitive_ops())
    assert len(prims) >= 46
    assert sorted(prims - set(table)) == []
    doc = (Path(__file__).parents[1] / "docs" / "ops.md").read_text()
    assert f"Primitive ops native on opencl: {len(prims)} of {len(prims)}." in doc
    for name in prims:
        assert re.search(rf"^\| `{re.escape(name)}` \| \w+ \| \w+ \| native \|$", doc, re.M), name


@needs_device
def test_no_primitive_op_resolves_to_the_fallback():
    """On the live device every primitive dispatches to an opencl kernel (coverage_matrix: native)."""
    from ember.dispatcher import primitive_ops
    from ember.dispatcher.coverage import coverage_matrix

    matrix = coverage_matrix(["opencl"])
    assert [n for n in primitive_ops() if matrix[n]["opencl"] != "native"] == []


@needs_device
def test_sort_long_rows_merge_passes_and_stability():
    """Rows longer than one local-memory segment (merge passes), many ties, NaN, -0.0, strided input."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.integers(-20, 20, (3, 4500)).astype(np.float32)
    x[:, ::9] = np.nan
    x[:, 1::13] = -0.0
    e = ember.from_numpy(x).to("opencl")
    for desc in (False, True):
        v, i = ember.sort(e, dim=-1, descending=desc, stable=True)
        tv, ti = torch.sort(torch.from_numpy(x), dim=-1, descending=desc, stable=True)
        np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())
        np.testing.assert_array_equal(v.cpu().numpy(), tv.numpy())
    v, i = ember.sort(e.t()[::2], dim=0, descending=True, stable=True)      # along a strided dim
    tv, ti = torch.sort(torch.from_numpy(x).t()[::2], dim=0, descending=True, stable=True)
    np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())
    assert np.signbit(v.cpu().numpy()).sum() == np.signbit(tv.numpy()).sum()     # -0.0 copied bit for bit


@needs_device
def test_nonzero_spans_many_chunks_in_row_major_order():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (4, 900, 3)).astype(np.float32) * (rng.random((4, 900, 3)) < 0.3)
    x[0, :5, 0] = np.nan
    e = ember.from_numpy(x).to("opencl").permute(2, 0, 1)[:, 1::2]
    got = ember.nonzero(e)
    assert got.dtype == ember.int64 and got.device.type == "opencl"
    np.testing.assert_array_equal(got.cpu().numpy(), torch.nonzero(torch.from_numpy(x).permute(2, 0, 1)[:, 1::2]).numpy())
    assert tuple(ember.nonzero(ember.zeros(3, 0, device="opencl")).shape) == (0, 2)
    assert tuple(ember.nonzero(ember.tensor(2.0, device="opencl")).shape) == (1, 0)


@needs_device
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_matches_cpu_within_the_documented_ulps(dtype):
    """normal_ on opencl: the cpu's Box-Muller on the same Philox uniforms; log/cos/sin differ by an
    ulp or two, bounded by ember.testing.tolerances.NORMAL_MATCH_ULPS (odd length: last sine dropped)."""
    from ember.testing.test_random import assert_normals_match

    for mean, std in ((0.0, 1.0), (-3.0, 10.0)):
        ember.manual_seed(5)
        dev = ember.empty(4001, dtype=getattr(ember, dtype), device="opencl").normal_(mean, std)
        ember.manual_seed(5)
        ref = ember.empty(4001, dtype=getattr(ember, dtype)).normal_(mean, std)
        assert_normals_match(dev.cpu().float().numpy(), ref.float().numpy(), mean, f"normal_ {dtype} opencl",
                             dtype=dtype)
