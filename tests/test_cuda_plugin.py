"""The ember-cuda plugin where CI runs it: installed, with or without cupy, without a GPU.

What needs no GPU is checked here: import ember stays free of cupy, the plugin reports
itself unavailable with the reason (cupy missing, or cupy's driver error), every way onto the
device raises BackendUnavailableError naming it, the runtime helpers have ember_opencl.runtime's
shape, the kernel table registers (every primitive op, no unknown op), the Philox source is
bit-identical to the reference, and the fused kernels' arithmetic is right (compiled on the
host, one thread per block). With a GPU the device tests at the end run instead of skipping;
`make gpu-check` runs them with the conformance suite.
"""
from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.errors import BackendUnavailableError
from test_conformance_cuda import REASON

pytest.importorskip("ember_cuda", reason="the ember-cuda plugin is not installed (pip install ./backends/cuda)")
import cuda_host_emulation as host  # noqa: E402
from ember_cuda import plugin as cuda_plugin  # noqa: E402
from ember_cuda import runtime  # noqa: E402

needs_gpu = pytest.mark.skipif(bool(REASON), reason=REASON or "cuda available")
no_gpu = pytest.mark.skipif(not REASON, reason="a CUDA device is available: the no-GPU paths do not apply")
needs_cxx = pytest.mark.skipif(host.CXX is None, reason="no C++ compiler (g++) to build the kernels on the host")


