"""gather and scatter_add along one dimension (any strides), with the cpu's bounds errors; nonzero.

gather: one work-item per output element. scatter_add: one work-item per position of the
index *outside* `dim`, looping along `dim` in order, so colliding indices (which only share
such a position) add sequentially: no atomics, deterministic, numpy's `add.at` order.
Index bounds are data: one work-group finds the index's smallest and largest elements, the only two
numbers read back, checked first.

nonzero: count, prefix-sum, scatter. Work-item c counts the nonzero elements of its chunk of
NZ_CHUNK consecutive elements (a strided input is first copied to row-major order); one work-group turns the counts
into exclusive offsets (each work-item sums a stretch serially, then a scan of the stretch
totals in local memory) and stores the total, the only value read back (it is the output's
row count); then each work-item writes the coordinates of its chunk's nonzero elements from
its offset on, so rows come in row-major order, as PyTorch's. One program holds the
kernels of every dtype (the rank is an argument), so a process compiles it once.

Each kernel is `fn(backend, spec, *op_args)` (kernels/table.py); the table `KERNELS` follows them.
"""
from __future__ import annotations

import numpy as np

from ember.core.errors import ArgumentValueError
from ember.core import dtype as _dt
from ember.core.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from . import memory


def _offset_code(var: str, shape_names: list[str], terms: dict[str, list[str]]) -> str:
    """C code decomposing linear index `var` over dims `shape_names`, adding c*stride to each pointer."""
    lines = [f"{{ long r_ = {var}; long c_;"]
    for d in range(len(shape_names) - 1, -1, -1):
        lines.append(f"c_ = r_ % {shape_names[d]}; r_ /= {shape_names[d]};")
        lines += [f"{p} += c_ * {sts[d]};" for p, sts in terms.items() if sts[d] is not None]
    lines.append("}")
    return " ".join(lines)


RANGE_GROUP = 64      # work-items of the one work-group that finds an index's range (fewer where a device allows fewer)


def check_bounds(backend, op, index, size, d):
    """Raise the cpu's error if an element of `index` is outside [0, size): one launch of one work-group
    finds its smallest and largest elements, and only those two numbers are read back (one wait)."""
    import pyopencl as cl

    if index.size == 0:
        return
    i1 = one_d(index)
    nd = i1.ndim
    shp = [f"sh{k}" for k in range(nd)]
    dev = index.device
    group = min(RANGE_GROUP, dev.max_wg)
    key = ("index range", index.dtype.name, nd, group)

    def source() -> str:
        params = ["long n", f"__global const {cg.storage(index.dtype)}* ix", "long off_i", "__global long* out"]
        params += [f"long sh{k}, long ist{k}" for k in range(nd)]
        offs = _offset_code("e", shp, {"pi": [f"ist{k}" for k in range(nd)]})
        return (f"__kernel void k({', '.join(params)}) {{\n"
                f" __local long lo[{group}], hi[{group}];\n"
                f" long t = get_local_id(0), mn = LONG_MAX, mx = LONG_MIN;\n"
                f" for (long e = t; e < n; e += {group}) {{ long pi = off_i; {offs}\n"
                f"  long v = (long)ix[pi]; mn = min(mn, v); mx = max(mx, v); }}\n"
                f" lo[t] = mn; hi[t] = mx; barrier(CLK_LOCAL_MEM_FENCE);\n"
                f" if (t == 0) {{ for (int j = 1; j < {group}; ++j) {{ mn = min(mn, lo[j]); mx = max(mx, hi[j]); }}\n"
                f"  out[0] = mn; out[1] = mx; }}\n}}\n")
    kernel = cg.get_kernel(dev, key, source)
    found = backend.new_array((2,), np.int64, dev)
    i64 = np.int64
    args = [i64(i1.size), i1.buffer, i64(i1.offset), found.buffer]
    for k in range(nd):
        args += [i64(i1.shape[k]), i64(i1.elem_strides[k])]
    cg.launch(dev, kernel, group, args, local=group)
    lo_hi = np.empty(2, dtype=np.int64)
    cl.enqueue_copy(dev.queue, lo_hi, found.buffer, src_offset=found.offset * 8, is_blocking=True)
    for v in (int(lo_hi[0]), int(lo_hi[1])):
        if v < 0 or v >= size:
            raise ArgumentValueError(f"{op}(): index {v} is out of bounds for dimension {d} with size {size} "
                                     "(argument 'index')")


