"""Reductions (sum, amax, amin, argmax, argmin) as parallel work-group reductions; cumsum.

One work-group per output element: its work-items stride over the reduced elements (any
strides: the reduced dims are decomposed like the elementwise engine's), accumulate in the
opmath type, then combine in local memory by a tree. amax/amin propagate NaN; argmax/argmin
give the first index of the extreme value (the first NaN if any), as PyTorch.
"""
from __future__ import annotations

import operator

import numpy as np

from ember.frontend.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from ..array import CLArray

INT_LIMITS = {"uchar": ("0", "UCHAR_MAX"), "char": ("CHAR_MIN", "CHAR_MAX"), "short": ("SHRT_MIN", "SHRT_MAX"),
              "int": ("INT_MIN", "INT_MAX"), "long": ("LONG_MIN", "LONG_MAX")}


def _dims(a: CLArray, dim) -> list[int]:
    if dim is None or a.ndim == 0:
        return list(range(a.ndim))
    if not isinstance(dim, (tuple, list)):
        dim = [dim]
    dims = sorted({operator.index(d) % a.ndim for d in dim})
    return dims if dims else list(range(a.ndim))


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


def make(backend) -> dict:
    def reduce(spec, a: CLArray, dim, kind: str):
        out_dt = to_numpy_dtype(spec[1])
        dev = a.device
        out = backend.new_array(spec[0], out_dt, dev)
        red = _dims(a, dim)
        kept = [d for d in range(a.ndim) if d not in red]
        kshape, (kst,) = cg.collapse([a.shape[d] for d in kept], [[a.elem_strides[d] for d in kept]])
        rshape, (rst,) = cg.collapse([a.shape[d] for d in red], [[a.elem_strides[d] for d in red]])
        M = out.size
        R = 1
        for s in rshape:
            R *= s
        if M == 0:
            return out
        is_arg = kind in ("argmax", "argmin")
        acc = cg.opmath(out_dt) if kind == "sum" else cg.opmath(a.dtype)
        is_float = acc in cg.FLOAT_CL
        if kind == "sum":
            ident, combine = "0", "v = v + w;"
        else:
            big = kind in ("amax", "argmax")
            lo, hi = ("-INFINITY", "INFINITY") if is_float else INT_LIMITS[acc]
            ident = lo if big else hi
            cmp = ">" if big else "<"
            nan_a = "isnan(v)" if is_float else "0"
            nan_b = "isnan(w)" if is_float else "0"
            if is_arg:
                combine = (f"int take = {nan_b} ? (!{nan_a} || wi < vi) : (!{nan_a} && (w {cmp} v || (w == v && wi < vi)));"
                           " if (take) { v = w; vi = wi; }")
            else:
                combine = f"if ({nan_b} || (!{nan_a} && w {cmp} v)) v = w;"
        L = 1
        while L < min(R, 256, dev.max_wg):
            L *= 2
        nk, nr = len(kshape), len(rshape)
        key = ("reduce", kind, a.dtype.name, out_dt.name, acc, nk, nr, L)

        def source() -> str:
            params = ["__global const " + cg.storage(a.dtype) + "* a", "long off", "long R",
                      "__global " + cg.storage(out_dt) + "* o"]
            params += [f"long ksh{d}, long kst{d}" for d in range(nk)] + [f"long rsh{d}, long rst{d}" for d in range(nr)]
            idx_decl = "long vi = LONG_MAX, wi;" if is_arg else ""
            local_idx = f"__local long li[{L}];" if is_arg else ""
            store_v = "li[lid] = vi;" if is_arg else ""
            load_w = "wi = li[lid + s];" if is_arg else ""
            res = "vi" if is_arg else "v"
            res_t = "long" if is_arg else acc
            return f"""
__kernel void k({', '.join(params)}) {{
    __local {acc} lv[{L}]; {local_idx}
    long g = get_group_id(0); int lid = get_local_id(0);
    long base = off; {{ long p = 0; {_offsets_code('k', 'g', nk)} base += p; }}
    {acc} v = ({acc})({ident}), w; {idx_decl}
    for (long j = lid; j < R; j += {L}) {{
        long p = base; {_offsets_code('r', 'j', nr)}
        w = ({acc})({cg.load(a.dtype, 'a', 'p')}); {'wi = j;' if is_arg else ''}
        {combine}
    }}
    lv[lid] = v; {store_v}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = {L} / 2; s > 0; s >>= 1) {{
        if (lid < s) {{ w = lv[lid + s]; {load_w} {combine} lv[lid] = v; {store_v} }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) {{ {cg.store(out_dt, 'o', 'g', res, res_t)} }}
}}
"""
        kernel = cg.get_kernel(dev, key, source)
        i64 = np.int64
        args = [a.buffer, i64(a.offset), i64(R), out.buffer]
        for s, st in zip(kshape, kst):
            args += [i64(s), i64(st)]
        for s, st in zip(rshape, rst):
            args += [i64(s), i64(st)]
        cg.launch(dev, kernel, M * L, args, local=L)
        return out

    def sum_(spec, a, dim=None, keepdim=False, dtype=None):
        return reduce(spec, a, dim, "sum")

    def amax(spec, a, dim=(), keepdim=False):
        return reduce(spec, a, dim, "amax")

    def amin(spec, a, dim=(), keepdim=False):
        return reduce(spec, a, dim, "amin")

    def argmax(spec, a, dim=None, keepdim=False):
        return reduce(spec, a, dim, "argmax")

    def argmin(spec, a, dim=None, keepdim=False):
        return reduce(spec, a, dim, "argmin")

    def cumsum(spec, a, dim, dtype=None):
        """One work-item per line along `dim`, summing in order (numpy's sequential cumsum, exactly)."""
        out_dt = to_numpy_dtype(spec[1])
        dev = a.device
        out = backend.new_array(spec[0], out_dt, dev)
        if out.size == 0:
            return out
        if a.ndim == 0:
            a, out1 = a.view((1,), (1,), a.offset), out.view((1,), (1,), 0)
        else:
            out1 = out
        d = operator.index(dim) % a.ndim
        outer = [k for k in range(a.ndim) if k != d]
        acc = cg.opmath(out_dt)
        nk = len(outer)
        key = ("cumsum", a.dtype.name, out_dt.name, nk)

        def source() -> str:
            params = [f"__global const {cg.storage(a.dtype)}* a", "long off", "long len", "long ast", "long ost",
                      f"__global {cg.storage(out_dt)}* o", "long n"]
            params += [f"long ksh{k}, long kst{k}, long kos{k}" for k in range(nk)]
            dec = ""
            if nk:
                dec = "{ long r_ = gid; long c_; " + " ".join(
                    f"c_ = r_ % ksh{k}; r_ /= ksh{k}; p += c_ * kst{k}; q += c_ * kos{k};" for k in range(nk - 1, -1, -1)) + " }"
            return f"""
__kernel void k({', '.join(params)}) {{
    long gid = get_global_id(0); if (gid >= n) return;
    long p = off, q = 0; {dec}
    {acc} s = 0;
    for (long j = 0; j < len; ++j) {{
        s += ({acc})({cg.load(a.dtype, 'a', 'p + j * ast')});
        {cg.store(out_dt, 'o', 'q + j * ost', 's', acc)}
    }}
}}
"""
        kernel = cg.get_kernel(dev, key, source)
        i64 = np.int64
        n = out1.size // out1.shape[d]
        args = [a.buffer, i64(a.offset), i64(a.shape[d]), i64(a.elem_strides[d]), i64(out1.elem_strides[d]),
                out1.buffer, i64(n)]
        for k in outer:
            args += [i64(a.shape[k]), i64(a.elem_strides[k]), i64(out1.elem_strides[k])]
        cg.launch(dev, kernel, n, args)
        return out

    return {"sum.dim_IntList": sum_, "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin,
            "cumsum": cumsum}
