"""ember.compile's fusion and code generation: pointwise chains run as one generated kernel.

Each compiled program is checked against eager code (bit for bit where the fused arithmetic is the
eager kernels' arithmetic), and what the compiler generated is checked as data: which ops one kernel
fuses, that its source is a file in the kernel cache that numba compiled and cached beside it, that
an op outside the generator's vocabulary runs its own kernel, and that a backend without a generator
runs every op alone with the same results.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.compiler import fusion, logs
from ember.core.kernel_cache import cache_dir

F = ember.nn.functional


def exact(a, b) -> None:
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def fused_units(compiled) -> list:
    """The fused groups among the units its single native entry runs."""
    (entry,) = compiled._code.entries.values()
    return [u for u in entry.run.units if len(u.members) > 1]


def chain(x, b, y):
    return ((x * 2 + b).relu() - y) * y + 1


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_a_pointwise_chain_is_one_kernel_with_eagers_values_bit_for_bit(dtype, capfd):
    ember.manual_seed(0)
    x, b, y = ember.randn(6, 5, dtype=dtype), ember.randn(5, dtype=dtype), ember.randn(6, 5, dtype=dtype)
    compiled = ember.compile(chain)
    with logs.logging("kernels"):
        with ember.no_grad():
            exact(compiled(x, b, y), chain(x, b, y))
            exact(compiled(x.t().contiguous().t(), b, y), chain(x, b, y))    # strides are guards: a 2nd program
    err = capfd.readouterr().err
    assert err.count("6 ops (mul.Tensor, add.Tensor, relu, sub.Tensor, mul.Tensor, add.Tensor), 3 inputs, "
                     "1 outputs") == 2
    assert [len([u for u in e.run.units if len(u.members) > 1]) for e in compiled._code.entries.values()] == [1, 1]


def test_the_generated_source_is_a_cached_file_numba_compiled_and_kept(capfd):
    x = ember.randn(4, 3, dtype=ember.float64)
    compiled = ember.compile(lambda a: (a - 1) * (a + 2))
    with logs.logging("output_code"):
        with ember.no_grad():
            exact(compiled(x), (x - 1) * (x + 2))
    err = capfd.readouterr().err
    name = err.split("[ember.compile output_code] ", 1)[1].split(":", 1)[0]
    source = cache_dir() / f"{name}.py"
    assert source.read_text() in err and "@njit(cache=True" in source.read_text()
    assert list((cache_dir() / "__pycache__").glob(f"{name}.*.nbi"))     # numba's index of cached machine code
    import sys

    module = sys.modules[f"ember_kernels.{name}"]
    assert module.flat.py_func.__code__.co_filename == str(source)     # frames show the file and its lines


def test_broadcasts_bools_scalars_and_zero_d_values_fuse():
    ember.manual_seed(1)
    x, w = ember.randn(2, 3, 4), ember.randn(3, 1)

    def f(x, w, s):
        m = x > 0.25
        return ember.where(m, x * w, -x) + s, ember.maximum(x, w) - ember.minimum(x, s)
    s = ember.tensor(0.5)
    compiled = ember.compile(f)
    with ember.no_grad():
        for got, want in zip(compiled(x, w, s), f(x, w, s)):
            exact(got, want)
        x[0, 0, 0] = float("nan")                                  # NaN propagates through maximum/minimum
        for got, want in zip(compiled(x, w, s), f(x, w, s)):
            exact(got, want)
    assert fused_units(compiled)


def test_ops_outside_the_generators_vocabulary_run_their_own_kernels(capfd):
    x = ember.randn(8, 8)

    def f(x):                                    # exp and tanh: numpy's SIMD ufuncs beat numba's libm calls
        return (ember.tanh(x * 3 + 1).exp() + 2) * x - 1
    compiled = ember.compile(f)
    with logs.logging("kernels"):
        with ember.no_grad():
            exact(compiled(x), f(x))
    err = capfd.readouterr().err
    assert "2 ops (mul.Tensor, add.Tensor)" in err and "3 ops (add.Tensor, mul.Tensor, sub.Tensor)" in err
    assert "tanh" not in err and "exp" not in err


def test_without_a_generator_every_op_runs_alone_with_the_same_results(monkeypatch):
    x, b, y = ember.randn(6, 5), ember.randn(5), ember.randn(6, 5)
    with ember.no_grad():
        want = ember.compile(chain)(x, b, y)
    monkeypatch.setattr(fusion, "fused_kernel_compiler", lambda device_type: None)
    compiled = ember.compile(chain)
    with ember.no_grad():
        exact(compiled(x, b, y), want)
    assert fused_units(compiled) == []


def test_a_group_never_runs_past_a_write_into_what_it_reads_or_a_reader_of_its_values():
    def f(x):
        a = x + 1
        b = a * 2                                # a, b: one group...
        c = b.amin(0)                            # ...closed here: the amin (over a leading dim) reads b
        d = b - c                                # so d starts another group, closed by the copy_ reading d
        e = ember.empty_like(d)
        e.copy_(d)
        buf = x * 3
        g = buf + d                              # joins buf's group
        h = buf * 2                              # so does h...
        buf.copy_(h)                             # ...and the write into buf, which the group reads, closes it
        return e * 3 + a, g * 5, buf, h - 1
    x = ember.randn(4, 4, dtype=ember.float64)
    compiled = ember.compile(f)
    with ember.no_grad():
        for got, want in zip(compiled(x), f(x)):
            exact(got, want)
    groups = [[m.name for m in u.members] for u in fused_units(compiled)]
    assert groups == [["add", "mul"], ["mul_1", "add_1", "mul_2"], ["mul_3", "add_2"]], groups


def test_training_through_the_joint_graph_fuses_and_keeps_eagers_gradients():
    def make():
        ember.manual_seed(0)
        return ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    eager, model = make(), make()
    compiled = ember.compile(model)
    x, y = ember.randn(5, 6), ember.randint(0, 3, (5,))
    for m in (eager, compiled):
        F.cross_entropy(m(x), y).backward()
    for p, q in zip(eager.parameters(), model.parameters()):
        exact(q.grad, p.grad)


def _opencl_reason() -> str:
    try:
        from test_conformance_opencl import REASON
    except Exception as exc:                   # the plugin is not installed
        return f"ember-opencl is not importable: {exc}"
    return REASON


def _count_opencl_launches(monkeypatch) -> list:
    """A two-item list counting the opencl plugin's kernel launches from now on: all of them, and those its
    matrix products make (kernels/linalg.py: packing, then the GEMM), which compiling does not change.
    The test resets it."""
    import sys

    from ember_opencl import codegen

    launches = [0, 0]
    launch = codegen.launch_nd

    def counting(*args, **kwargs):
        launches[0] += 1
        launches[1] += sys._getframe(1).f_code.co_filename.endswith("linalg.py")
        return launch(*args, **kwargs)
    monkeypatch.setattr(codegen, "launch_nd", counting)       # every launch of the plugin goes through it
    return launches


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_opencl_fuses_whole_chains_into_one_generated_kernel(dtype, capfd):
    """OpenCL C has exp and tanh, so the tanh GELU (decomposed: opencl has no gelu kernel) fuses with its
    neighbours: one kernel, eager's values, its source a file in the kernel cache."""

    def f(x, b, y):
        return (F.gelu(x * 2 + b, approximate="tanh").relu() - y).exp() * ember.maximum(y, b)
    ember.manual_seed(4)
    x, b, y = (t.to(dtype).to("opencl") for t in (ember.randn(6, 5), ember.randn(5), ember.randn(6, 5)))
    compiled = ember.compile(f)
    with logs.logging("kernels,output_code"):
        with ember.no_grad():
            got, want = compiled(x, b, y), f(x, b, y)
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-6 if dtype == ember.float32 else 1e-14)
    err = capfd.readouterr().err
    assert len(fused_units(compiled)) == 1 and "tanh, " in err and "exp, " in err and "__kernel void fused(" in err
    name = err.split("[ember.compile kernels] ", 1)[1].split(":", 1)[0]
    assert list(cache_dir().glob(f"{name}_r*.cl"))


