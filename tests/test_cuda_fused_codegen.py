"""The cuda backend's fused-kernel generator (ember_cuda.fusion), run without a GPU.

The generated CUDA C is compiled on the host by g++ with host definitions of the CUDA built-ins
(tests/cuda_host_emulation.py) and launched over numpy arrays with the arguments the real launcher
builds (`elementwise_arguments`, `rowwise_arguments`), block by block and thread by thread. Plugged in as
the cpu's generator for the test, it runs every fused kernel of compiled programs (a GPT's forward: layer
norms and softmaxes row-wise, the tanh GELU; an MLP's training step), whose results must be eager's.
With a GPU (`make gpu-check`), the last tests run compiled programs on cuda through cupy.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import ember
from cuda_host_emulation import CXX, PRELUDE, build
from test_compiler_step import eager_and_compiled, make_step



def _wrapper(params: list[tuple[str, str]], name: str) -> str:
    """A host function running kernel `name` over a grid: `ember_run(args, blocks, threads)`, args[i] the
    address of the i-th argument's value (a pointer parameter's: the data itself)."""
    args = ", ".join(f"({ctype})a[{i}]" if ctype.endswith("*") else f"*({ctype}*)a[{i}]"
                     for i, (ctype, _) in enumerate(params))
    return f"""
