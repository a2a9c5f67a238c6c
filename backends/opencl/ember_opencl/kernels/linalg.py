"""bmm as a tiled local-memory GEMM (mm, matmul, linear and conv via im2col reach it).

Each work-group computes a TILE x TILE block of one batch's product: it stages TILE x TILE
tiles of both operands in local memory (read with their own strides, so transposed and
broadcast operands need no copy), accumulates in the opmath type and rounds once on store.
"""
from __future__ import annotations

import numpy as np

from ember.frontend.numpy_interop import to_numpy_dtype

from .. import codegen as cg

TILE = 16


def make(backend) -> dict:
    def bmm(spec, a, b):
        out_dt = to_numpy_dtype(spec[1])
        dev = a.device
        out = backend.new_array(spec[0], out_dt, dev)
        nb, n, k = a.shape
        m = b.shape[2]
        if out.size == 0:
            return out
        acc = cg.opmath(out_dt)
        key = ("bmm", a.dtype.name, b.dtype.name, out_dt.name, TILE)
        T = TILE

        def source() -> str:
            return f"""
__kernel void k(__global const {cg.storage(a.dtype)}* A, long offa, long sab, long san, long sak,
                __global const {cg.storage(b.dtype)}* B, long offb, long sbb, long sbk, long sbm,
                __global {cg.storage(out_dt)}* C, long n, long m, long K) {{
    __local {acc} As[{T}][{T}];
    __local {acc} Bs[{T}][{T}];
    int tx = get_local_id(0), ty = get_local_id(1);
    long col = get_group_id(0) * {T} + tx, row = get_group_id(1) * {T} + ty, bat = get_global_id(2);
    long pa = offa + bat * sab, pb = offb + bat * sbb;
    {acc} s = 0;
    for (long t = 0; t < K; t += {T}) {{
        long ka = t + tx, kb = t + ty;
        As[ty][tx] = (row < n && ka < K) ? ({acc})({cg.load(a.dtype, 'A', 'pa + row * san + ka * sak')}) : ({acc})0;
        Bs[ty][tx] = (kb < K && col < m) ? ({acc})({cg.load(b.dtype, 'B', 'pb + kb * sbk + col * sbm')}) : ({acc})0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < {T}; ++j) s += As[ty][j] * Bs[j][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (row < n && col < m) {{ long o = (bat * n + row) * m + col; {cg.store(out_dt, 'C', 'o', 's', acc)} }}
}}
"""
        kernel = cg.get_kernel(dev, key, source)
        i64 = np.int64
        sa, sb = a.elem_strides, b.elem_strides
        gx, gy = -(-m // T) * T, -(-n // T) * T
        kernel(dev.queue, (gx, gy, nb), (T, T, 1), a.buffer, i64(a.offset), *map(i64, sa), b.buffer,
               i64(b.offset), *map(i64, sb), out.buffer, i64(n), i64(m), i64(k))
        return out

    return {"bmm": bmm}