def layer_norm_by_hand(x, w, b):
    mean = x.mean(-1, keepdim=True)
    d = x - mean
    var = (d * d).mean(-1, keepdim=True)
    return d * ember.rsqrt(var + 1e-5) * w + b


@pytest.mark.parametrize("dtype, rtol", [(ember.float32, 1e-5), (ember.float64, 1e-12)])
def test_a_norm_written_by_hand_is_one_row_wise_kernel(dtype, rtol, capfd):
    """Two means (the cpu backend's mean kernel keeps each one op), the centring, the variance, rsqrt and the
    affine: nine ops, one kernel looping over each row twice (a mean, then the variance of the centred values)
    and once to store."""
    ember.manual_seed(5)
    x, w, b = ember.randn(3, 4, 16, dtype=dtype), ember.randn(16, dtype=dtype), ember.randn(16, dtype=dtype)
    compiled = ember.compile(layer_norm_by_hand)
    with logs.logging("kernels"):
        with ember.no_grad():
            got, want = compiled(x, w, b), layer_norm_by_hand(x, w, b)
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=rtol)
    (unit,) = fused_units(compiled)
    assert len(unit.members) == 9
    assert "rows reduced over the last 1" in capfd.readouterr().err


def test_reductions_fuse_over_trailing_dimensions_with_or_without_keepdim():
    ember.manual_seed(6)
    x = ember.randn(2, 3, 4, 5, dtype=ember.float64)

    def f(x):
        s = (x * 2).sum((-2, -1))                         # two trailing dims, no keepdim: shape (2, 3)
        m = (x - 1).amax((-2, -1), keepdim=True)          # kept: (2, 3, 1, 1)
        return s + 1, x * m, (x + 3).amin(1)              # amin over a middle dim: not fused, still exact
    compiled = ember.compile(f)
    with ember.no_grad():
        for got, want in zip(compiled(x), f(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
            assert tuple(got.shape) == tuple(want.shape)
        x[0, 1, 2, 3] = float("nan")                      # NaN propagates through amax, as torch's
        for got, want in zip(compiled(x), f(x)):
            np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want.numpy()))
    reduced = [u for u in fused_units(compiled) if any(m.target.reduce for m in u.members)]
    assert {m.target.name for u in reduced for m in u.members if m.target.reduce} == {"sum.dim_IntList", "amax"}