# ------------------------------------------------------------------------------- no GPU
def test_import_ember_imports_neither_cupy_nor_the_plugin():
    code = ("import sys, ember; assert 'cuda' in ember.dispatcher.plugins.REGISTRY.records; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupyx', 'ember_cuda')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_probe_without_cupy_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)          # `import cupy` raises ImportError
    count, reason = cuda_plugin.probe()
    assert count == 0
    assert reason.startswith("cupy is not installed: pip install ./backends/cuda[cuda12]")


def test_probe_reports_the_driver_error(monkeypatch):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed here")

    def no_driver():
        raise cupy.cuda.runtime.CUDARuntimeError(35)    # cudaErrorInsufficientDriver
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", no_driver)
    count, reason = cuda_plugin.probe()
    assert count == 0 and reason.startswith("no usable CUDA device: CUDARuntimeError: cudaErrorInsufficientDriver")


@no_gpu
def test_status_and_info_show_cuda_unavailable_with_the_reason(capsys):
    row = [r for r in ember.backends.status() if r["name"] == "cuda"][0]
    assert row["state"] == "unavailable" and row["reason"] and row["devices"] == []
    assert REASON.endswith(row["reason"])
    from ember.__main__ import main

    assert main(["info"]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("cuda ")][0]
    assert "unavailable" in line and row["reason"] in line


@no_gpu
@pytest.mark.parametrize("how", ["to", "cuda", "factory", "indexed", "module"])
def test_moving_to_cuda_raises_naming_the_reason(how):
    row = [r for r in ember.backends.status() if r["name"] == "cuda"][0]
    x = ember.ones(2)
    attempts = {"to": lambda: x.to("cuda"), "cuda": lambda: x.cuda(), "factory": lambda: ember.zeros(2, device="cuda"),
                "indexed": lambda: ember.empty(1, device="cuda:1"),
                "module": lambda: ember.nn.Linear(2, 2).to("cuda")}
    with pytest.raises(BackendUnavailableError) as info:
        attempts[how]()
    msg = str(info.value)
    assert "cuda" in msg and "unavailable" in msg and row["reason"] in msg
    assert isinstance(info.value, RuntimeError)


@no_gpu
def test_runtime_helpers_without_a_gpu():
    assert runtime.is_available() is False and runtime.device_count() == 0
    assert runtime.unavailable_reason().startswith("unavailable: ")
    ember.cuda.manual_seed(5)                    # seeding never needs the device (as in torch)
    ember.cuda.manual_seed_all(5)
    assert ember.frontend.random.default_generator("cuda").initial_seed() == 5
    for call in (runtime.memory_allocated, runtime.synchronize, runtime.current_device, runtime.memory_summary,
                 runtime.Stream, runtime.Event, runtime.empty_cache, lambda: runtime.set_device(0),
                 runtime.mem_get_info, runtime.get_device_capability):
        with pytest.raises(BackendUnavailableError, match="cuda is unavailable: "):
            call()


@no_gpu
def test_from_dlpack_of_a_cuda_producer_names_the_missing_backend():
    class FakeCudaArray:
        def __dlpack_device__(self):
            return (2, 0)                        # kDLCUDA

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be consumed")
    with pytest.raises(TypeError, match="no installed backend accepts DLPack device type 2"):
        ember.from_dlpack(FakeCudaArray())


def test_runtime_has_the_helpers_ember_cuda_delegates_to():
    names = ["is_available", "device_count", "current_device", "set_device", "synchronize", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
             "memory_summary", "empty_cache", "Stream", "Event", "memory_reserved", "max_memory_reserved",
             "memory_stats", "get_device_name", "current_stream", "stream", "get_device_capability",
             "mem_get_info", "is_bf16_supported"]
    missing = [n for n in names if not callable(getattr(runtime, n, None))]
    assert not missing
    ocl = pytest.importorskip("ember_opencl.runtime")
    shared = [n for n in dir(ocl) if not n.startswith("_") and callable(getattr(ocl, n)) and n != "annotations"]
    assert [n for n in shared if not hasattr(runtime, n)] == []


def test_kernel_table_registers_every_primitive():
    pytest.importorskip("cupy", reason="building the kernel table needs cupy (not a GPU)")
    from ember.dispatcher import ALL_OPS, primitive_ops
    from ember_cuda.kernels import make_kernels

    class OneDevice:
        def device_count(self):
            return 1
    kernels = make_kernels(OneDevice())
    assert set(kernels) <= set(ALL_OPS)
    assert set(primitive_ops()) <= set(kernels)
    from ember_cuda.kernels import fused

    for op in ("softmax.int", "log_softmax.int", "native_layer_norm", "cross_entropy_loss"):
        assert kernels[op].__module__ == fused.__name__
    assert set(make_kernels(OneDevice(), fused=False)) == set(kernels)


def test_the_cupy_namespace_has_what_the_kernel_library_calls():
    """Every `xp.NAME` of the shared library exists on cupy's namespace (errstate: checked for)."""
    pytest.importorskip("cupy", reason="needs cupy (not a GPU)")
    import re
    from pathlib import Path

    import ember_cpu.array_kernels as lib
    from ember_cuda.xp import namespace

    used = set()
    for f in Path(lib.__file__).parent.glob("*.py"):
        used |= set(re.findall(r"\bxp\.([A-Za-z_]\w*)", f.read_text()))
    # and the array functions the table's families name (looked up on xp when the table is bound)
    used |= {e.array_function for e in lib.KERNEL_TABLE.values() if isinstance(e, lib.context.Family)}
    ns = namespace()
    assert len(used) > 80
    assert sorted(n for n in used if not hasattr(ns, n)) == ["errstate"]
    assert hasattr(ns.add, "at") and ns.philox_blocks is not None


def test_view_kernels_give_the_cpu_layouts_on_cupy_arrays():
    """View kernels only build array metadata, which cupy does without a GPU: same layouts as cpu."""
    cupy = pytest.importorskip("cupy", reason="needs cupy (not a GPU)")
    from ember.dispatcher.plugins import REGISTRY
    from ember_cpu.array_kernels import make_kernels as shared
    from ember_cuda.kernels import make_kernels

    class OneDevice:
        def device_count(self):
            return 1
    from ember.core.numpy_interop import to_numpy_dtype

    gpu, cpu = make_kernels(OneDevice()), shared(np, to_numpy_dtype)
    cpu_backend = REGISTRY.load("cpu").backend
    mem = cupy.cuda.memory.UnownedMemory(1 << 20, 96, None, 0)          # never dereferenced
    roots = (np.arange(24, dtype=np.float32).reshape(4, 6),
             cupy.ndarray((4, 6), np.float32, memptr=cupy.cuda.MemoryPointer(mem, 0)))
    f32 = ember.float32

    def layout(a, offset_of):
        return tuple(a.shape), tuple(s // a.itemsize for s in a.strides), offset_of(a)
    cases = [
        ("as_strided", lambda r: r, (((2, 3), f32, (6, 2), 1),), ()),
        ("expand", lambda r: r[1:2], (((3, 6), f32, (0, 1), 6),), ((3, 6),)),
        ("view", lambda r: r, (((2, 12), f32, (12, 1), 0),), ((2, 12),)),
        ("view", lambda r: r.T, (((6, 2, 2), f32, (1, 12, 6), 0),), ((6, 2, 2),)),
        ("slice.Tensor", lambda r: r, (((4, 2), f32, (6, 2), 2),), (1, 2, 5, 2)),
        ("slice.Tensor", lambda r: r[1:], (((3, 0), f32, (6, 1), 9),), (1, 3, 3, 1)),
        ("select.int", lambda r: r, (((6,), f32, (1,), 12),), (0, 2)),
        ("permute", lambda r: r[:, 1:], (((5, 4), f32, (1, 6), 1),), ((1, 0),)),
        ("transpose.int", lambda r: r, (((6, 4), f32, (1, 6), 0),), (0, 1)),
        ("unsqueeze", lambda r: r[2], (((1, 6), f32, (6, 1), 12),), (0,)),
        ("squeeze.dims", lambda r: r[2:3], (((6,), f32, (1,), 12),), ((0,),)),
    ]
    for op, pick, (spec,), args in cases:
        want = layout(cpu[op](spec, pick(roots[0]), *args), cpu_backend.storage_offset)
        got = layout(gpu[op](spec, pick(roots[1]), *args), lambda a: cuda_plugin.CUDABackend.storage_offset(None, a))
        assert got == want, (op, spec)
        if op in ("as_strided", "expand", "slice.Tensor"):
            assert want == (spec[0], spec[2], spec[3]), (op, spec)


def test_counting_allocator_counts_until_the_last_view_is_gone():
    cupy = pytest.importorskip("cupy", reason="needs cupy (not a GPU)")
    import gc

    from ember_cuda.memory import CountingAllocator

    class FakePool:                      # cupy's pool rounds to 512 bytes; pointers never dereferenced
        def malloc(self, n):
            size = -(-n // 512) * 512
            return cupy.cuda.MemoryPointer(cupy.cuda.memory.UnownedMemory(1 << 20, size, None, 0), 0)
    alloc = CountingAllocator(FakePool())
    st = alloc.device_stats(0)
    p = alloc(1000)
    q = alloc(3000)
    assert (st.allocated, st.peak, st.num_allocs) == (1024 + 3072, 4096, 2)
    a = cupy.ndarray((250,), np.float32, memptr=p)
    view = a[10:20]
    del p, a
    gc.collect()
    assert st.allocated == 4096                      # the view keeps the block
    del view, q
    gc.collect()
    assert (st.allocated, st.peak) == (0, 4096)


# -------------------------------------------------------------------- kernel sources on the host
@needs_cxx
def test_philox_source_matches_the_reference():
    from ember_cpu.array_kernels import philox
    from ember_cuda.kernels import philox_cuda

    lib = host.build("#define EMBER_DEVICE static inline\n" + philox_cuda.BLOCK_FUNCTION + r"""
extern "C" void blocks(unsigned long long seed, unsigned long long base, unsigned long long n, unsigned int* out) {
    for (unsigned long long i = 0; i < n; ++i) ember_philox_block(seed, base + i, out + 4 * i);
}
""")
    zero = np.empty(4, np.uint32)
    lib.blocks(ctypes.c_ulonglong(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(1), host.ptr(zero))
    assert [f"{w:08x}" for w in zero] == ["6627e8d5", "e169c58d", "bc57ac4c", "9b00dbd8"]   # Random123 KAT
    for seed, offset, n in [(0, 0, 64), (1234, 40, 37), (-7, 2**34 * 4, 21), (2**64 - 1, (2**64 - 3) * 4, 24)]:
        want, _ = philox.random_bits(np, seed, offset, n)
        nblocks = -(-n // 4)
        got = np.empty(4 * nblocks, np.uint32)
        lib.blocks(ctypes.c_ulonglong(seed % 2**64), ctypes.c_ulonglong(offset // 4), ctypes.c_ulonglong(nblocks),
                   host.ptr(got))
        np.testing.assert_array_equal(got[:n], want)


def test_philox_random_bits_uses_the_array_module_fused_blocks():
    from ember_cpu.array_kernels import philox

    calls = []

    class Namespace:            # numpy plus a fused block function, as ember_cuda.xp provides
        def __getattr__(self, name):
            return getattr(np, name)

        def philox_blocks(self, seed, base, nblocks):
            calls.append((seed, base, nblocks))
            c = np.arange(nblocks, dtype=np.uint64) + np.uint64(base)
            counters = np.stack([(c & np.uint64(0xFFFFFFFF)).astype(np.uint32), (c >> np.uint64(32)).astype(np.uint32),
                                 np.zeros(nblocks, np.uint32), np.zeros(nblocks, np.uint32)], axis=1)
            return philox.philox4x32_10(np, philox.stream_key(seed), counters).reshape(-1)
    got, off = philox.uniform(Namespace(), -3, 8, (3, 3), "float32")
    want, want_off = philox.uniform(np, -3, 8, (3, 3), "float32")
    assert calls == [(2**64 - 3, 2, 3)] and off == want_off == 20
    np.testing.assert_array_equal(got, want)


def _softmax_ref(x, log):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True)) if log else np.exp(s) / np.exp(s).sum(-1, keepdims=True)


# threads per block: 1 (no tree reduction), fewer than a row's elements, more (idle threads)
THREADS = (1, 4, 32)


@needs_cxx
@pytest.mark.parametrize("ctype,dtype", [("float", np.float32), ("double", np.float64)])
def test_fused_softmax_and_layer_norm_arithmetic(ctype, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 7)) * 4).astype(dtype)
    x[2, 3] = 60                                   # a dominant logit: the max shift matters
    lib = host.fused_library()
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    for log in (0, 1):
        for threads in THREADS:
            y = np.empty_like(x)
            getattr(lib, f"run_softmax_{ctype}")(ctypes.c_longlong(5), ctypes.c_int(threads), host.ptr(x), host.ptr(y), ctypes.c_longlong(7),
                   ctypes.c_int(log))
            np.testing.assert_allclose(y, _softmax_ref(x.astype(np.float64), log), **tol)

    x = (rng.standard_normal((4, 6)) + 1000).astype(dtype)     # a large mean: the two-pass variance matters
    w, b = rng.standard_normal(6).astype(dtype), rng.standard_normal(6).astype(dtype)
    ceps = ctypes.c_float(1e-5) if dtype == np.float32 else ctypes.c_double(1e-5)
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    for (hw, hb), threads in zip(((1, 1), (0, 0), (1, 0)), THREADS):
        y, m, r = np.empty_like(x), np.empty(4, dtype), np.empty(4, dtype)
        getattr(lib, f"run_layer_norm_{ctype}")(ctypes.c_longlong(4), ctypes.c_int(threads), host.ptr(x), host.ptr(w), host.ptr(b), host.ptr(y), host.ptr(m), host.ptr(r),
               ctypes.c_longlong(6), ceps, ctypes.c_int(hw), ctypes.c_int(hb))
        want = (x64 - mean) * rstd * (w if hw else 1) + (b if hb else 0)
        lt = dict(rtol=1e-3, atol=1e-3) if dtype == np.float32 else tol       # float32 inputs near 1000
        np.testing.assert_allclose(y, want, **lt)
        np.testing.assert_allclose(m, mean[:, 0], rtol=1e-6)
        np.testing.assert_allclose(r, rstd[:, 0], rtol=1e-3 if dtype == np.float32 else 1e-9)


@needs_cxx
def test_fused_cross_entropy_arithmetic():
    lib = host.fused_library()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5)) * 3
    t = np.array([0, 4, -100, 2, 7, 1], np.int64)          # an ignored row and an out-of-range target
    w = rng.random(5) + 0.5
    for hw, threads in ((0, 1), (1, 4), (1, 32)):
        loss, ws, bad = np.empty(6), np.empty(6), np.zeros(6, np.int32)
        lib.run_cross_entropy_double(ctypes.c_longlong(6), ctypes.c_int(threads), host.ptr(x), host.ptr(t), host.ptr(w), host.ptr(loss), host.ptr(ws), host.ptr(bad),
               ctypes.c_longlong(5), ctypes.c_longlong(-100), ctypes.c_int(hw))
        logp = _softmax_ref(x, 1)
        for i, ti in enumerate(t):
            if ti == -100 or ti >= 5:
                assert loss[i] == 0 and ws[i] == 0
            else:
                wi = w[ti] if hw else 1.0
                assert ws[i] == wi
                np.testing.assert_allclose(loss[i], -logp[i, ti] * wi, rtol=1e-12)
        assert bad.tolist() == [0, 0, 0, 0, 1, 0]


