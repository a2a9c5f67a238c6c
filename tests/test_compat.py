"""The PyTorch-compatibility surface programs touch, against torch (a CPU-only build here).

ember.cuda without a cuda plugin behaves as torch.cuda without CUDA; with a (fake, registered
in code) cuda plugin it asks that plugin. ember.opencl delegates to the real opencl plugin
(PoCL) when it is installed. Also ember.accelerator, ember.backends.cuda/cudnn/mps flags,
float32 matmul precision, ember.compile's arguments and the torch.long-style dtype aliases.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ember
from ember._device_module import module_for
from ember.dispatcher import Backend, hookimpl
from ember.dispatcher.plugins import REGISTRY
from ember.errors import BackendUnavailableError

OPENCL = ember.opencl.is_available()
# these tests stand in a fake cuda plugin, or check the behaviour without one
@pytest.fixture
def without_cuda_plugin(monkeypatch):
    """Hide an installed ember-cuda plugin (CI installs it, without a GPU) for the test's duration."""
    monkeypatch.delitem(REGISTRY.records, "cuda", raising=False)
    loaded = REGISTRY.pm.get_plugin("ember-backend-cuda")     # its pluggy registration, if loaded
    if loaded is not None:
        REGISTRY.pm.unregister(name="ember-backend-cuda")
    yield
    if loaded is not None and REGISTRY.pm.get_plugin("ember-backend-cuda") is None:
        REGISTRY.pm.register(loaded, name="ember-backend-cuda")


NO_CUDA_PLUGIN = pytest.mark.usefixtures("without_cuda_plugin")


# -- ember.cuda without a plugin: torch.cuda in a CPU-only torch -----------------------------------
ZERO_OR_EMPTY = ["is_available", "device_count", "is_initialized", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "max_memory_reserved", "memory_stats", "empty_cache", "is_bf16_supported"]
NEED_DEVICE = ["current_device", "synchronize", "get_device_name", "init", "initial_seed"]


@NO_CUDA_PLUGIN
def test_cuda_without_plugin_like_cpu_only_torch():
    assert not torch.cuda.is_available()          # the oracle is a CPU-only build
    for name in ZERO_OR_EMPTY:
        got, want = getattr(ember.cuda, name)(), getattr(torch.cuda, name)()
        assert got == want and type(got) is type(want) or (name == "memory_stats" and got == dict(want)), name
    for seeding in ("manual_seed", "manual_seed_all"):
        assert getattr(ember.cuda, seeding)(3) is None and getattr(torch.cuda, seeding)(3) is None
    for name in NEED_DEVICE:
        with pytest.raises(AssertionError):
            getattr(torch.cuda, name)()
        with pytest.raises(BackendUnavailableError, match=rf"ember\.cuda\.{name}\(\): device type 'cuda' is not "
                                                          r"available: no installed backend plugin provides it"):
            getattr(ember.cuda, name)()


class _FakeCudaBackend(Backend):
    """A stand-in for the future ember-cuda plugin: two devices, statistics, no runtime module."""

    device_type = "cuda"
    multi_device = True

    def __init__(self) -> None:
        self.synced: list = []

    def device_count(self) -> int:
        return 2

    def device_description(self, index: int = 0) -> str:
        return f"Fake GPU {index}"

    def synchronize(self, device_index=None) -> None:
        self.synced.append(device_index)

    def memory_stats(self, device_index=None) -> dict:
        return {"allocated_bytes": 100 + device_index, "peak_bytes": 200, "reserved_bytes": 300,
                "peak_reserved_bytes": 400}


class _Unavailable(Backend):
    device_type = "fakeoff"

    def is_available(self) -> bool:
        return False

    def unavailable_reason(self) -> str:
        return "no fake device attached"


class _Plugin:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @hookimpl
    def ember_backend(self):
        return self.backend


class _HostCpuBackend(Backend):
    """An OpenCL-for-CPUs style plugin (PoCL): available, but its device is the host's processor."""

    device_type = "hostcl"

    def is_host_cpu(self) -> bool:
        return True


class _FakeGpuBackend(Backend):
    device_type = "fakegpu"


@pytest.fixture
def registered():
    """Register plugins in code for one test, then forget them (and the device modules' selection)."""
    names = []

    def register(backend: Backend) -> Backend:
        assert backend.device_type not in REGISTRY.records
        ember.backends.register(backend.device_type, _Plugin(backend))
        names.append(backend.device_type)
        return backend

    yield register
    for name in names:
        del REGISTRY.records[name]
        REGISTRY.pm.unregister(name=f"ember-backend-{name}")
        module_for(name)._current = 0