def one_d(a):
    """`a` as a 1-element 1-d view when it is 0-d (the kernels index at least one dim)."""
    return a.view((1,), (1,), a.offset) if a.ndim == 0 else a


def gather(backend, spec, a, dim, index, sparse_grad=False):
    out = backend.new_array(spec[0], a.dtype, a.device)
    if index.size == 0:
        return out
    a1, i1 = one_d(a), one_d(index)
    d = dim % a1.ndim
    check_bounds(backend, "gather", i1, a1.shape[d], d)
    nd = i1.ndim
    key = ("gather", a.dtype.name, index.dtype.name, nd, d)
    shp = [f"sh{k}" for k in range(nd)]

    def source() -> str:
        bits = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}[a.dtype.itemsize]     # a raw copy of each element
        params = ["long n", f"__global {bits}* o", f"__global const {bits}* a",
                  "long off_a", f"__global const {cg.storage(index.dtype)}* ix", "long off_i"]
        params += [f"long sh{k}, long ast{k}, long ist{k}" for k in range(nd)]
        offs = _offset_code("gid", shp, {"pa": [None if k == d else f"ast{k}" for k in range(nd)],
                                         "pi": [f"ist{k}" for k in range(nd)]})
        return (f"__kernel void k({', '.join(params)}) {{\n long gid = get_global_id(0); if (gid >= n) return;\n"
                f" long pa = off_a, pi = off_i; {offs}\n pa += (long)ix[pi] * ast{d};\n"
                f" o[gid] = a[pa];\n}}\n")
    kernel = cg.get_kernel(a.device, key, source)
    i64 = np.int64
    args = [i64(out.size), out.buffer, a1.buffer, i64(a1.offset), i1.buffer, i64(i1.offset)]
    for k in range(nd):
        args += [i64(i1.shape[k]), i64(a1.elem_strides[k]), i64(i1.elem_strides[k])]
    cg.launch(a.device, kernel, out.size, args)
    return out


def scatter_add(backend, spec, a, dim, index, src):
    out = backend.new_array(a.shape, a.dtype, a.device)
    memory.copy_(backend, None, out, a)
    if index.size == 0:
        return out
    o1, i1, s1 = one_d(out), one_d(index), one_d(src)
    d = dim % o1.ndim
    check_bounds(backend, "scatter_add", i1, o1.shape[d], d)
    nd = i1.ndim
    outer = [k for k in range(nd) if k != d]
    n = i1.size // i1.shape[d]
    ct = cg.opmath(a.dtype)
    key = ("scatter_add", a.dtype.name, src.dtype.name, index.dtype.name, nd, d)
    shp = [f"sh{k}" for k in outer]

    def source() -> str:
        params = ["long n", "long len", f"__global {cg.storage(a.dtype)}* o",
                  f"__global const {cg.storage(src.dtype)}* s", "long off_s", f"__global const {cg.storage(index.dtype)}* ix", "long off_i",
                  "long ost_d, long sst_d, long ist_d"]
        params += [f"long sh{k}, long ost{k}, long sst{k}, long ist{k}" for k in outer]
        offs = _offset_code("gid", shp, {"po": [f"ost{k}" for k in outer], "ps": [f"sst{k}" for k in outer],
                                         "pi": [f"ist{k}" for k in outer]}) if outer else ""
        return (f"__kernel void k({', '.join(params)}) {{\n long gid = get_global_id(0); if (gid >= n) return;\n"
                f" long po = 0, ps = off_s, pi = off_i; {offs}\n"
                f" for (long j = 0; j < len; ++j) {{\n"
                f"  long q = po + (long)ix[pi + j * ist_d] * ost_d;\n"
                f"  {ct} v = ({ct})({cg.load(a.dtype, 'o', 'q')}) + ({ct})({cg.load(src.dtype, 's', 'ps + j * sst_d')});\n"
                f"  {cg.store(a.dtype, 'o', 'q', 'v', ct)}\n }}\n}}\n")
    kernel = cg.get_kernel(a.device, key, source)
    i64 = np.int64
    args = [i64(n), i64(i1.shape[d]), o1.buffer, s1.buffer, i64(s1.offset), i1.buffer, i64(i1.offset),
            i64(o1.elem_strides[d]), i64(s1.elem_strides[d]), i64(i1.elem_strides[d])]
    for k in outer:
        args += [i64(i1.shape[k]), i64(o1.elem_strides[k]), i64(s1.elem_strides[k]), i64(i1.elem_strides[k])]
    cg.launch(a.device, kernel, n, args)
    return out


