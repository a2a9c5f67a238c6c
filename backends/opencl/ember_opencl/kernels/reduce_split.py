"""The reduction engine: one kernel template run as a single pass or as a split reduction.

A pass gives each output `m` `splits` chunks of the reduced elements, and each chunk `lanes`
work-items: lane `l` of chunk `s` combines the elements `s * chunk + l + k * lanes` (adjacent
lanes read adjacent elements, so GPUs coalesce; CPU devices get one lane, which reads
contiguous elements with vector loads of `vector_width` elements, as PoCL does not vectorize a loop inside a
work-item by itself), then writes
its partial (value and, for argmax/argmin, index) in the opmath type, with no barrier and no
local memory. The partials of output `m` form row `m` of a contiguous (M, splits * lanes)
array that the next pass reduces the same way; when `lanes * splits == 1` a work-item reduces
its whole output sequentially and stores the result in the output dtype. `plan` picks one
work-item per output when there are many outputs or few reduced elements, and a split
otherwise, so a full reduction of a large tensor uses every compute unit.

Semantics are those of the single pass whatever the split: sums accumulate in the opmath type
(float for float16/bfloat16, double for float64, int64 for integer sums) and round once on the
final store; amax/amin propagate NaN; argmax/argmin order values as (NaN above everything,
then value, then smaller index first), a total order, so any grouping gives PyTorch's first
index of the extreme value (the first NaN if any).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import codegen as cg
from ..array import CLArray

ARG_KINDS = ("argmax", "argmin")
INT_LIMITS = {"uchar": ("0", "UCHAR_MAX"), "char": ("CHAR_MIN", "CHAR_MAX"), "short": ("SHRT_MIN", "SHRT_MAX"),
              "int": ("INT_MIN", "INT_MAX"), "long": ("LONG_MIN", "LONG_MAX")}
#: at most this many reduced elements, or at least MANY_OUTPUTS outputs: one work-item per output
SEQUENTIAL_R = 2048
MANY_OUTPUTS = 1024
#: lanes per chunk, elements per lane at least, and the work-groups a split aims for
LANES = 64
MIN_PER_LANE = 32
TARGET_GROUPS = 64
#: on CPU devices: elements per chunk at least, and the chunks (work-items) a split aims for
MIN_CHUNK = 4096
TARGET_ITEMS = 256
#: the bytes of one vector register the vector loop fills: AVX's 256 bits. Wider vectors (a double8,
#: or argmax's long8 indices) crash PoCL's LLVM ("Cannot emit physreg copy instruction") where PoCL
#: does not know the CPU and compiles for a generic x86-64 target without AVX-512 (seen on a Zen 4
#: machine), and a crash leaves a program without kernels in PoCL's cache
VECTOR_BYTES = 32
#: the work-group size when one work-item reduces a chunk (global padded to a multiple;
#: the kernels guard gid >= n)
SEQ_LOCAL = 16


class Source(NamedTuple):
    """What a pass reads: the input (dtype set) or the previous pass's partials (dtype None)."""

    dtype: np.dtype | None
    buffer: object
    offset: int
    kshape: tuple
    kst: tuple
    rshape: tuple
    rst: tuple
    idx: object            # the partial indices (argmax/argmin over partials), else None


