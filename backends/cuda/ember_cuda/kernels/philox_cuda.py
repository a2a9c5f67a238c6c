"""Philox4x32-10 as a cupy RawKernel, bit-identical to the cpu's by construction and by test.

The CUDA C source is generated here from the constants of the reference implementation
(ember_cpu.array_kernels.philox: PHILOX_M0/M1/W0/W1, PHILOX_ROUNDS), so the two cannot drift
apart. `BLOCK_FUNCTION` is plain C99 apart from the `EMBER_DEVICE` qualifier: the cpu test
suite compiles it with the host C compiler and compares it with the reference word for word
(tests/test_cuda_plugin.py::test_philox_source_matches_the_reference); the GPU check compares the
RawKernel's output with the reference too.

`philox_blocks(seed, base, nblocks)` returns the uint32 words of blocks base .. base+nblocks-1
(counter `(c & 0xffffffff, c >> 32, 0, 0)`, key `(seed & 0xffffffff, seed >> 32)`), the
function `philox.random_bits` takes from the array-module namespace (ember_cuda.xp), so
uniform_/normal_/random_/randperm/dropout on cuda use it, with the reference's transforms.
"""
from __future__ import annotations

from ember_cpu.array_kernels import philox as ref

THREADS = 256

BLOCK_FUNCTION = f"""
#ifndef EMBER_DEVICE
#define EMBER_DEVICE __device__ __forceinline__
#endif
/* Philox4x32-10 (Random123), constants from ember_cpu.array_kernels.philox */
EMBER_DEVICE void ember_philox4x32_10(unsigned int x[4], unsigned int k0, unsigned int k1) {{
    for (int r = 0; r < {ref.PHILOX_ROUNDS}; ++r) {{
        if (r > 0) {{
            k0 += {ref.PHILOX_W0:#010x}u;
            k1 += {ref.PHILOX_W1:#010x}u;
        }}
        unsigned long long p0 = (unsigned long long){ref.PHILOX_M0:#010x}u * x[0];
        unsigned long long p1 = (unsigned long long){ref.PHILOX_M1:#010x}u * x[2];
        unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
        unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
        unsigned int y0 = hi1 ^ x[1] ^ k0;
        unsigned int y2 = hi0 ^ x[3] ^ k1;
        x[0] = y0;
        x[1] = lo1;
        x[2] = y2;
        x[3] = lo0;
    }}
}}

/* the 4 words of block `c` of the stream with this seed (the reference's spec 2) */
EMBER_DEVICE void ember_philox_block(unsigned long long seed, unsigned long long c, unsigned int out[4]) {{
    out[0] = (unsigned int)c;
    out[1] = (unsigned int)(c >> 32);
    out[2] = 0u;
    out[3] = 0u;
    ember_philox4x32_10(out, (unsigned int)seed, (unsigned int)(seed >> 32));
}}
"""

KERNEL_SOURCE = BLOCK_FUNCTION + """
extern "C" __global__ void ember_philox_blocks(unsigned long long seed, unsigned long long base,
                                               unsigned long long nblocks, unsigned int* out) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nblocks) return;
    unsigned int w[4];
    ember_philox_block(seed, base + i, w);     /* unsigned addition wraps mod 2**64 */
    out[4 * i] = w[0];
    out[4 * i + 1] = w[1];
    out[4 * i + 2] = w[2];
    out[4 * i + 3] = w[3];
}
"""

_KERNEL = None


def kernel():
    """The compiled RawKernel (cupy compiles it per device on first launch and caches it on disk)."""
    global _KERNEL
    if _KERNEL is None:
        import cupy

        _KERNEL = cupy.RawKernel(KERNEL_SOURCE, "ember_philox_blocks")
    return _KERNEL


def philox_blocks(seed: int, base: int, nblocks: int):
    """The 4 * nblocks uint32 words of blocks base, base+1, ... of the stream `seed` (on the current device)."""
    import cupy
    import numpy as np

    out = cupy.empty(4 * int(nblocks), dtype=cupy.uint32)
    if nblocks:
        grid = -(-int(nblocks) // THREADS)
        kernel()((grid,), (THREADS,), (np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF),
                                       np.uint64(int(base) & 0xFFFFFFFFFFFFFFFF), np.uint64(nblocks), out))
    return out
