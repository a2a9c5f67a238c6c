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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight_decay,decoupled", [(0.0, False), (0.1, False), (0.1, True)])
def test_adam_switches_to_numba_with_the_same_bits(dtype, weight_decay, decoupled):
    results = []
    for kernel in (EAGER["_fused_adam_"], plugin._numba_after(2, "optimizers_numba", "_fused_adam_",
                                                                EAGER["_fused_adam_"])):
        params, grads, shapes = _state(0, dtype)
        m, v = [np.zeros(s, dtype) for s in shapes], [np.zeros(s, dtype) for s in shapes]
        steps = [np.zeros((), dtype) for _ in shapes]
        for g in grads:                              # calls 3 to 6 run the numba loops
            kernel(None, params, g, m, v, [], steps, lr=1e-2, beta1=0.9, beta2=0.999, weight_decay=weight_decay,
                   eps=1e-8, amsgrad=False, maximize=False, decoupled_weight_decay=decoupled)
        results.append([a.copy() for a in params + m + v])
    from ember_cpu import optimizers_numba                # the loops serve these calls (no eager fallback)
    assert optimizers_numba.fused_adam_(None, params, grads[0], m, v, [], steps, 1e-2, 0.9, 0.999, weight_decay,
                                        1e-8, False, False, decoupled) == ()
    for eager, switched in zip(*results):
        np.testing.assert_array_equal(switched, eager)


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_switches_to_numba_with_the_same_bits(momentum, nesterov):
    results = []
    for kernel in (EAGER["_fused_sgd_"], plugin._numba_after(2, "optimizers_numba", "_fused_sgd_",
                                                               EAGER["_fused_sgd_"])):
        params, grads, shapes = _state(1, np.float32)
        bufs = [np.zeros(s, np.float32) for s in shapes]
        for i, g in enumerate(grads):
            kernel(None, params, g, bufs, weight_decay=0.01, momentum=momentum, lr=0.1, dampening=0.0,
                   nesterov=nesterov, maximize=False, is_first_step=i == 0)
        results.append([a.copy() for a in params + bufs])
    for eager, switched in zip(*results):
        np.testing.assert_array_equal(switched, eager)


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