@needs_cxx
def test_fused_kernels_python_side_matches_the_shared_kernels(monkeypatch):
    """fused.py's kernels' Python side (dim moves, dtype rounds, fallbacks, reductions, errors) with
    xp=numpy and the kernels run on the host: their results equal the shared kernels' they replace."""
    from ember.errors import DimensionError
    from ember.core.numpy_interop import to_numpy_dtype
    from ember_cpu.array_kernels import make_kernels as shared_kernels
    from ember_cpu.array_kernels.context import bind
    from ember_cuda.kernels import CudaArrayModule, fused

    monkeypatch.setattr(fused, "_kernel", host.launcher(host.fused_library()))
    shared = shared_kernels(np, to_numpy_dtype)
    mine = bind(fused.KERNELS, CudaArrayModule(np, to_numpy_dtype, shared))
    rng = np.random.default_rng(2)
    f16, f32, f64 = ember.float16, ember.float32, ember.float64

    def same(op, spec, *args, rtol=1e-6):
        got, want = mine[op](spec, *args), shared[op](spec, *args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.shape == w.shape and g.dtype == w.dtype, (op, g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol, err_msg=op)

    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for op in ("softmax.int", "log_softmax.int"):
        for dim in (0, 1, -1):
            same(op, ((3, 4, 5), f32), x, dim)
        same(op, ((3, 4, 5), f64), x, 1, f64)                                    # dtype= upcasts first
        same(op, ((3, 4, 5), f16), x.astype(np.float16), 2, rtol=1e-3)           # float16 via float32
        same(op, ((), f32), np.float32(3.0).reshape(()), 0)                       # 0-d: the shared kernel
    w, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    specs = (((3, 4, 5), f32), ((3, 1, 1), f32), ((3, 1, 1), f32))
    for wb in ((w, b), (None, None), (w, None)):
        same("native_layer_norm", specs, x, [4, 5], *wb, 1e-5, rtol=1e-5)
    same("native_layer_norm", (((3, 4, 5), f16), ((3, 4, 1), f32), ((3, 4, 1), f32)), x.astype(np.float16), [5],
         None, None, 1e-5, rtol=1e-3)
    logits = rng.standard_normal((6, 5)) * 3
    target = np.array([0, 4, -100, 2, 3, 1])
    weight = rng.random(5) + 0.5
    for red, shape in ((0, (6,)), (1, ()), (2, ())):
        for wt in (None, weight):
            same("cross_entropy_loss", (shape, f64), logits, target, wt, red, -100, 0.0, rtol=1e-12)
        same("cross_entropy_loss", (shape, f64), logits, target, None, red, -100, 0.1, rtol=1e-12)   # shared path
    probs = rng.random((6, 5))
    same("cross_entropy_loss", ((), f64), logits, probs, None, 1, -100, 0.0, rtol=1e-12)          # shared path
    bad = np.array([0, 4, 9, 2, 3, 1])
    with pytest.raises(DimensionError, match="Target 9 is out of bounds"):
        mine["cross_entropy_loss"](((), f64), logits, bad, None, 1, -100, 0.0)


# ---------------------------------------------------------------------------- with a GPU
@needs_gpu
def test_gpu_runtime_memory_streams_and_events():
    runtime.synchronize()
    before = runtime.memory_allocated()
    x = ember.empty(1000, dtype=ember.float32, device="cuda")           # 4000 bytes -> 4096 (512-byte rounding)
    assert runtime.memory_allocated() == before + 4096
    assert runtime.max_memory_allocated() >= before + 4096
    v = x[10:20]
    del x
    assert runtime.memory_allocated() == before + 4096                  # the view keeps the block
    del v
    assert runtime.memory_allocated() == before
    runtime.reset_peak_memory_stats()
    assert runtime.max_memory_allocated() == before
    assert "cuda:0 memory summary" in runtime.memory_summary()
    s, e0, e1 = runtime.Stream(), runtime.Event(enable_timing=True), runtime.Event(enable_timing=True)
    with s:
        e0.record(s)
        y = ember.ones(256, 256, device="cuda") @ ember.ones(256, 256, device="cuda")
        e1.record(s)
    e1.synchronize()
    assert e0.elapsed_time(e1) >= 0 and s.query()
    assert float(y.sum().item()) == 256.0 ** 3
    assert runtime.current_device() == 0 and runtime.device_count() >= 1
    free, total = runtime.mem_get_info()
    assert 0 < free <= total and runtime.get_device_capability()[0] >= 3
    assert runtime.is_bf16_supported() is False


@needs_gpu
def test_gpu_random_matches_cpu_bit_for_bit():
    for dtype in (ember.float32, ember.float64, ember.float16):
        ember.manual_seed(11)
        a = ember.empty(1001, dtype=dtype).uniform_()
        ember.manual_seed(11)
        b = ember.empty(1001, dtype=dtype, device="cuda").uniform_()
        np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())
    ember.manual_seed(3)
    a = ember.randint(-5, 1000, (513,))
    ember.manual_seed(3)
    b = ember.randint(-5, 1000, (513,), device="cuda")
    np.testing.assert_array_equal(a.numpy(), b.cpu().numpy())


@needs_gpu
def test_gpu_dlpack_shares_memory_with_cupy_and_torch():
    import cupy

    c = cupy.arange(6, dtype=cupy.float32)
    t = ember.from_dlpack(c)
    assert t.device == ember.device("cuda", 0) and t.dtype == ember.float32
    c[0] = 42
    assert float(t[0].item()) == 42.0                       # no copy
    back = cupy.from_dlpack(t)
    back[1] = -1
    assert float(t[1].item()) == -1.0
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        tt = torch.from_dlpack(t)
        tt[2] = 7
        assert float(t[2].item()) == 7.0


@needs_gpu
def test_gpu_bfloat16_is_refused_clearly():
    with pytest.raises(TypeError, match="cuda backend does not support bfloat16"):
        ember.zeros(2, dtype=ember.bfloat16, device="cuda")
