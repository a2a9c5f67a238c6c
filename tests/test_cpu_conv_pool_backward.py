"""The cpu backend's native convolution_backward and max_pool2d_with_indices_backward kernels against
torch's gradients: strides, padding, dilation, groups, transposed convolutions (stride 1 ones as full convolutions), overlapping pooling
windows (accumulated) and disjoint ones (assigned), ceil_mode, unbatched inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

CONV = [  # (transposed, x shape, w shape, stride, padding, dilation, groups, output_padding)
    (False, (2, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2, (0, 0)),
    (False, (3, 3, 5, 5), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, (0, 0)),
    (False, (2, 2, 9), (4, 1, 3), (3,), (2,), (2,), 2, (0,)),
    (True, (2, 4, 3, 4), (4, 3, 3, 2), (2, 1), (1, 0), (1, 1), 1, (1, 0)),
    (True, (1, 6, 4, 4), (6, 1, 2, 2), (2, 2), (0, 1), (2, 1), 3, (0, 0)),
    # stride 1: computed as a convolution of the padded input with the flipped kernel
    (True, (2, 4, 5, 6), (4, 3, 3, 2), (1, 1), (3, 1), (2, 1), 2, (1, 0)),     # padding past the reach: cropped
    (True, (2, 3, 7), (3, 5, 4), (1,), (0,), (1,), 1, (0,)),
]


@pytest.mark.parametrize("case", CONV, ids=range(len(CONV)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_convolution_gradients_match_torch(case, dtype):
    transposed, xs, ws, stride, padding, dilation, groups, opad = case
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    bias = rng.standard_normal(ws[1] * groups if transposed else ws[0])
    grads = []
    for lib in (ember, torch):
        args = [lib.tensor(a).to(getattr(lib, dtype)).requires_grad_() for a in (x, w, bias)]
        y = lib.convolution(*args, list(stride), list(padding), list(dilation), transposed, list(opad), groups)
        seed = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape))).to(getattr(lib, dtype))
        y.backward(seed)
        grads.append([a.grad.detach().numpy() for a in args])
    tol = 1e-5 if dtype == "float32" else 1e-12
    for ours, theirs in zip(*grads):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


DIRECT = [case for case in CONV if not case[0]] + [
    (False, (2, 2, 4, 5, 5), (4, 1, 2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2, (0, 0, 0)),   # 3-D
    (False, (2, 3, 5, 5), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 1, (0, 0)),                 # 1x1 kernel
]


@pytest.mark.parametrize("case", DIRECT, ids=range(len(DIRECT)))
@pytest.mark.parametrize("positions_innermost", [True, False])
def test_both_im2col_layouts_match_torch(case, positions_innermost, monkeypatch):
    """The cpu kernels gather im2col columns with the output positions innermost or the channels innermost
    (nn_layers.positions_innermost_pays picks by shape): each layout, forced, gives torch's output and
    gradients on every geometry."""
    monkeypatch.setattr("ember_cpu.array_kernels.nn_layers.positions_innermost_pays",
                        lambda *args: positions_innermost)
    _, xs, ws, stride, padding, dilation, groups, _ = case
    rng = np.random.default_rng(4)
    x, w, bias = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    results = []
    for lib in (ember, torch):
        args = [lib.tensor(a).requires_grad_() for a in (x, w, bias)]
        y = lib.convolution(*args, list(stride), list(padding), list(dilation), False, [0] * (len(xs) - 2), groups)
        y.backward(lib.tensor(np.random.default_rng(5).standard_normal(tuple(y.shape))))
        results.append([y.detach().numpy()] + [a.grad.detach().numpy() for a in args])
    for ours, theirs in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


POOL = [  # (x shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),      # disjoint windows: assigned
    ((2, 3, 7, 9), (3, 3), (1, 2), (1, 1), (1, 1), False),      # overlapping: accumulated
    ((1, 2, 9, 9), (2, 3), (2, 2), (1, 0), (2, 1), True),
    ((3, 6, 5), (2, 2), (2, 1), (0, 1), (1, 1), True),          # unbatched
]


@pytest.mark.parametrize("case", POOL, ids=range(len(POOL)))
def test_max_pool_gradient_matches_torch(case):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    x = np.random.default_rng(2).integers(-3, 4, shape).astype(np.float32)   # ties: the first maximum wins
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x).requires_grad_()
        y = lib.nn.functional.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode)
        y.backward(lib.tensor(np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(np.float32)))
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-6)
