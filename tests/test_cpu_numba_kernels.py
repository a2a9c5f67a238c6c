"""The cpu backend's switch to numba-compiled kernels (ember_cpu/plugin.py NUMBA_KERNELS): the optimizer
updates switch after the eager kernel's first calls and must give its bits, before and after."""
from __future__ import annotations

import numpy as np
import pytest

import ember

from ember_cpu import plugin
from ember_cpu.array_kernels import make_kernels
from ember.core.numpy_interop import numpy_dtype_lookup

EAGER = make_kernels(np, numpy_dtype_lookup())


def _state(seed: int, dtype):
    rng = np.random.default_rng(seed)
    shapes = [(7, 5), (5,), (3, 4, 2)]
    params = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(6)]
    return params, grads, shapes


def _eager_and_switched(name: str, run) -> list:
    """`run(kernel, state)` over a fresh `state` dict for the eager kernel of `name` and for the kernel that
    switches to numba after two calls (so a run's calls 3 on take the numba loops); asserts that both end
    with the same bits and returns the switching run's state."""
    results, state = [], {}
    for kernel in (EAGER[name], plugin._numba_after(2, "optimizers_numba", name, EAGER[name])):
        state = {}
        results.append([a.copy() for a in run(kernel, state)])
    for eager, switched in zip(*results):
        np.testing.assert_array_equal(switched, eager)
    return state


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_decay,decoupled", [(0.0, False), (0.1, False), (0.1, True)])
def test_adam_switches_to_numba_with_the_same_bits(dtype, weight_decay, decoupled):
    def run(kernel, state):
        params, grads, shapes = _state(0, dtype)
        m, v = [np.zeros(s, dtype) for s in shapes], [np.zeros(s, dtype) for s in shapes]
        steps = [np.zeros((), dtype) for _ in shapes]
        for g in grads:
            kernel(None, params, g, m, v, [], steps, lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=weight_decay,
                   eps=1e-8, amsgrad=False, maximize=False, decoupled_weight_decay=decoupled)
        state.update(params=params, g=grads[0], m=m, v=v, steps=steps)
        return params + m + v
    st = _eager_and_switched("_fused_adam_", run)
    from ember_cpu import optimizers_numba                # the loops serve these calls (no eager fallback)
    assert optimizers_numba.fused_adam_(None, st["params"], st["g"], st["m"], st["v"], [], st["steps"], 1e-2, 0.9,
                                        0.999, weight_decay, 1e-8, False, False, decoupled) == ()


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_switches_to_numba_with_the_same_bits(momentum, nesterov):
    def run(kernel, state):
        params, grads, shapes = _state(1, np.float32)
        bufs = [np.zeros(s, np.float32) for s in shapes]
        for i, g in enumerate(grads):
            kernel(None, params, g, bufs, weight_decay=0.01, momentum=momentum, lr=0.1, dampening=0.0,
                   nesterov=nesterov, maximize=False, is_first_step=i == 0)
        return params + bufs
    _eager_and_switched("_fused_sgd_", run)


def test_the_switch_is_in_the_cpu_kernel_table():
    table = plugin.CPUBackend().kernels()
    assert set(plugin.NUMBA_KERNELS) <= set(table)
    assert all(table[name].__name__ == name for name in plugin.NUMBA_KERNELS)


