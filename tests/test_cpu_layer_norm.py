"""The cpu backend's layer norm: numba loops over rows (ember_cpu.norm_numba) for float32/float64 and, computed in
float32, float16/bfloat16. Checked against torch (values, statistics, the three gradients, each gradient alone),
on strided inputs, without weight or bias, over many features, and against the numpy kernel it replaces."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}


def _pair(array: np.ndarray, dtype: str, requires_grad: bool = True):
    ours = ember.tensor(array).to(getattr(ember, dtype)).requires_grad_(requires_grad)
    theirs = torch.tensor(array).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    return ours, theirs


def _close(ours, theirs, dtype: str) -> None:
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1] and list(ours.shape) == list(theirs.shape)
    np.testing.assert_allclose(ours.detach().float().numpy(), theirs.detach().float().numpy(),
                               rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_forward_statistics_and_gradients_match_torch(dtype, affine):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 16)).astype(np.float32) * 4 + 2
    w, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    (xo, xt), (wo, wt), (bo, bt) = _pair(x, dtype), _pair(w, dtype), _pair(b, dtype)
    wo, wt = (None, None) if affine == "none" else (wo, wt)
    bo, bt = (bo, bt) if affine == "both" else (None, None)
    ours = ember.native_layer_norm(xo, [16], wo, bo, 1e-5)
    theirs = torch.native_layer_norm(xt, [16], wt, bt, 1e-5)
    for o, t in zip(ours, theirs):
        _close(o, t, dtype)
    seed = rng.standard_normal(x.shape).astype(np.float32)
    ours[0].backward(ember.tensor(seed).to(xo.dtype))
    theirs[0].backward(torch.tensor(seed).to(xt.dtype))
    for o, t in [(xo, xt), (wo, wt), (bo, bt)]:
        if o is not None:
            _close(o.grad, t.grad, dtype)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True), (False, True, True)])
def test_each_gradient_alone_matches_torch(mask):
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((6, 8)), rng.standard_normal((6, 8))
    w, b = rng.standard_normal(8), rng.standard_normal(8)
    _, mean, rstd = torch.native_layer_norm(torch.tensor(x), [8], torch.tensor(w), torch.tensor(b), 1e-5)
    theirs = torch.ops.aten.native_layer_norm_backward(torch.tensor(g), torch.tensor(x), [8], mean, rstd,
                                                         torch.tensor(w), torch.tensor(b), list(mask))
    ours = ember.ops.native_layer_norm_backward(ember.tensor(g), ember.tensor(x), [8], ember.tensor(mean.numpy()),
                                                ember.tensor(rstd.numpy()), ember.tensor(w), ember.tensor(b),
                                                list(mask))
    for wanted, o, t in zip(mask, ours, theirs):
        assert (o is None) == (t is None) == (not wanted)
        if wanted:
            _close(o, t, "float64")


def test_strided_input_and_many_features():
    """A transposed input (the loops copy it) against torch; 20000 features about 1000 against the float64
    truth: the loops' error is float32's rounding of the result (torch's is the spacing of float32 near the
    mean, ~2.5e-5 here: it centres with the rounded mean)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 7)).astype(np.float32)
    ours, theirs = _pair(x, "float32")
    _close(ember.nn.functional.layer_norm(ours.transpose(0, 2), [4]),
           torch.nn.functional.layer_norm(theirs.transpose(0, 2), [4]), "float32")
    wide = (rng.standard_normal((2, 20000)) + 1000).astype(np.float32)
    exact = wide.astype(np.float64)
    exact = (exact - exact.mean(1, keepdims=True)) / np.sqrt(exact.var(1, keepdims=True) + 1e-5)
    ours = ember.nn.functional.layer_norm(ember.tensor(wide), [20000]).numpy()
    assert np.abs(ours - exact).max() < 1e-6


def test_loops_agree_with_the_numpy_kernel():
    """Within float32's rounding of the numpy kernel (they sum in another order, so not its bits)."""
    from ember.core.numpy_interop import to_numpy_dtype
    from ember_cpu import norm_numba
    from ember_cpu.array_kernels import normalization
    from ember_cpu.array_kernels.context import ArrayModule

    am = ArrayModule(np, to_numpy_dtype)
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((2, 32, 64)).astype(np.float32), rng.standard_normal((2, 32, 64)).astype(np.float32)
    w, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    f32 = ember.float32
    specs = (((2, 32, 64), f32), ((2, 32, 1), f32), ((2, 32, 1), f32))
    numpy_out = normalization.native_layer_norm(am, specs, x, (64,), w, b, 1e-5)
    loops_out = norm_numba.native_layer_norm(specs, x, (64,), w, b, 1e-5)
    for n, o in zip(numpy_out, loops_out):
        assert n.dtype == o.dtype and n.shape == o.shape
        np.testing.assert_allclose(o, n, rtol=1e-5, atol=1e-6)
    grad_specs = (specs[0], ((64,), f32), ((64,), f32))
    numpy_grads = normalization.native_layer_norm_backward(am, grad_specs, g, x, (64,), *numpy_out[1:], w, b, [True] * 3)
    loops_grads = norm_numba.native_layer_norm_backward(grad_specs, g, x, (64,), *numpy_out[1:], w, b, [True] * 3)
    for n, o in zip(numpy_grads, loops_grads):
        assert n.dtype == o.dtype and n.shape == o.shape
        np.testing.assert_allclose(o, n, rtol=1e-4, atol=1e-5)
