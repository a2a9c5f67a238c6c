"""Kernels of the shared array-kernel library called on their own (no dispatcher), against torch.

Each kernel is a module-level function `kernel(am, spec, *args)` (generic ones take the array
function after `am`), so it can be called, tested and stepped through directly: these tests pin
that form and a few numerics it must keep (opmath rounding, integer wrapping, the dtype a
comparison computes in, relu's -0.0, an empty slice's storage offset).
"""
from __future__ import annotations

import types

import numpy as np
import pytest
import torch

import ember
from ember.core.numpy_interop import to_numpy_dtype
from ember_cpu.array_kernels import KERNEL_TABLE, MODULES, activations, pointwise, shape
from ember_cpu.array_kernels.context import ArrayModule, Family

AM = ArrayModule(np, to_numpy_dtype)


def bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_table_entry_is_a_named_function_of_its_module(module):
    for op, entry in module.KERNELS.items():
        kernel = entry.kernel if isinstance(entry, Family) else entry
        assert isinstance(kernel, types.FunctionType) and kernel.__name__ != "<lambda>", op
        assert getattr(module, kernel.__name__) is kernel, op
        if isinstance(entry, Family):
            assert callable(getattr(np, entry.array_function)), op
    assert not hasattr(module, "make")


def test_the_library_table_is_every_module_table_without_overlap():
    assert sum(len(m.KERNELS) for m in MODULES) == len(KERNEL_TABLE)
    for m in MODULES:
        assert all(KERNEL_TABLE[op] is entry for op, entry in m.KERNELS.items())


def test_unary_kernels_called_directly_match_torch():
    x = np.array([-2.5, -0.0, 0.0, 0.5, 3.0, np.nan], dtype=np.float32)
    t = torch.from_numpy(x.copy())
    spec = ((6,), ember.float32)
    assert bits(pointwise.neg(AM, spec, x)) == bits(torch.neg(t).numpy())
    assert bits(pointwise.relu(AM, spec, x)) == bits(torch.relu(t).numpy())          # -0.0 and NaN kept
    np.testing.assert_allclose(pointwise.sigmoid(AM, spec, x), torch.sigmoid(t).numpy(), rtol=1e-6)
    np.testing.assert_allclose(pointwise.frac(AM, spec, x), torch.frac(t).numpy(), rtol=0)
    np.testing.assert_allclose(pointwise.unary_float(AM, np.exp, spec, x), torch.exp(t).numpy(), rtol=1e-6)
    np.testing.assert_allclose(activations.gelu(AM, spec, x, "tanh"), torch.nn.functional.gelu(t, approximate="tanh"),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(activations.silu(AM, spec, x), torch.nn.functional.silu(t), rtol=1e-6)
    assert pointwise.classify(AM, np.isnan, ((6,), ember.bool), x).tolist() == torch.isnan(t).tolist()


def test_binary_kernels_round_once_from_float32_and_wrap_python_ints():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(64).astype(np.float16) for _ in range(2))
    spec = ((64,), ember.float16)
    want = torch.from_numpy(a) * torch.from_numpy(b)                 # float32 opmath, one rounding
    assert bits(pointwise.binary(AM, np.multiply, spec, a, b)) == bits(want.numpy())
    want = torch.add(torch.from_numpy(a), torch.from_numpy(b), alpha=3)
    assert bits(pointwise.add(AM, spec, a, b, alpha=3)) == bits(want.numpy())

    u = np.array([0, 1, 200], dtype=np.uint8)
    got = pointwise.add(AM, ((3,), ember.uint8), u, -1)               # uint8 + -1 wraps: 255, 0, 199
    assert got.dtype == np.uint8 and got.tolist() == (torch.tensor(u) + -1).tolist()


def test_comparisons_compute_in_the_common_dtype():
    i = np.array([1, 2, 3], dtype=np.int64)
    got = pointwise.compare(AM, np.less, ((3,), ember.bool), i, 2.5)  # in float, not int(2.5)
    assert got.dtype == np.bool_ and got.tolist() == (torch.tensor(i) < 2.5).tolist()
    i8 = np.array([1, 2], dtype=np.int8)
    for a, b in ((i, 2.5), (np.array(1.0), i), (i8, np.array(5)), (i8, True), (i8, 300)):
        want = torch.result_type(*(torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in (a, b)))
        assert pointwise.common_dtype(AM, a, b) == to_numpy_dtype(getattr(ember, str(want).split(".")[-1]))


