"""Philox4x32-10 blocks as a numba-compiled loop: the cpu backend's random bits for large draws.

array_kernels/philox.py computes the blocks with numpy array operations, 32x32->64-bit products
through uint64 temporaries: about 0.2 us per block, so initialising GPT-2 small's 124M parameters took
seconds. This loop computes the same words (integer arithmetic: bit-identical), about 30 times faster,
one block per iteration. philox.py calls it through `philox.BLOCK_FUNCTIONS` (registered by plugin.py)
for draws large enough to pay numba's import, and for every draw once numba is loaded.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .array_kernels.philox import PHILOX_M0, PHILOX_M1, PHILOX_ROUNDS, PHILOX_W0, PHILOX_W1

__all__ = ["philox_blocks"]


@njit(cache=True, nogil=True)
def _blocks(k0, k1, base, out):
    """Fill `out` ((n, 4) uint32) with the blocks of counters base, base + 1, ... (mod 2**64) under key (k0, k1)."""
    m0, m1 = np.uint64(PHILOX_M0), np.uint64(PHILOX_M1)
    w0, w1 = np.uint32(PHILOX_W0), np.uint32(PHILOX_W1)
    shift, low = np.uint64(32), np.uint64(0xFFFFFFFF)
    for i in range(out.shape[0]):
        c = base + np.uint64(i)
        x0, x1 = np.uint32(c & low), np.uint32(c >> shift)
        x2, x3 = np.uint32(0), np.uint32(0)
        key0, key1 = k0, k1
        for r in range(PHILOX_ROUNDS):
            if r > 0:
                key0 = np.uint32(key0 + w0)
                key1 = np.uint32(key1 + w1)
            p0 = m0 * np.uint64(x0)
            p1 = m1 * np.uint64(x2)
            x0, x1, x2, x3 = (np.uint32(p1 >> shift) ^ x1 ^ key0, np.uint32(p1 & low),
                              np.uint32(p0 >> shift) ^ x3 ^ key1, np.uint32(p0 & low))
        out[i, 0] = x0
        out[i, 1] = x1
        out[i, 2] = x2
        out[i, 3] = x3


def philox_blocks(seed: int, base: int, nblocks: int) -> np.ndarray:
    """The nblocks * 4 words of stream `seed` from block `base`, as a 1-D uint32 array (philox.random_bits's
    contract for a fused block function)."""
    out = np.empty((nblocks, 4), np.uint32)
    _blocks(np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32), np.uint64(base), out)
    return out.reshape(-1)
