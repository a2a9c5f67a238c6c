"""OpenCL C for the GEMM behind bmm: two register-blocked kernels and the per-device choice.

Both compute C[b] = A[b] @ B[b] for a batch of (n, K) x (K, m) products in the opmath type
(float for float16/bfloat16), accumulating floating types with fused multiply-adds, and round
once on store into a contiguous C. Sizes need not be multiples of the tiles.

`register` (CPU devices, e.g. PoCL): `pack_pair_source` first copies A into K-major panels of R
rows and B into K-major panels of W columns (one launch for both), converted to opmath and zero-padded (so any
strides, offsets, dtypes and a stride-0 batch are handled there, once, in O(K (n + m))).
Each work-item then owns an R x W tile of C (R rows, W columns as one W-wide vector): per k
it loads one aligned W-vector of B and broadcasts R scalars of A into it, like a BLAS
micro-kernel, with no local memory and no barrier; the CPU caches do the staging that local
memory does on a GPU. Why this shape for PoCL's CPU driver: it runs a work-group as a loop
over its work-items and spills their private state to memory at every barrier; it calls its
builtins (fma, vloadn) out of line, so the loop uses none (typed vector loads from the
aligned panels; a * b + c with FP_CONTRACT ON, which LLVM turns into vfmadd); and a B row
read in place from a power-of-two-wide matrix (4 KiB apart per k) thrashes the cache sets,
which the packed panels avoid. A work-group is 16 row tiles sharing one B panel (in L1).

`local` (GPUs and accelerators): the classic local-memory tiling. A work-group of S x S
work-items computes a TS x TS tile of C (TS = S * P), staging TS x S tiles of A and S x TS
tiles of B in local memory (loaded coalesced, with the operands' own strides, so transposed
operands need no copy), and each work-item accumulates a P x P micro-tile strided by S with
explicit fma().
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import codegen as cg

LANES = "0123456789abcdef"


@dataclass(frozen=True)
class GemmConfig:
    """Which kernel and its blocking: `rows` x `width` per work-item, `group` work-items per work-group."""

    variant: str            # "register" or "local"
    rows: int               # register: rows of C per work-item; local: P (micro-tile is P x P)
    width: int              # register: columns per work-item (vector width); local: S (work-group is S x S)
    group: tuple[int, int]  # register: local work size (x over columns, y over rows)


def config_for(dev, out_dtype, variant: str | None = None) -> GemmConfig:
    """The blocking for `dev`: register-blocked on CPUs, local-memory tiles on GPUs/accelerators.

    `variant` forces one kernel (tests run both on PoCL). Measured on PoCL
    (2 Zen 3 cores, 1024^3 float32): 8 rows x one 256-bit vector per work-item and work-groups
    of 16 row blocks sharing one B panel ran fastest (8x8: ~13 GFLOP/s; 4x8: ~11; 6x16: ~11-13).
    """
    variant = variant or ("register" if dev.info.type == "cpu" else "local")
    if variant == "register":
        acc_size = np.dtype(cg.NUMPY_OF_CL[cg.opmath(out_dtype)]).itemsize
        return GemmConfig("register", 8, max(4, min(16, 32 // acc_size)), (1, 16))
    side = 16 if dev.max_wg >= 256 else (8 if dev.max_wg >= 64 else (4 if dev.max_wg >= 16 else 1))
    return GemmConfig("local", 4, side, (side, side))


def _madd(acc: str, a: str, b: str, c: str) -> str:
    """c + a * b in the opmath type: fma() for floating types (one rounding, whatever the compiler)."""
    return f"fma({a}, {b}, {c})" if acc in cg.FLOAT_CL else f"({c} + {a} * {b})"


def pack_pair_source(dta, dtb, acc: str) -> str:
    """Copy both strided operands of a product into K-major panels, as `acc`, in one launch.

    For each operand x (A: (batch, n, K) in panels of tile_a rows; B: (batch, K, m) in panels of tile_b
    columns): out[((bat * nblk + p) * K + k) * tile + j] = src[off + bat*sbat + (p*tile + j)*si + k*sk],
    zero past `lim`, so the GEMM loop needs no bounds check. A work-item writes one k row of a panel;
    those of the third dimension below `batches_a` pack A, the others B."""
    def body(dt, x: str) -> str:
        load = cg.load(dt, f"src_{x}", f"q + j * si_{x}")
        return (f"long i = p * tile_{x}; if (p >= nblk_{x}) return;\n"
                f"    long q = off_{x} + bat / nb2_{x} * sbat_{x} + bat % nb2_{x} * sbat2_{x} + i * si_{x} + k * sk_{x};\n"
                f"    __global {acc}* o = out_{x} + ((bat * nblk_{x} + p) * K + k) * tile_{x};\n"
                f"    for (int j = 0; j < tile_{x}; ++j) o[j] = i + j < lim_{x} ? ({acc})({load}) : ({acc})0;")
    params = ", ".join(f"__global const {cg.storage(dt)}* src_{x}, long off_{x}, long sbat_{x}, long sbat2_{x}, "
                       f"long nb2_{x}, long si_{x}, "
                       f"long sk_{x}, __global {acc}* out_{x}, long lim_{x}, long nblk_{x}, int tile_{x}"
                       for dt, x in ((dta, "a"), (dtb, "b")))
    return f"""
