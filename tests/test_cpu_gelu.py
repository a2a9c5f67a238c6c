"""The cpu backend's GELU: numba loops around numpy's exp for float32/float16/bfloat16
(ember_cpu.gelu_numba), scipy.special.ndtr for float64 and for what the loops do not serve. Checked
against the exact values (float64 ndtr) over the whole float32 range and against torch."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import torch

import ember

F = ember.nn.functional


def exact(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GELU and its derivative in float64."""
    x = x.astype(np.float64)
    return x * scipy.special.ndtr(x), scipy.special.ndtr(x) + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)


def test_float32_within_its_error_bound_everywhere():
    x = np.concatenate([np.linspace(-14, 14, 40001), [-1e-30, 1e-30, -0.0, 0.0, 1e4, -1e4]]).astype(np.float32)
    t = ember.from_numpy(x).requires_grad_()
    y = F.gelu(t)
    y.backward(ember.ones_like(y))
    value, slope = exact(x)
    for got, want, what in ((y.detach().numpy(), value, "gelu"), (t.grad.numpy(), slope, "gelu'")):
        err = np.abs(got.astype(np.float64) - want)
        assert np.all(err <= 4e-7 * np.maximum(1.0, np.abs(x))), what
    # relative error, deep in the negative tail too (the derivative's CDF and x pdf cancel there: only absolute)
    got, big = y.detach().numpy().astype(np.float64), np.abs(value) > 1e-30
    assert np.max(np.abs(got - value)[big] / np.abs(value[big])) < 2e-5
    assert np.signbit(y.detach().numpy()[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_matches_torch(dtype):
    g = np.random.default_rng(0).standard_normal((2, 3, 50)).astype(np.float32) * 3
    ours = ember.tensor(g).to(getattr(ember, dtype))
    theirs = torch.tensor(g).to(getattr(torch, dtype))
    ours_view, theirs_view = ours.transpose(0, 2).requires_grad_(), theirs.transpose(0, 2).requires_grad_()
    y, z = F.gelu(ours_view), torch.nn.functional.gelu(theirs_view)
    assert y.dtype == ours.dtype and list(y.shape) == list(z.shape)
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    np.testing.assert_allclose(y.detach().float().numpy(), z.detach().float().numpy(), rtol=tol, atol=tol)
    seed = np.random.default_rng(1).standard_normal(tuple(z.shape)).astype(np.float32)
    y.backward(ember.tensor(seed).to(y.dtype))
    z.backward(torch.tensor(seed).to(z.dtype))
    np.testing.assert_allclose(ours_view.grad.float().numpy(), theirs_view.grad.float().numpy(), rtol=tol, atol=tol)


def test_special_values_and_broadcast_gradient_as_torch():
    values = [-float("inf"), float("nan"), -30.0, 30.0, -0.0]
    np.testing.assert_array_equal(F.gelu(ember.tensor(values)).numpy(),
                                  torch.nn.functional.gelu(torch.tensor(values)).numpy())
    assert F.gelu(ember.tensor([float("inf")] * 9)).tolist() == [float("inf")] * 9   # torch: inf alone, NaN in a batch
    # gelu_backward with a grad_output that broadcasts over the input: the eager kernel's path
    x = np.linspace(-3, 3, 4, dtype=np.float32)
    grad = np.arange(12, dtype=np.float32).reshape(3, 4)
    # (torch's own kernel fails on it here: compared with the exact derivative)
    ours = ember.ops.gelu_backward(ember.tensor(grad), ember.tensor(x))
    assert list(ours.shape) == [3, 4] and ours.dtype == ember.float32
    np.testing.assert_allclose(ours.numpy(), grad * exact(x)[1], rtol=1e-6, atol=1e-6)


def test_tanh_loops_give_the_numpy_kernels_bits():
    """The tanh GELU's numba loops do the numpy kernel's float32 operations in its order: the same bits, over
    the whole range (overflowing exponents, infinities, NaN, signed zeros) and for float16/bfloat16."""
    from ember.core.numpy_interop import to_numpy_dtype
    from ember_cpu import gelu_numba
    from ember_cpu.array_kernels import activations
    from ember_cpu.array_kernels.context import ArrayModule

    am = ArrayModule(np, to_numpy_dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-60, 60, 20001), [-1e-30, 1e-30, -0.0, 0.0, 1e4, -1e4, np.inf, -np.inf, np.nan],
                        rng.standard_normal(5000) * 3]).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    for dtype in (ember.float32, ember.float16, ember.bfloat16):
        xs, gs, spec = x.astype(to_numpy_dtype(dtype)), g.astype(to_numpy_dtype(dtype)), (x.shape, dtype)
        with np.errstate(all="ignore"):
            pairs = [(activations.gelu(am, spec, xs, "tanh"), gelu_numba.gelu(spec, xs, "tanh")),
                     (activations.gelu_backward(am, spec, gs, xs, "tanh"), gelu_numba.gelu_backward(spec, gs, xs, "tanh"))]
        for numpy_result, loops_result in pairs:
            assert loops_result.dtype == numpy_result.dtype == xs.dtype
            assert numpy_result.tobytes() == loops_result.tobytes(), dtype


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_tanh_matches_torch(dtype):
    g = np.random.default_rng(2).standard_normal((2, 3, 50)).astype(np.float32) * 3
    ours = ember.tensor(g).to(getattr(ember, dtype)).transpose(0, 2).requires_grad_()
    theirs = torch.tensor(g).to(getattr(torch, dtype)).transpose(0, 2).requires_grad_()
    y, z = F.gelu(ours, approximate="tanh"), torch.nn.functional.gelu(theirs, approximate="tanh")
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    assert y.dtype == ours.dtype
    np.testing.assert_allclose(y.detach().float().numpy(), z.detach().float().numpy(), rtol=tol, atol=tol)
    seed = np.random.default_rng(1).standard_normal(tuple(z.shape)).astype(np.float32)
    y.backward(ember.tensor(seed).to(y.dtype))
    z.backward(torch.tensor(seed).to(z.dtype))
    np.testing.assert_allclose(ours.grad.float().numpy(), theirs.grad.float().numpy(), rtol=tol, atol=tol)