def test_a_failing_generated_kernel_is_reported_once_and_its_ops_run_one_by_one(monkeypatch):
    from ember_cpu import fused_numba

    def broken(self, kernel):
        def launch(inputs, scalars, shape, out_shapes):
            raise TypeError("a generator's defect")
        return launch
    monkeypatch.setattr(fused_numba.NumbaFusedCompiler, "compile", broken)
    monkeypatch.setattr(fusion, "fused_kernel_compiler", lambda device_type: fused_numba.NumbaFusedCompiler())
    x, b, y = ember.randn(6, 5), ember.randn(5), ember.randn(6, 5)
    compiled = ember.compile(chain)
    with ember.no_grad():
        with pytest.warns(RuntimeWarning, match="failed .TypeError: a generator's defect.; its 6 ops run one by one"):
            exact(compiled(x, b, y), chain(x, b, y))
        with warnings.catch_warnings():
            warnings.simplefilter("error")                 # once: the next call runs the ops without a word
            exact(compiled(x, b, y), chain(x, b, y))
    assert len(fused_units(compiled)) == 1


def test_rms_norm_by_hand_is_one_kernel_its_square_a_product():
    def rms(x, w):
        return x * ember.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    x, w = ember.randn(4, 16, dtype=ember.float64), ember.randn(16, dtype=ember.float64)
    compiled = ember.compile(rms)
    with ember.no_grad():
        np.testing.assert_allclose(compiled(x, w).numpy(), rms(x, w).numpy(), rtol=1e-13)
    (unit,) = fused_units(compiled)
    assert [m.target.name for m in unit.members][:2] == ["pow.Tensor_Tensor", "mean.dim"]


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
@pytest.mark.parametrize("dtype, rtol", [(ember.float32, 1e-5), (ember.float64, 1e-12)])
def test_opencl_runs_a_norm_and_a_softmax_each_as_one_row_wise_kernel(dtype, rtol):
    def softmax_by_hand(x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)
    ember.manual_seed(7)
    x, w, b = (t.to(dtype).to("opencl") for t in (ember.randn(3, 5, 16), ember.randn(16), ember.randn(16)))
    for f, args in ((layer_norm_by_hand, (x, w, b)), (softmax_by_hand, (x.t() if x.dim() == 2 else x,))):
        compiled = ember.compile(f)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with ember.no_grad():
                got, want = compiled(*args), f(*args)
        assert not [w for w in caught if "ember.compile" in str(w.message)]   # the generated kernel ran
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=rtol, atol=rtol)
        (unit,) = fused_units(compiled)
        assert any(m.target.reduce for m in unit.members)


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
def test_a_gpt_forward_on_opencl_launches_a_third_of_eagers_kernels(monkeypatch):
    from ember.testing.models import GPT2Config, _gpt2_classes

    launches = _count_opencl_launches(monkeypatch)
    ember.manual_seed(8)
    model = _gpt2_classes(ember).GPT2(GPT2Config(vocab_size=64, n_ctx=16, n_embd=32, n_head=2, n_layer=2))
    model = model.to("opencl").eval()
    idx = ember.randint(0, 64, (2, 16)).to("opencl")
    compiled = ember.compile(model)
    counts = {}
    with ember.no_grad():
        want = model(idx).cpu()
        got = compiled(idx).cpu()
        for name, run in (("eager", model), ("compiled", compiled)):
            launches[:] = [0, 0]
            run(idx).cpu()
            counts[name] = launches[0]
            counts["products"] = launches[1]        # the same either way
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    products = counts["products"]
    assert 0 < (counts["compiled"] - products) * 3 <= counts["eager"] - products, counts


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
def test_training_on_opencl_replays_the_decomposed_joint_graph_with_fewer_launches(monkeypatch):
    """opencl has kernels for few explicit ops: the joint graph keeps them for their formulas, then is
    re-traced with them decomposed (decompose.py), replayed natively and fused; eager's losses."""
    from ember.testing.models import GPT2Config, _gpt2_classes

    launches = _count_opencl_launches(monkeypatch)

    def step(model, run, idx, targets):
        model.zero_grad()
        loss = F.cross_entropy(run(idx).view(-1, 64), targets.view(-1))
        loss.backward()
        return float(loss.cpu())
    losses, counts = {}, {}
    for name in ("eager", "compiled"):
        ember.manual_seed(9)
        model = _gpt2_classes(ember).GPT2(GPT2Config(vocab_size=64, n_ctx=16, n_embd=32, n_head=2, n_layer=1))
        model = model.to("opencl")
        idx, targets = (ember.randint(0, 64, (2, 16)).to("opencl") for _ in range(2))
        run = ember.compile(model) if name == "compiled" else model
        losses[name] = step(model, run, idx, targets)
        launches[0] = 0
        step(model, run, idx, targets)
        counts[name] = launches[0]
    np.testing.assert_allclose(losses["compiled"], losses["eager"], rtol=1e-5)
    assert counts["compiled"] < counts["eager"], counts