extern "C" void ember_run(void** a, long long blocks, int threads) {{
    blockDim.x = (unsigned)threads;
    for (long long b = 0; b < blocks; ++b) {{
        blockIdx.x = (unsigned)b;
        for (int t = 0; t < threads; ++t) {{ threadIdx.x = (unsigned)t; {name}({args}); }}
    }}
}}
"""


def _call(lib, args: list, blocks: int, threads: int) -> None:
    keep, addresses = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            addresses.append(a.ctypes.data)
            continue
        c = {np.int64: ctypes.c_longlong, np.float32: ctypes.c_float, np.float64: ctypes.c_double}[type(a)](a)
        keep.append(c)
        addresses.append(ctypes.addressof(c))
    lib.ember_run((ctypes.c_void_p * len(addresses))(*addresses), ctypes.c_longlong(blocks), ctypes.c_int(threads))


class HostCudaCompiler:
    """ember_cuda.fusion's sources and argument lists, built and launched on the host over numpy arrays."""

    reductions = True

    def __init__(self) -> None:
        from ember_cuda import fusion

        self.fusion = fusion
        self.functions = fusion.FUNCTIONS
        self.kernels_built: list = []

    def _library(self, text: str, params, name: str):
        return build(PRELUDE + text + _wrapper(params, name))

    def compile(self, kernel):
        from ember.core.fused_c import parameters

        f = self.fusion
        self.kernels_built.append(kernel)
        out_dtypes = [np.dtype(dtype) for _, dtype in kernel.outputs]
        if kernel.reduced:
            cut = kernel.ndim - kernel.reduced
            lib = self._library(f.rowwise_source(kernel), parameters(f.DIALECT, kernel, None), "rowwise")

            def launch_rows(inputs, scalars, shape, out_shapes):
                R, L = int(np.prod(shape[:cut], dtype=np.int64)), int(np.prod(shape[cut:], dtype=np.int64))
                outs = [np.empty(s, dtype=dt) for s, dt in zip(out_shapes, out_dtypes)]
                args = f.rowwise_arguments(outs, [np.ascontiguousarray(a) for a in inputs], scalars, R, L,
                                           kernel.dtype)
                _call(lib, args, -(-R // 128), 128)
                return tuple(outs)
            return launch_rows
        libs: dict = {}

        def launch(inputs, scalars, shape, out_shapes):
            outs = [np.empty(shape, dtype=dt) for dt in out_dtypes]
            n, rank, args = f.elementwise_arguments(outs, inputs, scalars, shape, kernel.dtype)
            if rank not in libs:
                libs[rank] = self._library(f.source(kernel, rank), parameters(f.DIALECT, kernel, rank), "fused")
            if n:
                _call(libs[rank], args, -(-n // f.THREADS), f.THREADS)
            return tuple(outs)
        return launch


@pytest.fixture
def host_cuda(monkeypatch):
    """The host-built CUDA generator standing in for the cpu's (fusion.py asks it for every fused chain)."""
    from ember.compiler import fusion

    if CXX is None:
        pytest.skip("no C++ compiler to build the generated CUDA C on the host")
    compiler = HostCudaCompiler()
    monkeypatch.setattr(fusion, "fused_kernel_compiler", lambda device_type: compiler)
    return compiler


def close(a, b, rtol=1e-5):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_pointwise_chains_with_broadcast_inputs_run_as_generated_cuda_c(host_cuda, dtype):
    """The tanh GELU and the erf one written out, clamps, comparisons and `where`, over a broadcast bias and
    a transposed input: the vocabulary's C spellings and the launcher's strides."""
    def chains(x, b, t):
        h = x + b
        tanh_gelu = 0.5 * h * (1 + ((2 / 3.141592653589793) ** 0.5 * (h + 0.044715 * h ** 3)).tanh())
        erf_gelu = h * 0.5 * (1 + (h / 2 ** 0.5).erf())
        picked = ember.where(h > t, ember.maximum(h, t.exp()), ember.minimum(h.abs().sqrt(), t))
        return tanh_gelu - erf_gelu.sigmoid(), picked * (h < 0.5)
    x, b = ember.randn(4, 6, dtype=dtype), ember.randn(6, dtype=dtype)
    t = ember.randn(6, 4, dtype=dtype).t()                  # strided
    with ember.no_grad():
        for got, want in zip(ember.compile(chains)(x, b, t), chains(x, b, t)):
            close(got, want, rtol=1e-5 if dtype == ember.float32 else 1e-12)
    ops = {op for k in host_cuda.kernels_built for op in k.ops}
    assert {"tanh", "erf", "where.self", "sigmoid"} <= ops, ops


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_a_hand_written_norm_and_softmax_run_as_row_wise_cuda_c(host_cuda, dtype):
    def norm_softmax(x, w, b):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        y = (x - mu) / (var + 1e-5).sqrt() * w + b
        e = (y - y.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True), y.amin(-1)
    x, w, b = ember.randn(3, 4, 9, dtype=dtype), ember.randn(9, dtype=dtype), ember.randn(9, dtype=dtype)
    with ember.no_grad():
        for got, want in zip(ember.compile(norm_softmax)(x, w, b), norm_softmax(x, w, b)):
            close(got, want, rtol=1e-5 if dtype == ember.float32 else 1e-12)
    assert any(k.reduced for k in host_cuda.kernels_built)


class Swish(ember.nn.Module):
    """x * sigmoid(x) written out: a chain in the forward, and one in the backward from its formulas."""

    def forward(self, x):
        return x * (1 + (-x).exp()).reciprocal()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_an_mlp_trains_through_generated_cuda_c(host_cuda, dtype):
    nn = ember.nn
    models = []
    for _ in range(2):
        ember.manual_seed(4)
        models.append(nn.Sequential(nn.Linear(6, 16), Swish(), nn.Linear(16, 3)).to(dtype))
    eager, model = models
    compiled = ember.compile(model)
    x, y = ember.randn(5, 6, dtype=dtype), ember.randint(0, 3, (5,))
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in models]
    for _ in range(3):
        for m, run, opt in ((eager, eager, opts[0]), (model, compiled, opts[1])):
            opt.zero_grad()
            nn.functional.cross_entropy(run(x), y).backward()
            opt.step()
    for p, q in zip(eager.parameters(), model.parameters()):
        close(p, q, rtol=1e-4 if dtype == ember.float32 else 1e-10)
    assert host_cuda.kernels_built


def test_the_sources_are_cuda_c_named_and_written_to_the_kernel_cache(host_cuda, tmp_path, monkeypatch):
    from ember_cuda import fusion

    from ember.core.fused_kernel import FusedKernel

    kernel = FusedKernel(ndim=2, dtype="float32", inputs=("float32", "float32"), varies=((True, True), (False, True)),
                         n_scalars=1, statements=(("add", ("in", 0), ("in", 1)), ("mul", ("value", 0), ("scalar", 0))),
                         outputs=((1, "float32"),), ops=("add.Tensor", "mul.Scalar"))
    text = fusion.source(kernel, 2)
    assert 'extern "C" __global__ void fused(' in text and "blockIdx.x * blockDim.x + threadIdx.x" in text
    x, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2, 3], np.float32)
    (out,) = host_cuda.compile(kernel)([x, b], [2.0], (2, 3), [(2, 3)])
    np.testing.assert_array_equal(out, (x + b) * 2)


# --- on a GPU (skipped without one; `make gpu-check` runs them) -------------------------------------------

@pytest.fixture
def gpu():
    if not ember.cuda.is_available():
        pytest.skip("no CUDA device")
    return "cuda"


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_gpu_compiled_chains_and_rows_match_eager(gpu, dtype):
    def program(x, w, b):
        h = x * w + b
        y = 0.5 * h * (1 + (0.7978845608 * (h + 0.044715 * h ** 3)).tanh())
        e = (y - y.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True), (y - y.mean(-1, keepdim=True)).t()
    x, w, b = (t.to(dtype).to(gpu) for t in (ember.randn(8, 5, 33), ember.randn(33), ember.randn(33)))
    with ember.no_grad():
        for got, want in zip(ember.compile(program)(x, w, b), program(x, w, b)):
            close(got, want, rtol=1e-5 if dtype == ember.float32 else 1e-12)


def test_gpu_a_whole_training_step_replays(gpu):
    nn = ember.nn

    def build():
        ember.manual_seed(6)
        model = nn.Sequential(nn.Linear(12, 32), Swish(), nn.Linear(32, 5)).to(gpu)
        opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
        x, y = ember.randn(16, 12).to(gpu), ember.randint(0, 5, (16,)).to(gpu)
        return make_step(model, opt, x, y), model
    runs = eager_and_compiled(build, 6)
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for p, q in zip(runs[0][1].parameters(), runs[1][1].parameters()):
        close(q, p, rtol=1e-4)


def test_row_wise_fusion_needs_the_generators_min_rows(host_cuda):
    """A generator with a thread per row declares the fewest rows worth one (cuda's 256): fewer, and the
    reduction stays with the backend's own kernels (a whole sum would run on one thread)."""
    host_cuda.min_rows = 4

    def program(x):
        return (x * 2 + 1).sum(-1)
    with ember.no_grad():
        for rows, fused in ((2, False), (4, True)):
            host_cuda.kernels_built.clear()
            x = ember.randn(rows, 8)
            close(ember.compile(program)(x), program(x))
            assert any(k.reduced for k in host_cuda.kernels_built) == fused, rows