@NO_CUDA_PLUGIN
def test_cuda_delegates_to_a_cuda_plugin(registered):
    backend = registered(_FakeCudaBackend())
    assert ember.cuda.is_available() and ember.cuda.device_count() == 2 and ember.backends.cuda.is_built()
    assert ember.cuda.get_device_name(1) == "Fake GPU 1" and ember.cuda.get_device_name("cuda:0") == "Fake GPU 0"
    ember.cuda.synchronize()
    ember.cuda.set_device(1)
    assert ember.cuda.current_device() == 1
    ember.cuda.synchronize()
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0 and ember.cuda.memory_allocated() == 100
    assert backend.synced == [0, 1] and ember.cuda.current_device() == 1
    assert (ember.cuda.memory_allocated(), ember.cuda.max_memory_allocated(), ember.cuda.memory_reserved(),
            ember.cuda.max_memory_reserved()) == (101, 200, 300, 400)
    assert "cuda:1 memory summary (Fake GPU 1)" in ember.cuda.memory_summary()
    with pytest.raises(NotImplementedError, match="reset_peak_memory_stats"):
        ember.cuda.reset_peak_memory_stats()
    with pytest.raises(ValueError, match=r"ember\.cuda\.set_device\(\): invalid device index 2: cuda has 2"):
        ember.cuda.set_device(2)
    with pytest.raises(ValueError, match="expected a cuda device, got 'cpu'"):
        ember.cuda.synchronize("cpu")
    # the accelerator is the cuda plugin now, ahead of opencl
    assert ember.accelerator.current_accelerator() == ember.device("cuda") and ember.accelerator.device_count() == 2
    # and AMP sees the device: GradScaler() and autocast("cuda") are enabled, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.amp.GradScaler().is_enabled() and ember.amp.autocast("cuda")._enabled


@NO_CUDA_PLUGIN
def test_the_accelerator_is_never_the_host_cpu_again(registered, monkeypatch):
    for name in [n for n in REGISTRY.records if n not in ("cpu", "meta")]:   # opencl (PoCL: a host cpu too), and
        monkeypatch.delitem(REGISTRY.records, name)                          # test devices other tests registered
    registered(_HostCpuBackend())
    assert module_for("hostcl").is_available()
    assert ember.accelerator.current_accelerator() is None and not ember.accelerator.is_available()
    assert ember.accelerator.device_count() == 0
    registered(_FakeGpuBackend())
    assert ember.accelerator.current_accelerator() == ember.device("fakegpu") and ember.accelerator.is_available()


def test_installed_but_unavailable_plugin_gives_its_reason(registered):
    registered(_Unavailable())
    mod = module_for("fakeoff")
    assert not mod.is_available() and mod.device_count() == 0 and mod.memory_allocated() == 0
    with pytest.raises(BackendUnavailableError, match=r"ember\.fakeoff\.synchronize\(\): device type 'fakeoff' is "
                                                      r"not available: backend plugin 'fakeoff' is unavailable: "
                                                      "no fake device attached"):
        mod.synchronize()


# -- ember.opencl over the real plugin ----------------------------------------------------------------
@pytest.mark.skipif(not OPENCL, reason="the opencl plugin (PoCL) is not installed or has no device")
def test_opencl_delegates_to_the_plugin_runtime():
    from ember_opencl import runtime

    assert ember.opencl.device_count() == runtime.device_count() >= 1
    assert ember.opencl.get_device_name() == runtime.get_device_name(0)
    ember.opencl.synchronize()
    before = ember.opencl.memory_allocated()
    x = ember.ones(4096, device="opencl")
    ember.opencl.synchronize()
    during = ember.opencl.memory_allocated()
    assert during == runtime.memory_allocated() >= before + 4096 * 4
    assert ember.opencl.max_memory_allocated() >= during
    assert ember.opencl.memory_stats() == runtime.memory_stats()
    del x
    ember.opencl.reset_peak_memory_stats()
    assert ember.opencl.max_memory_allocated() == ember.opencl.memory_allocated() == before
    ember.opencl.empty_cache()
    assert ember.opencl.memory_reserved() == runtime.memory_reserved()
    assert ember.opencl.memory_summary().startswith("opencl:0 memory summary")
    if REGISTRY.records["opencl"].backend.is_host_cpu():    # PoCL, say: never the accelerator
        assert ember.accelerator.current_accelerator() != ember.device("opencl")
    else:
        assert ember.accelerator.current_accelerator() == ember.device("opencl") and ember.accelerator.is_available()
        assert ember.accelerator.device_count() == ember.opencl.device_count()
        assert ember.accelerator.current_device_index() == 0


def test_opencl_unavailable_like_cuda(monkeypatch):
    for name in [n for n in REGISTRY.records if n not in ("cpu", "meta")]:   # opencl, and test devices
        monkeypatch.delitem(REGISTRY.records, name)                          # other tests registered
    assert not ember.opencl.is_available() and ember.opencl.device_count() == 0
    assert ember.opencl.memory_allocated() == 0 and ember.opencl.memory_stats() == {}
    ember.opencl.empty_cache()
    with pytest.raises(BackendUnavailableError, match=r"ember\.opencl\.memory_summary\(\).*ember-opencl plugin"):
        ember.opencl.memory_summary()
    # no accelerator at all: as torch's on a CPU-only machine
    assert ember.accelerator.current_accelerator() is None is torch.accelerator.current_accelerator()
    assert ember.accelerator.device_count() == 0 == torch.accelerator.device_count()
    assert not ember.accelerator.is_available() and not torch.accelerator.is_available()
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            m.accelerator.current_device_index()