def nonzero(backend, spec, a):
    import pyopencl as cl

    nd = a.ndim
    a1 = one_d(a)
    n = a1.size
    dev = a.device
    i64 = np.int64
    if n == 0:
        return backend.new_array((0, nd), np.int64, dev)
    if not a1.is_contiguous:                   # the passes walk the elements in row-major order
        tmp = backend.new_array(a1.shape, a1.dtype, dev)
        memory.copy_(backend, None, tmp, a1)
        a1 = tmp
    chunks = -(-n // NZ_CHUNK)
    counts = backend.new_array((chunks + 1,), np.int64, dev)     # counts, then offsets; [chunks]: the total
    ks = cg.get_program(dev, ("nonzero",), nonzero_program)
    kcount, kscan, kscatter = ks[f"count_{a.dtype.name}"], ks["scan"], ks[f"scatter_{a.dtype.name}"]
    cg.launch(dev, kcount, chunks, [a1.buffer, i64(a1.offset), i64(n), counts.buffer, i64(chunks)])
    L = 1
    while L < min(chunks, 256, dev.max_wg):
        L *= 2
    cg.launch_nd(dev, kscan, (L,), (L,), (counts.buffer, i64(chunks), cl.LocalMemory(8 * L)))
    total = np.empty(1, np.int64)
    cl.enqueue_copy(dev.queue, total, counts.buffer, src_offset=chunks * 8, is_blocking=True)
    out = backend.new_array((int(total[0]), nd), np.int64, dev)
    if out.size:
        shape = backend.from_host(np.array(a.shape, np.int64), dev.info.index)
        cg.launch(dev, kscatter, chunks, [a1.buffer, i64(a1.offset), i64(n), counts.buffer, i64(chunks),
                                          shape.buffer, np.int32(nd), out.buffer])
    return out


KERNELS = {"gather": gather, "scatter_add": scatter_add, "nonzero": nonzero}


NZ_CHUNK = 256     # elements per work-item of nonzero's count and scatter passes

def nonzero_program() -> str:
    """nonzero's program: `scan` and every dtype's `count_<dtype>`, `scatter_<dtype>`."""
    from .sorting import DTYPES

    parts = [NZ_SCAN]
    for name in DTYPES:
        src = _nonzero_source(to_numpy_dtype(getattr(_dt, name)), name)
        parts.append(f"#ifdef EMBER_FP64\n{src}#endif\n" if name == "float64" else src)
    return "".join(parts)


def _nonzero_source(dtype, name: str) -> str:
    """`count_<name>` (nonzero elements per chunk) and `scatter_<name>` (their coordinates)."""
    st = cg.storage(dtype)
    test = f"(({cg.load(dtype, 'a', 'off + i')}) != 0)"
    return f"""
__kernel void count_{name}(__global const {st}* a, long off, long n, __global long* cnt, long chunks) {{
    long c = get_global_id(0); if (c >= chunks) return;
    long m = 0;
    for (long i = c * {NZ_CHUNK}; i < min(n, (c + 1) * {NZ_CHUNK}); ++i) m += {test};
    cnt[c] = m;
}}

__kernel void scatter_{name}(__global const {st}* a, long off, long n, __global const long* ofs, long chunks,
                      __global const long* shape, int nd, __global long* o) {{
    long c = get_global_id(0); if (c >= chunks) return;
    long w = ofs[c];
    for (long i = c * {NZ_CHUNK}; i < min(n, (c + 1) * {NZ_CHUNK}); ++i) {{
        if ({test}) {{
            long r = i;
            for (int k = nd - 1; k >= 0; --k) {{ o[w * nd + k] = r % shape[k]; r /= shape[k]; }}
            ++w;
        }}
    }}
}}
"""


# counts -> exclusive offsets in place, x[n] = the total; one work-group, `part` a long per item
NZ_SCAN = r"""
__kernel void scan(__global long* x, long n, __local long* part) {
    int lid = get_local_id(0), L = get_local_size(0);
    long per = (n + L - 1) / L, lo = min(n, lid * per), hi = min(n, lo + per);
    long s = 0;
    for (long i = lo; i < hi; ++i) s += x[i];
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < L; d <<= 1) {
        long v = lid >= d ? part[lid - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[lid] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long run = part[lid] - s;
    for (long i = lo; i < hi; ++i) { long c = x[i]; x[i] = run; run += c; }
    if (lid == L - 1) x[n] = part[lid];
}
"""
