"""sort.stable: a stable sort along one dim, any dtype and strides, ascending or descending.

Every element is sorted as the pair (key, original position), so the order is total and any
sorting network is stable. NaN counts as the largest value (last ascending, first descending);
-0.0 equals 0.0; equal keys keep their order in both directions, as PyTorch's stable sort.
Keys are compared in the opmath type (float16/bfloat16 widen to float exactly).

1. `segments`: one work-group per segment of S elements of a row (S a power of two, at most
   what local memory holds): a bitonic sort of the (key, position) pairs in local memory,
   padded past the row's end with entries that sort last. Rows of up to S elements are done.
2. `merge` passes, for longer rows: sorted runs of width w pair up into runs of 2w; each
   element finds its place by a binary search of its rank in the partner run (ranks are
   unambiguous because the order is total), one work-item per element, ping-pong buffers.
3. `finish`: values are copied bit for bit from the input at the sorted positions (NaN
   payloads and -0.0 kept), positions become the int64 indices.

The kernels of every dtype form one program: the rank and strides outside `dim` reach them as
a table of per-row offsets (computed on the host), segment size and direction as arguments,
so a process compiles one sort program, not one per dtype and shape.

`sort_stable(backend, specs, a, ...)` is the kernel (kernels/table.py); the table `KERNELS` ends
the module.
"""
from __future__ import annotations

import operator

import numpy as np

from ember.core import dtype as _dt
from ember.core.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from ..array import CLArray

MAX_SEGMENT = 2048
RAW = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def _before(ct: str, name: str) -> str:
    """OpenCL C `before_<name>(ka, ia, kb, ib, desc)`: whether (ka, ia) sorts ahead of (kb, ib)."""
    if ct in cg.FLOAT_CL:
        nan = ("int an = isnan(ka), bn = isnan(kb);\n"
               "    if (an != bn) return desc ? an : bn;\n"
               "    if (!an && ka != kb) ")
    else:
        nan = "if (ka != kb) "
    return (f"inline int before_{name}({ct} ka, long ia, {ct} kb, long ib, int desc) {{\n"
            f"    {nan}return desc ? ka > kb : ka < kb;\n"
            "    return ia < ib;\n}\n")


def row_offsets(shape, dims, strides_list, offsets) -> np.ndarray:
    """[rows, len(strides_list)] int64: per row (row-major over `dims`), each operand's element offset."""
    sizes = [shape[k] for k in dims]
    rows = int(np.prod(sizes)) if sizes else 1
    table = np.empty((rows, len(strides_list)), np.int64)
    idx = np.indices(sizes).reshape(len(sizes), rows) if sizes else np.zeros((0, 1), np.int64)
    for j, (st, off) in enumerate(zip(strides_list, offsets)):
        table[:, j] = off + (idx * np.array([st[k] for k in dims], np.int64)[:, None]).sum(0)
    return table


def segment_size(dev, n: int, key_bytes: int) -> int:
    """The bitonic segment: the next power of two >= n, capped by local memory and MAX_SEGMENT."""
    local = int(getattr(dev.cl_device, "local_mem_size", 32768))
    cap = MAX_SEGMENT
    while cap > 64 and cap * (key_bytes + 8) > local // 2:
        cap //= 2
    s = 1
    while s < min(n, cap):
        s *= 2
    return s


DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


def program_source() -> str:
    """Every dtype's kernels in one program (float64's when the device has fp64)."""
    parts = []
    for name in DTYPES:
        src = _source(to_numpy_dtype(getattr(_dt, name)), cg.OPMATH[name], name)
        parts.append(f"#ifdef EMBER_FP64\n{src}#endif\n" if name == "float64" else src)
    return "".join(parts)