__kernel void k({params}, long batches_a, long K) {{
    long k = get_global_id(0), p = get_global_id(1), bat = get_global_id(2);
    if (k >= K) return;
    if (bat < batches_a) {{
    {body(dta, "a")}
    }} else {{
    bat -= batches_a;
    {body(dtb, "b")}
    }}
}}
"""


def register_source(out_dt, cfg: GemmConfig) -> str:
    """The micro-kernel over packed operands: Ap[bat][n/R][K][R] and Bp[bat][m/W][K][W] in opmath."""
    acc = cg.opmath(out_dt)
    R, W = cfg.rows, cfg.width
    vt = f"{acc}{W}"
    so = cg.storage(out_dt)
    lanes = LANES[:W]
    loop = "\n            ".join(
        [f"{vt} bv = pb[k];"]
        + [f"acc{i} = ({vt})(pa[{i}]) * bv + acc{i};" for i in range(R)]
        + [f"pa += {R};"])

    def store(full: bool) -> str:
        out = []
        for i in range(R):
            if full and so == acc:
                st = f"vstore{W}(acc{i}, 0, po);"
            elif full and np.dtype(out_dt).name == "float16":
                st = f"vstore_half{W}_rte(acc{i}, 0, po);"
            else:
                guard = (lambda j: "") if full else (lambda j: f"if (col0 + {j} < m) ")
                st = " ".join(guard(j) + cg.store(out_dt, "po", str(j), f"acc{i}.s{lanes[j]}", acc) for j in range(W))
            out.append(f"if (r0 + {i} < n) {{ {st} }} po += m;")
        return "\n        ".join(out)

    acc_init = " ".join(f"{vt} acc{i} = ({vt})(0);" for i in range(R))
    return f"""
__kernel void k(__global const {acc}* Ap, long sapb, __global const {vt}* Bp, long sbpb,
                __global {so}* C, long n, long m, long K) {{
    #pragma OPENCL FP_CONTRACT ON
    long cb = get_global_id(0), rb = get_global_id(1), bat = get_global_id(2);
    long col0 = cb * {W}, r0 = rb * {R};
    if (col0 >= m || r0 >= n) return;
    __global const {acc}* pa = Ap + bat * sapb + rb * K * {R};
    __global const {vt}* pb = Bp + bat * sbpb + cb * K;
    {acc_init}
    for (long k = 0; k < K; ++k) {{
            {loop}
    }}
    __global {so}* po = C + (bat * n + r0) * m + col0;
    if (col0 + {W} <= m) {{
        {store(True)}
    }} else {{
        {store(False)}
    }}
}}
"""


def local_source(a_dt, b_dt, out_dt, cfg: GemmConfig) -> str:
    """The local-memory kernel over A and B in place (any strides, offsets, stride-0 batch)."""
    acc = cg.opmath(out_dt)
    P, S = cfg.rows, cfg.width
    TS = S * P
    sa, sb, so = cg.storage(a_dt), cg.storage(b_dt), cg.storage(out_dt)
    la = cg.load(a_dt, "A", "pa + r * san + kk * sak")
    lb = cg.load(b_dt, "B", "pb + kk * sbk + cc * sbm")
    inner = "\n            ".join(
        [f"{acc} b{j} = Bs[kk][tx + {S * j}];" for j in range(P)]
        + [f"{{ {acc} a = As[kk][ty + {S * i}]; "
           + " ".join(f"c{i}{j} = {_madd(acc, 'a', f'b{j}', f'c{i}{j}')};" for j in range(P)) + " }"
           for i in range(P)])
    stores = "\n    ".join(
        f"if (row0 + {S * i} < n && col0 + {S * j} < m) {{ long o = (bat * n + row0 + {S * i}) * m + col0 + {S * j}; "
        f"{cg.store(out_dt, 'C', 'o', f'c{i}{j}', acc)} }}" for i in range(P) for j in range(P))
    acc_init = " ".join(f"{acc} c{i}{j} = 0;" for i in range(P) for j in range(P))
    return f"""
__kernel __attribute__((reqd_work_group_size({S}, {S}, 1)))
void k(__global const {sa}* A, long offa, long sab, long sab2, long nba2, long san, long sak,
       __global const {sb}* B, long offb, long sbb, long sbb2, long nbb2, long sbk, long sbm,
       __global {so}* C, long n, long m, long K) {{
    __local {acc} As[{S}][{TS} + 1];      /* +1: the transposing stores hit distinct banks */
    __local {acc} Bs[{S}][{TS}];
    int tx = get_local_id(0), ty = get_local_id(1);
    long rowb = get_group_id(1) * {TS}, colb = get_group_id(0) * {TS}, bat = get_global_id(2);
    long pa = offa + bat / nba2 * sab + bat % nba2 * sab2, pb = offb + bat / nbb2 * sbb + bat % nbb2 * sbb2;
    {acc_init}
    for (long t = 0; t < K; t += {S}) {{
        for (int l = 0; l < {P}; ++l) {{
            int id = (l * {S} + ty) * {S} + tx;
            long r = rowb + id / {S}, kk = t + id % {S};
            As[id % {S}][id / {S}] = (r < n && kk < K) ? ({acc})({la}) : ({acc})0;
            long cc = colb + id % {TS}; kk = t + id / {TS};
            Bs[id / {TS}][id % {TS}] = (cc < m && kk < K) ? ({acc})({lb}) : ({acc})0;
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < {S}; ++kk) {{
            {inner}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    long row0 = rowb + ty, col0 = colb + tx;
    {stores}
}}
"""