def plan(M: int, R: int, dev) -> tuple[int, int]:
    """(lanes, splits) of the next pass over M outputs of R elements each ((1, 1): one pass).

    CPU devices get one work-item per chunk (lanes 1: it reads its chunk in order, with vector
    loads where the elements are contiguous); other devices get LANES work-items per chunk."""
    if R <= SEQUENTIAL_R or M >= MANY_OUTPUTS:
        return 1, 1
    if dev.info.type == "cpu":
        return 1, max(1, min(-(-R // MIN_CHUNK), -(-TARGET_ITEMS // M)))
    lanes = min(LANES, dev.max_wg)
    splits = max(1, min(-(-R // (lanes * MIN_PER_LANE)), -(-TARGET_GROUPS // M)))
    return lanes, splits


def vectorizable(kind: str, src: "Source", lanes: int) -> bool:
    """Whether a pass reads with `width`-wide vector loads: one work-item per chunk and the reduced
    elements contiguous (one collapsed dim of stride 1)."""
    return lanes == 1 and len(src.rshape) == 1 and src.rst[0] == 1


def _offsets_code(prefix: str, var: str, nd: int) -> str:
    """C code adding to `p` the offset of linear index `var` over dims `<prefix>sh0..`, strides `<prefix>st0..`."""
    if nd == 0:
        return ""
    lines = [f"{{ long r_ = {var}; long c_;"]
    for d in range(nd - 1, -1, -1):
        lines.append(f"c_ = r_ % {prefix}sh{d}; r_ /= {prefix}sh{d}; p += c_ * {prefix}st{d};" if d
                     else f"p += r_ * {prefix}st0;")
    lines.append("}")
    return " ".join(lines)


def _combine(kind: str, acc: str) -> tuple[str, str]:
    """(identity, C statement folding `w` (index `wi`) into `v` (index `vi`))."""
    if kind == "sum":
        return "0", "v = v + w;"
    is_float = acc in cg.FLOAT_CL
    big = kind in ("amax", "argmax")
    lo, hi = ("-INFINITY", "INFINITY") if is_float else INT_LIMITS[acc]
    cmp = ">" if big else "<"
    nan_v = "isnan(v)" if is_float else "0"
    nan_w = "isnan(w)" if is_float else "0"
    if kind in ARG_KINDS:
        return lo if big else hi, (
            f"int take = {nan_w} ? (!{nan_v} || wi < vi) : (!{nan_v} && (w {cmp} v || (w == v && wi < vi)));"
            " if (take) { v = w; vi = wi; }")
    return lo if big else hi, f"if ({nan_w} || (!{nan_v} && w {cmp} v)) v = w;"


def vector_width(kind: str, acc: str, src: Source) -> int:
    """The elements per vector load: as many as fill VECTOR_BYTES in the widest lane type (the
    accumulator, the input's, or argmax/argmin's long indices)."""
    widest = max(np.dtype(cg.NUMPY_OF_CL[acc]).itemsize, src.dtype.itemsize if src.dtype is not None else 0,
                 8 if kind in ARG_KINDS else 0)
    return min(16, VECTOR_BYTES // widest)             # OpenCL's widest vector type has 16 elements


def _vload(dtype, acc: str, ptr: str, width: int) -> str:
    """A `width`-wide load at `ptr` converted to the opmath vector `acc``width` (dtype None: partials)."""
    if dtype is None:
        return f"vload{width}(0, {ptr})"
    name = np.dtype(dtype).name
    if name == "float16":
        v, t = f"vload_half{width}(0, (__global const half*)({ptr}))", "float"
    elif name == "bfloat16":
        v, t = f"as_float{width}(convert_uint{width}(vload{width}(0, {ptr})) << 16)", "float"
    else:
        v, t = f"vload{width}(0, {ptr})", cg.storage(dtype)
    return v if t == acc else f"convert_{acc}{width}({v})"


def _mask_t(acc: str) -> str:
    """The signed integer type of `acc`'s vector comparison masks."""
    return {"float": "int", "double": "long", "uchar": "char", "char": "char", "short": "short",
            "int": "int", "long": "long"}[acc]


def _vector_loop(kind: str, acc: str, src: Source) -> str:
    """C code folding elements [j, jend) of the chunk into `v` with `width`-wide loads, then the tail."""
    is_arg = kind in ARG_KINDS
    width = vector_width(kind, acc, src)
    if kind == "sum":
        vcomb = "vv = vv + ww;"
    elif is_arg:
        # the scalar combine lane-wise, its masks widened to the index vectors' long
        cmp = ">" if kind == "argmax" else "<"
        lv = f"convert_long{width}"
        nan_w, nan_v = (f"{lv}(isnan(ww))", f"{lv}(isnan(vv))") if acc in cg.FLOAT_CL else ("0", "0")
        vcomb = (f"{{ long{width} nw = {nan_w}, nv = {nan_v}, lt = wiv < viv;"
                 f" long{width} take = (nw & (~nv | lt)) | (~nw & ~nv & ({lv}(ww {cmp} vv) | ({lv}(ww == vv) & lt)));"
                 f" vv = select(vv, ww, {'take' if acc in ('double', 'long') else f'convert_{_mask_t(acc)}{width}(take)'});"
                 f" viv = select(viv, wiv, take); }}")
    else:
        cmp = ">" if kind == "amax" else "<"
        if acc in cg.FLOAT_CL:
            vcomb = f"vv = select(vv, ww, isnan(ww) | (~isnan(vv) & (ww {cmp} vv)));"
        else:
            vcomb = f"vv = select(vv, ww, ww {cmp} vv);"
    ident, combine = _combine(kind, acc)
    fold = " ".join(f"{{ w = vv.s{i:x}; {'wi = viv.s%x;' % i if is_arg else ''} {combine} }}" for i in range(width))
    load = cg.load(src.dtype, "a", "p") if src.dtype is not None else "a[p]"
    if not is_arg:
        idx_decl = idx_load = wi = ""
    else:
        idx_decl = f"long{width} viv = (long{width})(LONG_MAX), wiv;"
        idx_load = (f"wiv = vload{width}(0, ai + base + j);" if src.idx is not None
                    else f"wiv = (long{width})(j) + (long{width})({', '.join(str(i) for i in range(width))});")
        wi = "wi = ai[p];" if src.idx is not None else "wi = j;"
    return f"""
    {acc}{width} vv = ({acc}{width})(({acc})({ident})), ww; {idx_decl}
    long j = s * CH;
    for (; j + {width} <= jend; j += {width}) {{ ww = {_vload(src.dtype, acc, 'a + base + j', width)}; {idx_load} {vcomb} }}
    {fold}
    for (; j < jend; ++j) {{ long p = base + j; w = ({acc})({load}); {wi} {combine} }}"""


class Layout(NamedTuple):
    """What a pass's kernel is specialised for beyond its dtypes: the ranks of the kept and reduced
    dims (after collapsing) and whether it reads with vector loads."""

    nk: int
    nr: int
    vector: bool


#: ranks up to these are built as one program per (kind, dtypes), every layout a kernel of it: an
#: OpenCL build costs about the same for one kernel as for a dozen (PoCL spends it on fixed work)
#: and the device compiles a kernel only when it is first launched
BUNDLED_NK, BUNDLED_NR = 2, 2


def _layouts(layout: Layout, lanes: int) -> tuple[Layout, ...]:
    """The layouts built in one program with `layout`: all small ones, or `layout` alone."""
    if layout.nk > BUNDLED_NK or layout.nr > BUNDLED_NR:
        return (layout,)
    return tuple(Layout(nk, nr, vector) for nk in range(BUNDLED_NK + 1) for nr in range(BUNDLED_NR + 1)
                 for vector in ((False, True) if nr == 1 and lanes == 1 else (False,)))


def _kernel_name(layout: Layout) -> str:
    return f"k{layout.nk}_{layout.nr}{'v' if layout.vector else ''}"


def _source(kind: str, acc: str, src: Source, lanes: int, out_dt, layout: Layout) -> str:
    is_arg = kind in ARG_KINDS
    nk, nr = layout.nk, layout.nr
    in_t = cg.storage(src.dtype) if src.dtype is not None else acc
    params = [f"__global const {in_t}* a", "long off", "long R", "long CH", "long S", "long n"]
    if src.idx is not None:
        params.append("__global const long* ai")
    if out_dt is not None:
        params.append(f"__global {cg.storage(out_dt)}* o")
    else:
        params.append(f"__global {acc}* po")
        if is_arg:
            params.append("__global long* pi")
    params += [f"long ksh{d}, long kst{d}" for d in range(nk)] + [f"long rsh{d}, long rst{d}" for d in range(nr)]
    ident, combine = _combine(kind, acc)
    load = cg.load(src.dtype, "a", "p") if src.dtype is not None else "a[p]"
    wi = ("wi = ai[p];" if src.idx is not None else "wi = j;") if is_arg else ""
    if out_dt is not None:
        res, res_t = ("vi", "long") if is_arg else ("v", acc)
        write = cg.store(out_dt, "o", "m", res, res_t)
    else:
        write = "po[gid] = v;" + (" pi[gid] = vi;" if is_arg else "")
    if layout.vector:
        loop = _vector_loop(kind, acc, src)
    else:
        loop = f"""for (long j = s * CH + l; j < jend; j += {lanes}) {{
        long p = base; {_offsets_code('r', 'j', nr)}
        w = ({acc})({load}); {wi}
        {combine}
    }}"""
    return f"""
__kernel void {_kernel_name(layout)}({', '.join(params)}) {{
    long gid = get_global_id(0); if (gid >= n) return;
    long t = gid / {lanes}; long l = gid - t * {lanes}; long m = t / S; long s = t - m * S;
    long base = off; {{ long p = 0; {_offsets_code('k', 'm', nk)} base += p; }}
    {acc} v = ({acc})({ident}), w; long vi = LONG_MAX, wi;
    long jend = min(R, (s + 1) * CH);
    {loop}
    {write}
}}
"""


def run_pass(dev, kind: str, acc: str, src: Source, M: int, R: int, lanes: int, splits: int, chunk: int,
             dest) -> None:
    """Launch one pass: into the output array `dest` (CLArray, when lanes * splits == 1) or the
    partials `dest = (values, indices or None)`."""
    final = isinstance(dest, CLArray)
    out_dt = dest.dtype if final else None
    layout = Layout(len(src.kshape), len(src.rshape), vectorizable(kind, src, lanes))
    bundle = _layouts(layout, lanes)
    key = ("reduce", kind, src.dtype.name if src.dtype is not None else "partial", src.idx is not None,
           out_dt.name if final else "partial", acc, lanes, bundle[0] if len(bundle) == 1 else "bundled")
    kernel = cg.get_kernel(dev, key, lambda: "".join(_source(kind, acc, src, lanes, out_dt, each) for each in bundle),
                           name=_kernel_name(layout))
    i64 = np.int64
    n = M * splits * lanes
    args = [src.buffer, i64(src.offset), i64(R), i64(chunk), i64(splits), i64(n)]
    if src.idx is not None:
        args.append(src.idx)
    if final:
        args.append(dest.buffer)
    else:
        args.append(dest[0].buffer)
        if dest[1] is not None:
            args.append(dest[1].buffer)
    for s, st in zip(src.kshape, src.kst):
        args += [i64(s), i64(st)]
    for s, st in zip(src.rshape, src.rst):
        args += [i64(s), i64(st)]
    local = lanes if lanes > 1 else min(SEQ_LOCAL, dev.max_wg)
    cg.launch(dev, kernel, -(-n // local) * local, args, local=local)