def test_constants_are_computed_once_and_outputs_stay_fresh():
    """Native replay folds what reads no input (a causal mask built from aranges) into a constant computed
    when the program is built; a factory that is an output is still made anew on every call."""
    def masked(x):
        n = x.shape[-1]
        i = ember.arange(n)
        mask = i[:, None] >= i[None, :]
        return ember.where(mask, x, -1.0), ember.zeros(n)
    x = ember.randn(2, 5, 5)
    compiled = ember.compile(masked)
    with ember.no_grad():
        for got, want in zip(compiled(x), masked(x)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        (entry,) = compiled._code.entries.values()
        ran = {getattr(m.target, "name", "") for u in entry.run.units for m in u.members}
        assert not ran & {"arange", "arange.start_step", "ge.Tensor", "unsqueeze"}, ran
        first = compiled(x)[1]
        first.add_(1)
        np.testing.assert_array_equal(compiled(x)[1].numpy(), np.zeros(5, np.float32))


def test_a_result_of_a_view_op_with_several_results_is_a_view_of_its_input():
    """view_base follows a getitem of split/unbind to their input, so a write into one part counts as a
    write into the whole (constant folding and fusion closing both ask)."""
    import operator

    from ember.dispatcher import ALL_OPS
    from ember.export.trace import view_base
    from ember.fx import Graph

    g = Graph()
    x = g.placeholder("x")
    parts = g.call_function(ALL_OPS["split.Tensor"], (x, 2, 0))
    first = g.call_function(operator.getitem, (parts, 0))
    row = g.call_function(ALL_OPS["select.int"], (first, 0, 1))
    total = g.call_function(ALL_OPS["sum.dim_IntList"], (x, [0], False, None))
    picked = g.call_function(operator.getitem, (g.call_function(ALL_OPS["max.dim"], (x, 0, False)), 0))
    assert view_base(row) is x and view_base(first) is x
    assert view_base(total) is total and view_base(picked) is picked     # no views: themselves


def test_results_of_a_folded_op_with_several_results_stay_fresh():
    """sort's values written in place, or returned to a caller who writes them: sort is not folded into a
    constant, so nothing carries over from one call to the next."""
    def written(x):
        values, _ = ember.arange(6.0).sort(descending=True)
        values.mul_(2)
        return values + x[0]

    def returned(x):
        values, _ = ember.arange(6.0).sort(descending=True)
        return values, x + 1
    x = ember.ones(3)
    with ember.no_grad():
        for fn in (written, returned):
            compiled = ember.compile(fn)
            for _ in range(3):
                got = compiled(x)
                first = got[0] if isinstance(got, tuple) else got
                np.testing.assert_array_equal(first.numpy(), (fn(x)[0] if isinstance(got, tuple) else fn(x)).numpy())
                first.add_(100)                     # the caller writes what it got


@pytest.mark.skipif(bool(_opencl_reason()), reason=_opencl_reason() or "opencl available")
def test_a_bool_input_to_a_math_function_fuses_on_opencl():
    """Truth values are the compute type in generated C, so `exp(mask)` finds exp's float overload (OpenCL C
    and CUDA have no integer one): the kernel builds, no fallback warning."""
    x = ember.randn(4, 5).to("opencl")
    mask = (ember.randn(4, 5) > 0).to("opencl")

    def program(x, m):
        return ember.exp(m) * x + ember.sqrt(m) - ember.maximum(m, x * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with ember.no_grad():
            got = ember.compile(program)(x, mask)
    np.testing.assert_allclose(got.cpu().numpy(), program(x, mask).cpu().numpy(), rtol=1e-6, atol=1e-6)
