"""The cpu backend's fused attention (scaled_dot_product_attention without mask or dropout): numba loops for
the softmax passes around numpy's products and exp (ember_cpu.attention_numba) for float32/float64, the numpy
kernel for float16/bfloat16. Checked against torch (outputs and the three gradients, causal or not, with
fewer keys than queries) and against the numpy kernel it replaces, NaN rows included."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("keys", [6, 4])
def test_matches_torch(dtype, is_causal, keys):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((2, 3, 6, 8), (2, 3, keys, 8), (2, 3, keys, 5))]
    ours = [ember.tensor(a).to(getattr(ember, dtype)).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a).to(getattr(torch, dtype)).requires_grad_() for a in arrays]
    y = F.scaled_dot_product_attention(*ours, is_causal=is_causal)
    z = torch.nn.functional.scaled_dot_product_attention(*theirs, is_causal=is_causal)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3}[dtype]
    assert y.dtype == ours[0].dtype and list(y.shape) == list(z.shape)
    np.testing.assert_allclose(y.detach().float().numpy(), z.detach().float().numpy(), rtol=tol, atol=tol)
    seed = rng.standard_normal(tuple(z.shape)).astype(np.float32)
    y.backward(ember.tensor(seed).to(y.dtype))
    z.backward(torch.tensor(seed).to(z.dtype))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.float().numpy(), t.grad.float().numpy(), rtol=tol, atol=tol)


def test_loops_agree_with_the_numpy_kernel():
    """Within float32's rounding (the row sums are summed in another order), on strided views of one qkv
    projection as a transformer passes them, with a logsumexp gradient and without; a NaN row stays NaN."""
    from ember.core.numpy_interop import to_numpy_dtype
    from ember_cpu import attention_numba
    from ember_cpu.array_kernels import attention
    from ember_cpu.array_kernels.context import ArrayModule

    am = ArrayModule(np, to_numpy_dtype)
    rng = np.random.default_rng(1)
    qkv = rng.standard_normal((2, 16, 3 * 4 * 8)).astype(np.float32)
    q, k, v = (qkv[..., i * 32:(i + 1) * 32].reshape(2, 16, 4, 8).transpose(0, 2, 1, 3) for i in range(3))
    q = q.copy()
    q[1, 2, 5, 0] = np.nan
    f32 = ember.float32
    specs = (((2, 4, 16, 8), f32), ((2, 4, 16), f32))
    numpy_out = attention.sdpa_fused(am, specs, q, k, v, True, 0.3)
    loops_out = attention_numba.sdpa_fused(specs, q, k, v, True, 0.3)
    for n, o in zip(numpy_out, loops_out):
        assert n.dtype == o.dtype and n.shape == o.shape
        np.testing.assert_allclose(o, n, rtol=1e-5, atol=1e-6)
    assert np.isnan(loops_out[0][1, 2, 5]).all() and np.isnan(loops_out[1][1, 2, 5])
    q[1, 2, 5, 0] = 0.0
    lse = attention.sdpa_fused(am, specs, q, k, v, True, 0.3)[1]
    g, gl = rng.standard_normal((2, 4, 16, 8)).astype(np.float32), rng.standard_normal((2, 4, 16)).astype(np.float32)
    grad_specs = (((2, 4, 16, 8), f32),) * 3
    for grad_lse in (None, gl):
        numpy_grads = attention.sdpa_fused_backward(am, grad_specs, g, grad_lse, q, k, v, lse, True, 0.3, [True] * 3)
        loops_grads = attention_numba.sdpa_fused_backward(grad_specs, g, grad_lse, q, k, v, lse, True, 0.3, [True] * 3)
        for n, o in zip(numpy_grads, loops_grads):
            assert n.dtype == o.dtype and n.shape == o.shape
            np.testing.assert_allclose(o, n, rtol=1e-5, atol=1e-5)
    # what the loops do not take: float16, a non-positive scale, no output gradient
    assert attention_numba.sdpa_fused(specs, q.astype(np.float16), k, v, True, 0.3) is NotImplemented
    assert attention_numba.sdpa_fused(specs, q, k, v, True, -0.3) is NotImplemented
    assert attention_numba.sdpa_fused_backward(grad_specs, None, gl, q, k, v, lse, True, 0.3, [True] * 3) \
        is NotImplemented