def test_importing_ember_and_querying_cuda_loads_no_opencl():
    code = ("import sys, ember; ember.cuda.is_available(); ember.cuda.memory_allocated(); "
            "ember.backends.cuda.matmul.allow_tf32; ember.compile(len); "
            "print(sorted(m for m in ('pyopencl', 'ember_opencl.plugin') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- flags, precision, compile, dtypes ---------------------------------------------------------------
def test_backend_flags_like_torch():
    for flag in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(ember.backends.cuda.matmul, flag) is getattr(torch.backends.cuda.matmul, flag), flag
    for flag in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(ember.backends.cudnn, flag) is getattr(torch.backends.cudnn, flag), flag
    for q in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled"):
        assert getattr(ember.backends.cuda, q)() is getattr(torch.backends.cuda, q)(), q
    assert ember.backends.cudnn.is_available() is torch.backends.cudnn.is_available() is False
    assert ember.backends.mps.is_available() is torch.backends.mps.is_available() is False
    for m in (ember, torch):
        with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
            m.backends.cuda.matmul.allow_tf33 = True
    ember.backends.cudnn.benchmark = True          # settable, as programs do
    try:
        assert ember.backends.cudnn.benchmark is True
    finally:
        ember.backends.cudnn.benchmark = False
    assert ember.backends.status()[0]["name"] == "cpu"        # the package's own API is still there


def test_float32_matmul_precision_like_torch():
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        ember.set_float32_matmul_precision("high")
        assert ember.get_float32_matmul_precision() == "high" and ember.backends.cuda.matmul.allow_tf32
        ember.backends.cuda.matmul.allow_tf32 = False
        assert ember.get_float32_matmul_precision() == "highest"
        with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
            ember.set_float32_matmul_precision("foo")
        assert ember.get_float32_matmul_precision() == "highest"
    finally:
        ember.set_float32_matmul_precision("highest")


def test_compile_checks_its_arguments_as_torch_does():
    def f(x):
        return x * 2

    model = ember.nn.Linear(2, 2)
    assert ember.compile(f).__wrapped__ is f and ember.compile(model)._orig_mod is model
    assert ember.compile(mode="max-autotune", fullgraph=True)(f).__wrapped__ is f
    assert ember.compile(f, dynamic=True, backend="inductor", options={"trace.enabled": False}).__wrapped__ is f

    @ember.compile
    def g(x):
        return x + 1

    @ember.compile(mode="reduce-overhead")
    def h(x):
        return x + 1

    assert g(1) == h(1) == 2
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
            m.compile(f, mode="fast")
        with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
            m.compile(f, mode="default", options={})
    import inspect

    assert list(inspect.signature(ember.compile).parameters) == list(inspect.signature(torch.compile).parameters)


def test_dtype_aliases_like_torch():
    for alias in ("long", "int", "short", "float", "double", "half"):
        assert str(getattr(ember, alias)).split(".")[-1] == str(getattr(torch, alias)).split(".")[-1], alias
    for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        assert getattr(ember, name) is ember.core.dtype.dtype_from_name(name)


def test_cpu_module_like_torch():
    for fn in ("is_available", "device_count", "current_device"):
        assert getattr(ember.cpu, fn)() == getattr(torch.cpu, fn)(), fn
    assert ember.cpu.synchronize() is None


@pytest.mark.parametrize("a, b", [((0, 3), (2, 3, 4)), ((2, 3, 0), (2, 0, 4)), ((1, 0, 3), (2, 3, 5)),
                                  ((2, 1, 4, 0), (3, 0, 2))])
def test_matmul_with_an_empty_dimension_and_a_broadcast_batch_gives_torchs_shape(a, b):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)
    got, want = ember.matmul(ember.tensor(x), ember.tensor(y)), torch.matmul(torch.tensor(x), torch.tensor(y))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_scatter_on_a_backend_without_its_kernel_names_the_op_as_the_cpu_does():
    """The decomposition's bounds error (used where a backend has no scatter kernel) reads as the cpu's."""
    from ember.decompositions.indexing import scatter_src

    with pytest.raises(Exception) as on_cpu:
        ember.zeros(3).scatter(0, ember.tensor([5]), ember.ones(1))
    with pytest.raises(type(on_cpu.value)) as decomposed:
        scatter_src(ember.zeros(3), 0, ember.tensor([5]), ember.ones(1))
    assert str(decomposed.value) == str(on_cpu.value)
