"""The N-d elementwise engine every pointwise, copy and fill kernel runs through.

`run(out, operands, cts, expr)` evaluates `expr` (OpenCL C over `x0, x1, ...`, each operand
loaded and converted to its compute type `cts[i]`) for every element of `out`, broadcasting
operands to `out`'s shape with arbitrary strides and offsets. Python scalars become kernel
arguments. Dimensions are collapsed first, so contiguous operands take the 1-d fast path;
one kernel is compiled per (expression, dtypes, collapsed rank) and cached.

The kernels of ranks 1 to `BUNDLED_RANKS` for one (expression, dtypes) are built as one program
(kernels `k1` ... `k4`): an OpenCL build costs about the same for one kernel as for several (PoCL
spends it on fixed work), and the device compiles each kernel only when it is first launched, so
the ranks an op meets later cost no build of their own.
"""
from __future__ import annotations

import numpy as np

from ember.core import fused_c

from .. import codegen as cg
from ..array import CLArray


def broadcast_strides(a: CLArray, shape) -> tuple[int, ...]:
    return fused_c.broadcast_strides(a.shape, a.elem_strides, shape)


BUNDLED_RANKS = 4


def run(out: CLArray, operands, cts, expr: str, result_type: str, extra=(), tag: str = "pw") -> CLArray:
    """out[...] = expr(operands...); `extra` is a sequence of (name, cl type, value) scalar parameters."""
    n = out.size
    if n == 0:
        return out
    arrays = [i for i, x in enumerate(operands) if isinstance(x, CLArray)]
    shape, strides = cg.collapse(out.shape, [out.elem_strides] + [broadcast_strides(operands[i], out.shape)
                                                                 for i in arrays])
    nd = max(len(shape), 1)
    if not shape:
        shape, strides = (1,), [(0,) for _ in strides]
    key = (tag, expr, out.dtype.name, result_type, nd if nd > BUNDLED_RANKS else "bundled",
           tuple(operands[i].dtype.name if isinstance(operands[i], CLArray) else "s" for i in range(len(operands))),
           tuple(cts), tuple((e[0], e[1]) for e in extra))
    names = ["o"] + [f"a{i}" for i in arrays]

    def kernel_source(nd: int) -> str:
        params = ["long n"] + [f"long sh{d}" for d in range(nd)]
        params += [f"__global {cg.storage(out.dtype)}* o", "long off_o"] + [f"long st_o{d}" for d in range(nd)]
        body = []
        for i, x in enumerate(operands):
            if isinstance(x, CLArray):
                params += [f"__global const {cg.storage(x.dtype)}* a{i}", f"long off_a{i}"]
                params += [f"long st_a{i}{d}" for d in range(nd)]
                body.append(f"{cts[i]} x{i} = ({cts[i]})({cg.load(x.dtype, f'a{i}', f'p_a{i}')});")
            else:
                params.append(f"{cts[i]} x{i}")
        params += [f"{t} {name}" for name, t, _ in extra]
        return (f"__kernel void k{nd}({', '.join(params)}) {{\n"
                f"    long gid = get_global_id(0);\n    if (gid >= n) return;\n"
                f"    {cg.index_code(nd, names)}\n    " + "\n    ".join(body) + "\n"
                f"    {cg.store(out.dtype, 'o', 'p_o', expr, result_type)}\n}}\n")

    def source() -> str:
        ranks = range(1, BUNDLED_RANKS + 1) if nd <= BUNDLED_RANKS else (nd,)
        return "".join(kernel_source(r) for r in ranks)

    dev = out.device
    kernel = cg.get_kernel(dev, key, source, name=f"k{nd}")
    i64 = np.int64
    args = [i64(n)] + [i64(s) for s in shape] + [out.buffer, i64(out.offset)] + [i64(s) for s in strides[0]]
    j = 1
    for i, x in enumerate(operands):
        if isinstance(x, CLArray):
            args += [x.buffer, i64(x.offset)] + [i64(s) for s in strides[j]]
            j += 1
        else:
            args.append(cg.scalar_arg(x, cts[i]))
    args += [cg.scalar_arg(v, t) for _, t, v in extra]
    cg.launch(dev, kernel, n, args)
    return out
