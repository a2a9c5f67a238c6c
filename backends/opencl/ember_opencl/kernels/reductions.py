"""Reductions (sum, amax, amin, argmax, argmin) and cumsum.

The reductions collapse the kept and reduced dims (any strides) and run kernels/reduce_split.py's
engine: one work-item per output when there are many outputs or few reduced elements, else a
split reduction (many work-items write partials in the opmath type, a further pass reduces
them). amax/amin propagate NaN; argmax/argmin give the first index of the extreme value (the
first NaN if any), as PyTorch.

Each kernel is `fn(backend, spec, *op_args)` (kernels/table.py); the module ends with its table
`KERNELS`. indexing.py calls `amin`/`amax` directly for its bounds checks.
"""
from __future__ import annotations

import operator

import numpy as np

from ember.core.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from ..array import CLArray
from .reduce_split import ARG_KINDS, Source, plan, run_pass


def _dims(a: CLArray, dim) -> list[int]:
    if dim is None or a.ndim == 0:
        return list(range(a.ndim))
    if not isinstance(dim, (tuple, list)):
        dim = [dim]
    dims = sorted({operator.index(d) % a.ndim for d in dim})
    return dims if dims else list(range(a.ndim))


def reduce(backend, spec, a: CLArray, dim, kind: str):
    """The reduction `kind` of `a` over `dim` (None: all dims): passes of reduce_split's engine until
    one work-item per output is left."""
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
    acc = cg.opmath(out_dt) if kind == "sum" else cg.opmath(a.dtype)
    src = Source(a.dtype, a.buffer, a.offset, kshape, kst, rshape, rst, None)
    while True:
        lanes, splits = plan(M, R, dev)
        if lanes * splits == 1:
            run_pass(dev, kind, acc, src, M, R, 1, 1, R, out)
            return out
        chunk = -(-R // (splits * lanes)) * lanes
        n = M * splits * lanes
        part = backend.new_array((n,), cg.NUMPY_OF_CL[acc], dev)
        pidx = backend.new_array((n,), np.int64, dev) if kind in ARG_KINDS else None
        run_pass(dev, kind, acc, src, M, R, lanes, splits, chunk, (part, pidx))
        # the partials of output m are the row m of a contiguous (M, splits * lanes) array
        R = splits * lanes
        src = Source(None, part.buffer, 0, (M,) if M > 1 else (), (R,) if M > 1 else (), (R,), (1,),
                     pidx.buffer if pidx is not None else None)


def sum_(backend, spec, a, dim=None, keepdim=False, dtype=None):
    return reduce(backend, spec, a, dim, "sum")


def amax(backend, spec, a, dim=(), keepdim=False):
    return reduce(backend, spec, a, dim, "amax")


def amin(backend, spec, a, dim=(), keepdim=False):
    return reduce(backend, spec, a, dim, "amin")


def argmax(backend, spec, a, dim=None, keepdim=False):
    return reduce(backend, spec, a, dim, "argmax")


def argmin(backend, spec, a, dim=None, keepdim=False):
    return reduce(backend, spec, a, dim, "argmin")


def cumsum(backend, spec, a, dim, dtype=None):
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
    local = min(64, dev.max_wg)                  # explicit: PoCL builds one binary per local size
    cg.launch(dev, kernel, -(-n // local) * local, args, local=local)
    return out


KERNELS = {"sum.dim_IntList": sum_, "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin,
           "cumsum": cumsum}