def _source(dtype, ct: str, name: str) -> str:
    """The kernels of `dtype`: `seg_<name>` (bitonic segments), `merge_<name>` (one merge pass),
    `fin_<name>` (the outputs)."""
    st, raw = cg.storage(dtype), RAW[np.dtype(dtype).itemsize]
    return _before(ct, name) + f"""
__kernel void seg_{name}(__global const {st}* a, __global const long* rowoff, long n, long ast, long nseg,
                  __global {ct}* ko, __global long* po, int desc, int S, __local {ct}* lk, __local long* lp) {{
    long g = get_group_id(0); int lid = get_local_id(0), L = get_local_size(0);
    long r = g / nseg, s0 = (g % nseg) * S, p = rowoff[2 * r];
    for (int i = lid; i < S; i += L) {{
        long j = s0 + i;
        if (j < n) {{ lk[i] = ({ct})({cg.load(dtype, 'a', 'p + j * ast')}); lp[i] = j; }}
        else {{ lk[i] = ({ct})0; lp[i] = n + i; }}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 2; k <= S; k <<= 1) {{
        for (int j = k >> 1; j > 0; j >>= 1) {{
            for (int i = lid; i < S; i += L) {{
                int ixj = i ^ j;
                if (ixj > i) {{
                    {ct} ka = lk[i], kb = lk[ixj]; long ia = lp[i], ib = lp[ixj];
                    int swap_ = (ia >= n || ib >= n) ? (ia > ib) : !before_{name}(ka, ia, kb, ib, desc);
                    if ((i & k) != 0) swap_ = !swap_;
                    if (swap_) {{ lk[i] = kb; lk[ixj] = ka; lp[i] = ib; lp[ixj] = ia; }}
                }}
            }}
            barrier(CLK_LOCAL_MEM_FENCE);
        }}
    }}
    for (int i = lid; i < S; i += L) {{
        long j = s0 + i;
        if (j < n) {{ ko[r * n + j] = lk[i]; po[r * n + j] = lp[i]; }}
    }}
}}

__kernel void merge_{name}(__global const {ct}* ki, __global const long* pi, __global {ct}* ko, __global long* po,
                    long n, long w, long total, int desc) {{
    long e = get_global_id(0); if (e >= total) return;
    long r = e / n, p = e % n, base = r * n;
    long as_ = p / w * w, bs = as_ ^ w;
    {ct} k0 = ki[e]; long i0 = pi[e];
    long out = p;
    if (bs < n) {{
        long lo = 0, hi = min(w, n - bs);
        while (lo < hi) {{
            long mid = (lo + hi) >> 1;
            if (before_{name}(ki[base + bs + mid], pi[base + bs + mid], k0, i0, desc)) lo = mid + 1; else hi = mid;
        }}
        out = min(as_, bs) + (p - as_) + lo;
    }}
    ko[base + out] = k0; po[base + out] = i0;
}}

__kernel void fin_{name}(__global const {raw}* a, __global const long* rowoff, long n, long ast, long vst,
                  __global const long* pi, __global {raw}* vo, __global long* io, long total) {{
    long e = get_global_id(0); if (e >= total) return;
    long r = e / n, j = e % n, src = pi[e], q = rowoff[2 * r + 1] + j * vst;
    vo[q] = a[rowoff[2 * r] + src * ast];
    io[q] = src;
}}
"""


def sort_stable(backend, specs, a: CLArray, stable=None, dim=-1, descending=False):
    """(values, int64 indices) of `a` sorted along `dim`: segments, merge passes, finish (see above)."""
    import pyopencl as cl

    dev = a.device
    values = backend.new_array(a.shape, a.dtype, dev)
    indices = backend.new_array(a.shape, np.int64, dev)
    if a.size == 0:
        return values, indices
    if a.ndim == 0:
        a1, v1, i1 = (x.view((1,), (1,), x.offset) for x in (a, values, indices))
        d = 0
    else:
        a1, v1, i1 = a, values, indices
        d = operator.index(dim) % a.ndim
    n = a1.shape[d]
    rows = a1.size // n
    ct = cg.opmath(a.dtype)
    ctn = np.dtype(cg.NUMPY_OF_CL[ct])
    desc = np.int32(bool(descending))
    S = segment_size(dev, n, ctn.itemsize)
    L = max(1, min(S // 2, dev.max_wg, 256))
    outer = [k for k in range(a1.ndim) if k != d]
    rowoff = backend.from_host(row_offsets(a1.shape, outer, [a1.elem_strides, v1.elem_strides], [a1.offset, 0]),
                               dev.info.index)
    keys = [backend.new_array((rows * n,), ctn, dev) for _ in range(2)]
    pos = [backend.new_array((rows * n,), np.int64, dev) for _ in range(2)]
    ks = cg.get_program(dev, ("sort",), program_source)
    kseg, kmerge, kfin = (ks[f"{k}_{a.dtype.name}"] for k in ("seg", "merge", "fin"))
    i64 = np.int64
    nseg = -(-n // S)
    cg.launch_nd(dev, kseg, (rows * nseg * L,), (L,),
                 (a1.buffer, rowoff.buffer, i64(n), i64(a1.elem_strides[d]), i64(nseg), keys[0].buffer, pos[0].buffer,
                  desc, np.int32(S), cl.LocalMemory(S * ctn.itemsize), cl.LocalMemory(S * 8)))
    cur, w, total = 0, S, rows * n
    while w < n:
        cg.launch(dev, kmerge, total, [keys[cur].buffer, pos[cur].buffer, keys[1 - cur].buffer,
                                       pos[1 - cur].buffer, i64(n), i64(w), i64(total), desc])
        cur, w = 1 - cur, 2 * w
    cg.launch(dev, kfin, total, [a1.buffer, rowoff.buffer, i64(n), i64(a1.elem_strides[d]),
                                 i64(v1.elem_strides[d]), pos[cur].buffer, v1.buffer, i1.buffer, i64(total)])
    return values, indices


KERNELS = {"sort.stable": sort_stable}