def test_integer_division_by_zero_raises_like_torch():
    from ember.core.errors import ArgumentValueError

    a, b = np.array([3, 4], dtype=np.int32), np.array([1, 0], dtype=np.int32)
    with pytest.raises(ArgumentValueError, match=r"fmod\(\): ZeroDivisionError"):
        pointwise.int_checked(AM, np.fmod, "fmod", ((2,), ember.int32), a, b)
    with pytest.raises(ArgumentValueError, match="rounding_mode='floor'"):
        pointwise.div(AM, ((2,), ember.int32), a, b, rounding_mode="floor")


def test_threshold_backward_matches_torch_bit_for_bit():
    x = np.array([-1.0, 0.0, 0.5, np.nan, 2.0], dtype=np.float32)
    g = np.array([1.0, -2.0, 3.0, 4.0, -0.0], dtype=np.float32)
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x), 0.0)
    for dt, np_dt in ((ember.float32, np.float32), (ember.float64, np.float64)):
        got = activations.threshold_backward(AM, ((5,), dt), g.astype(np_dt), x.astype(np_dt), 0.0)
        assert bits(got) == bits(want.numpy().astype(np_dt))


def test_view_and_slice_fall_back_to_as_strided_with_torch_layouts():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)

    def offset(a):
        return (a.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // a.itemsize

    empty = t[:, 3:3]                                                 # torch keeps the storage offset
    got = shape.slice_(AM, (tuple(empty.shape), ember.float32, empty.stride(), empty.storage_offset()), base, 1, 3, 3)
    assert got.shape == (4, 0) and offset(got) == empty.storage_offset() == 3
    assert shape.root_of(got) is shape.root_of(base)

    strided = t.as_strided((2, 3), (6, 2), 1)
    got = shape.as_strided(AM, ((2, 3), ember.float32, (6, 2), 1), base[1:])
    assert got.tolist() == strided.tolist() and offset(got) == 1

    got = shape.view(AM, ((3, 8), ember.float32), base, (3, 8))
    assert got.base is not None and got.tolist() == t.view(3, 8).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("p", [0.1, 0.25, 0.9])
def test_dropout_noise_kernel_draws_and_rounds_as_its_explicit_kernel(dtype, p):
    """The cpu kernel of `_dropout_noise` (one call) against the explicit kernel's five ops (uniform draws,
    comparison, cast, division by 1 - p in the dtype, product), from the same Philox state: equal bits."""
    from ember._generated import functions as F
    from ember.decompositions.random_ops import dropout_noise

    x = ember.randn(6, 5, 3).to(getattr(ember, dtype))
    x[0, 0, 0], x[0, 0, 1] = float("inf"), float("nan")
    ember.manual_seed(7)
    fused = F._dropout_noise(x, p)
    after_fused = ember.rand(3).numpy()
    ember.manual_seed(7)
    composed = dropout_noise(x, p)
    assert np.array_equal(ember.rand(3).numpy(), after_fused)          # both advanced Philox alike
    for a, b in zip(fused, composed):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert bits(a.float().numpy()) == bits(b.float().numpy())
    kept = fused[1].float().numpy() != 0
    assert 0 < kept.mean() < 1


@pytest.mark.parametrize("features", [10, 160])
@pytest.mark.parametrize("lead", [(1,), (2,), (32,), (33,), (4, 8)])
def test_linear_few_rows_product_is_torchs_in_a_contiguous_result(lead, features):
    """With a few rows and many features the kernel multiplies as (w @ x.T).T (OpenBLAS's faster shape)
    and copies into a C-contiguous result: torch's values and layout, whichever form the shape picks."""
    from ember_cpu.array_kernels import linalg

    rows = int(np.prod(lead))
    assert linalg.transposed_product_pays(rows, features, 4) == (2 <= rows <= 32 and features >= 128)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(lead + (48,)).astype(np.float32)
    w = rng.standard_normal((features, 48)).astype(np.float32)
    b = rng.standard_normal(features).astype(np.float32)
    got = linalg.linear(AM, (lead + (features,), ember.float32), x, w, b)
    want = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_in_blocks_gives_the_whole_array_bits(approximate):
    """Past `scratch_block` elements the eager GELU backward works block by block (its scratch stays a
    block's size): the same bits as the whole-array computation of smaller pieces."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(2 * AM.scratch_block + 77) * 4).astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    got = activations.gelu_backward(AM, (x.shape, ember.float32), g, x, approximate)
    pieces = [activations.gelu_backward(AM, ((1000,), ember.float32), g[i:i + 1000], x[i:i + 1000], approximate)
              for i in range(0, x.size, 1000)]
    np.testing.assert_array_equal(got, np.concatenate(pieces))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, dims", [
    ((70, 80), None), ((5000,), None), ((7, 11, 13, 5), None),              # whole arrays past FULL_SUM_MIN
    ((3, 300007), None),                                                   # more than one block, and a tail
    ((6, 5, 4), [2]), ((6, 5, 4), [-2, -1]), ((6, 5, 4), [0]), ((6, 5, 4), [1, 0]),   # trailing / leading
    ((6, 5, 4), [1]), ((6, 5, 4), [0, 2]), ((1, 9), [1]), ((9, 1), [0]),    # middle dims: add.reduce
])
@pytest.mark.parametrize("keepdim", [False, True])
def test_float_sums_as_products_match_torch_and_a_long_double_sum(dtype, shape, dims, keepdim):
    """The cpu's float sums over leading, trailing or all dims are products with ones (reductions.py):
    torch's shapes and dtypes, and values near the sum taken in long double (mean divides it): a whole
    sum within a tenth of eps times the sum of the magnitudes (0.001 to 0.04 measured), a sum over dims
    within four (a few terms each)."""
    a = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    e, t = ember.tensor(a), torch.tensor(a)
    for name in ("sum", "mean"):
        if dims is None:
            got, want = getattr(e, name)(), getattr(t, name)()
            exact = np.add.reduce(a.astype(np.longdouble), axis=None) / (a.size if name == "mean" else 1)
        else:
            got, want = getattr(e, name)(dims, keepdim=keepdim), getattr(t, name)(dims, keepdim=keepdim)
            exact = np.add.reduce(a.astype(np.longdouble), axis=tuple(dims), keepdims=keepdim)
            if name == "mean":
                exact = exact / (a.size // max(exact.size, 1))
        assert tuple(got.shape) == tuple(want.shape) and got.dtype is getattr(ember, np.dtype(dtype).name)
        scale = np.add.reduce(np.abs(a.astype(np.longdouble)), axis=None if dims is None else tuple(dims),
                              keepdims=keepdim) / (a.size // max(np.size(exact), 1) if name == "mean" else 1)
        ulps = 0.1 if dims is None else 4
        np.testing.assert_array_less(np.abs(got.numpy() - exact), ulps * np.finfo(dtype).eps * scale + 1e-300)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4 if dtype == np.float32 else 1e-10,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(9000, 10), (5, 20000), (3, 40, 3000)])
def test_softmax_kernels_over_several_blocks_of_rows_match_torch(dtype, shape):
    """softmax, log_softmax and their backward ops along the last dim go a block of rows at a time (about
    SCRATCH_BLOCK elements): shapes of several blocks, the last one short, give torch's values."""
    rng = np.random.default_rng(4)
    x, g = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    tol = dict(rtol=2e-2, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)
    for name in ("softmax", "log_softmax"):
        ye, yt = getattr(ember, name)(ember.tensor(x), -1), getattr(torch, name)(torch.tensor(x), -1)
        np.testing.assert_allclose(ye.numpy().astype(np.float64), yt.numpy().astype(np.float64), **tol,
                                   err_msg=name)
        back = f"_{name}_backward_data"
        dt_e, dt_t = getattr(ember, np.dtype(dtype).name), getattr(torch, np.dtype(dtype).name)
        ge = getattr(ember, back)(ember.tensor(g), ye, -1, dt_e)
        gt = getattr(torch, back)(torch.tensor(g), yt, -1, dt_t)
        assert ge.dtype is dt_e
        np.testing.assert_allclose(ge.numpy().astype(np.float64), gt.numpy().astype(np.float64), **tol,
                                   err_msg=back)