@pytest.mark.parametrize("seed,offset,n", [(0, 0, 10), (2**64 - 1, 4 * (2**64 - 3), 50), (123456789123, 400, 10003)])
def test_philox_loop_gives_numpys_words(seed, offset, n):
    """The numba Philox loop against the numpy block function (counters wrapping at 2**64 included)."""
    from ember_cpu import philox_numba
    from ember_cpu.array_kernels import philox

    saved = dict(philox.BLOCK_FUNCTIONS)
    philox.BLOCK_FUNCTIONS.clear()                    # the numpy arithmetic alone
    try:
        words, new_offset = philox.random_bits(np, seed, offset, n)
    finally:
        philox.BLOCK_FUNCTIONS.update(saved)
    blocks = -(-n // 4)
    assert new_offset == offset + 4 * blocks
    np.testing.assert_array_equal(philox_numba.philox_blocks(seed, (offset // 4) % 2**64, blocks)[:n], words)
    # and through the registration random_bits consults, once the loop is loaded
    loop = philox.BlockFunction(lambda: philox_numba.philox_blocks, worth_loading=1, min_blocks=1)
    philox.BLOCK_FUNCTIONS["numpy"] = loop
    try:
        again, again_offset = philox.random_bits(np, seed, offset, n)
    finally:
        philox.BLOCK_FUNCTIONS.clear()
        philox.BLOCK_FUNCTIONS.update(saved)
    assert loop.loaded is philox_numba.philox_blocks and again_offset == new_offset
    np.testing.assert_array_equal(again, words)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil_mode", [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 3, 7, 9), (3, 2), (1, 2), (1, 1), (1, 2), True),
    ((3, 5, 6), (2, 2), (), (1, 0), (1, 1), True),
    ((2, 2, 9, 8), (3, 3), (2, 1), (1, 1), (1, 1), False),       # each compiled-in kernel size and the general loop
])
def test_max_pool_loop_picks_what_the_eager_kernel_picks(dtype, shape, kernel, stride, padding, dilation, ceil_mode):
    from ember_cpu import pool_numba

    x = np.random.default_rng(4).integers(-2, 3, shape).astype(dtype)      # ties
    x.reshape(-1)[::7] = np.nan                                           # NaNs win, the last of a window
    eager = EAGER["max_pool2d_with_indices"]
    loop = plugin._numba_after(0, "pool_numba", "max_pool2d_with_indices", eager)
    dt = ember.float32 if dtype == np.float32 else ember.float64
    specs = [((), dt), ((), ember.int64)]
    want = eager(specs, x, kernel, stride, padding, dilation, ceil_mode)
    got = loop(specs, x, kernel, stride, padding, dilation, ceil_mode)
    assert pool_numba.max_pool2d_with_indices(specs, x, kernel, stride, padding, dilation, ceil_mode) \
        is not NotImplemented
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_decay,maximize", [(0.0, False), (0.1, True)])
def test_adadelta_switches_to_numba_with_the_same_bits(dtype, weight_decay, maximize):
    def run(kernel, state):
        params, grads, shapes = _state(1, dtype)
        sq, acc = [np.zeros(s, dtype) for s in shapes], [np.zeros(s, dtype) for s in shapes]
        steps = [np.zeros((), dtype) for _ in shapes]
        for g in grads:
            kernel(None, params, g, sq, acc, steps, lr=0.5, rho=0.8, eps=1e-6, weight_decay=weight_decay,
                   maximize=maximize)
        state.update(params=params, g=grads[0], sq=sq, acc=acc, steps=steps, n=len(grads))
        return params + sq + acc + steps
    st = _eager_and_switched("_fused_adadelta_", run)
    assert [float(s) for s in st["steps"]] == [st["n"]] * len(st["steps"])
    from ember_cpu import optimizers_numba                # the loops serve these calls (no eager fallback)
    assert optimizers_numba.fused_adadelta_(None, st["params"], st["g"], st["sq"], st["acc"], st["steps"], 0.5, 0.8,
                                            1e-6, weight_decay, maximize) == ()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,w_shape,stride,padding,dilation,groups", [
    ((4, 3, 8, 8), (5, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),       # the digits CNN's kind of layer
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 3), (1, 2), (2, 1), 2),      # strides that skip rows, padding, groups
])
def test_convolution_input_gradient_loop_gives_the_eager_bits(dtype, x_shape, w_shape, stride, padding, dilation,
                                                              groups):
    from ember_cpu import conv_numba

    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)
    out = [(x_shape[2 + i] + 2 * padding[i] - dilation[i] * (w_shape[2 + i] - 1) - 1) // stride[i] + 1
           for i in range(2)]
    g = rng.standard_normal((x_shape[0], w_shape[0], *out)).astype(dtype)
    dt = ember.float32 if dtype == np.float32 else ember.float64
    specs = [(x_shape, dt), (w_shape, dt), ((w_shape[0],), dt)]
    args = (g, x, w, [w_shape[0]], list(stride), list(padding), list(dilation), False, [0, 0], groups,
            [True, True, True])
    eager = EAGER["convolution_backward"]
    want = eager(specs, *args)
    got = plugin._numba_after(0, "conv_numba", "convolution_backward", eager)(specs, *args)
    assert conv_numba.convolution_backward(specs, *args) is not NotImplemented
    for a, b in zip(want, got):
        assert a.dtype == b.dtype and a.shape == b.shape and b.flags.c_contiguous
        np.testing.assert_array_equal(b, a)
    # calls the loop does not take: the eager kernel's (no input gradient; a 1-d convolution)
    assert conv_numba.convolution_backward([None] + specs[1:], *args) is NotImplemented
    assert conv_numba.convolution_backward(specs, g[..., 0], x[..., 0], w[..., 0], *args[3:]) is NotImplemented


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_loops_give_the_eager_bits(dtype):
    from ember_cpu import activations_numba

    x = np.random.default_rng(6).standard_normal((40, 7, 8)).astype(dtype)     # past RELU_LOOP_MIN elements
    x.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
    g = np.random.default_rng(7).standard_normal(x.shape).astype(dtype)
    g.reshape(-1)[6:8] = [-0.0, np.nan]
    dt = ember.float32 if dtype == np.float32 else ember.float64
    for name, args in (("relu", (x,)), ("threshold_backward", (g, x, 0)), ("threshold_backward", (g, x, 0.5))):
        eager = EAGER[name]
        want = eager((x.shape, dt), *args)
        got = plugin._numba_after(0, "activations_numba", name, eager)((x.shape, dt), *args)
        assert activations_numba.KERNELS[name]((x.shape, dt), *args) is not NotImplemented
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))   # bits, -0.0 too
    # calls the loops do not take: the eager kernel's
    assert activations_numba.relu((x.shape, dt), x[:, ::2]) is NotImplemented
    assert activations_numba.threshold_backward((x.shape, dt), g[:1], x, 0) is NotImplemented
    assert activations_numba.relu(((3,), ember.int64), np.arange(3)) is NotImplemented
    small = x[:2]                                           # numpy's maximum is quicker on a few elements
    assert small.size < activations_numba.RELU_LOOP_MIN and activations_numba.relu((small.shape, dt), small) \
        is NotImplemented


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [-1, 3])
def test_embedding_backward_loop_gives_the_eager_bits(dtype, padding_idx):
    """The rows added in the indices' order, as numpy's add.at: the same bits, repeated indices included."""
    from ember_cpu import indexing_numba

    rng = np.random.default_rng(5)
    indices = rng.integers(0, 10, (6, 7))
    grad = rng.standard_normal((6, 7, 5)).astype(dtype)
    spec = ((10, 5), ember.float32 if dtype == np.float32 else ember.float64)
    eager = EAGER["embedding_dense_backward"](spec, grad, indices, 10, padding_idx, False)
    loops = indexing_numba.embedding_dense_backward(spec, grad, indices, 10, padding_idx, False)
    assert loops.dtype == eager.dtype and loops.tobytes() == eager.tobytes()
    assert not loops[3].any() if padding_idx == 3 else loops[3].any()
    # what the loop does not take: counts, an index outside the table
    assert indexing_numba.embedding_dense_backward(spec, grad, indices, 10, padding_idx, True) is NotImplemented
    assert indexing_numba.embedding_dense_backward(spec, grad, indices, 9, padding_idx, False) is NotImplemented


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_cross_entropy_loops_give_the_eager_kernels_bits(dtype, reduction):
    """cross_entropy_numba.py against the eager kernels, forward and backward, bit for bit: NaN, infinite and
    signed-zero rows, int32 and int64 targets; calls the loops do not take are declined."""
    from ember_cpu import cross_entropy_numba as loops

    rng = np.random.default_rng(reduction)
    edt = ember.float32 if dtype == np.float32 else ember.float64
    for trial in range(40):
        n, c = int(rng.integers(1, 40)), int(rng.integers(1, 20))
        x = (rng.standard_normal((n, c)) * rng.choice([0.1, 10, 100])).astype(dtype)
        x[0, trial % c] = [np.nan, np.inf, -np.inf, -0.0][trial % 4]
        target = rng.integers(0, c, n).astype(np.int64 if trial % 2 else np.int32)
        specs = (((n,) if reduction == 0 else (), edt), ((n,), edt))
        eager = EAGER["_cross_entropy_indices"](specs, x, target, None, reduction, -100, 0.0)
        fused = loops.cross_entropy_indices(specs, x, target, None, reduction, -100, 0.0)
        for e, f in zip(eager, fused):
            np.testing.assert_array_equal(f, e)
        grad = rng.standard_normal((n,) if reduction == 0 else ()).astype(dtype)
        args = (grad, x, eager[1], target, None, reduction, -100, 0.0)
        np.testing.assert_array_equal(loops.cross_entropy_indices_backward(((n, c), edt), *args),
                                      EAGER["_cross_entropy_indices_backward"](((n, c), edt), *args))
    x, spec = np.zeros((2, 3), dtype), (((), edt), ((2,), edt))
    assert loops.cross_entropy_indices(spec, x, np.array([0, 3]), None, 1, -100, 0.0) is NotImplemented
    assert loops.cross_entropy_indices(spec, x, np.array([0, 1]), np.ones(3, dtype), 1, -100, 0.0) is NotImplemented
    assert loops.cross_entropy_indices(spec, x, np.array([0, 1]), None, 1, 1, 0.0) is NotImplemented
