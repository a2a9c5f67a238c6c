"""bmm on the opencl device (mm, matmul, linear and conv via im2col reach it).

The kernels and the per-device blocking are in `gemm`. On CPU devices (PoCL) both operands
are first packed into K-major panels in the opmath type (two O(K(n+m)) passes against the
product's O(nKm); they also take any strides, offsets, dtype and broadcast batch), then the
register-blocked kernel runs over the panels. On GPUs the local-memory kernel reads the
operands in place with their own strides.

`bmm(backend, spec, a, b)` is the kernel (kernels/table.py); the table `KERNELS` ends the module.
"""
from __future__ import annotations

import math

import numpy as np

from ember.core.numpy_interop import to_numpy_dtype

from .. import codegen as cg
from . import elementwise, gemm


def _batch(x) -> tuple[int, int, int]:
    """(outer batch stride, inner batch stride, inner batch size) of a 3-d operand (one batch dimension:
    inner size 1) or a 4-d one (two batch dimensions, read in place: strided_bmm): batch `bat` starts at
    (bat / inner size) * outer stride + (bat % inner size) * inner stride."""
    if len(x.shape) == 4:
        return x.elem_strides[0], x.elem_strides[1], x.shape[1]
    return x.elem_strides[0], 0, 1


def _broadcast(x, nb: int) -> bool:
    """Whether one matrix serves every batch (stride 0 along the batch, or a single product)."""
    outer, inner, _ = _batch(x)
    return nb == 1 or outer == inner == 0


def _pack_pair(backend, dev, a, b, acc: str, R: int, W: int, n: int, m: int, nb: int, K: int):
    """Both operands as K-major panels in one launch (gemm.pack_pair_source): `a` (batch, n, K) in panels of
    R rows, `b` (batch, K, m) in panels of W columns; ((A's panels, its batch stride), (B's, its))."""
    i64 = np.int64
    args, packed, extent = [], [], [0, 0]
    for x, tile, outer, s_outer, s_k in ((a, R, n, a.elem_strides[-2], a.elem_strides[-1]),
                                         (b, W, m, b.elem_strides[-1], b.elem_strides[-2])):
        nblk = -(-outer // tile)
        batches = 1 if _broadcast(x, nb) else nb
        out = backend.new_array((batches * nblk * K * tile,), cg.NUMPY_OF_CL[acc], dev)
        sbat, sbat2, nb2 = _batch(x)
        args += [x.buffer, i64(x.offset), i64(sbat), i64(sbat2), i64(nb2), i64(s_outer), i64(s_k), out.buffer,
                 i64(outer), i64(nblk), np.int32(tile)]
        packed.append((out, 0 if batches == 1 else nblk * K * tile))
        extent = [max(extent[0], nblk), extent[1] + batches]
    batches_a = 1 if _broadcast(a, nb) else nb
    kernel = cg.get_kernel(dev, ("gemm_pack_pair", a.dtype.name, b.dtype.name, acc),
                           lambda: gemm.pack_pair_source(a.dtype, b.dtype, acc))
    lx = min(64, dev.max_wg)
    cg.launch_nd(dev, kernel, (-(-K // lx) * lx, extent[0], extent[1]), (lx, 1, 1), args + [i64(batches_a), i64(K)])
    return packed


def _packed_nbytes(x, acc_size: int, tile: int, outer: int, nb: int, K: int) -> int:
    """What `_pack_pair` allocates for the operand `x` (see there)."""
    batches = 1 if _broadcast(x, nb) else nb
    return batches * -(-outer // tile) * K * tile * acc_size


def bmm_workspace(dev, a, b) -> tuple[int, ...]:
    """The scratch `bmm` allocates on `dev` for operands shaped like `a` and `b` (the two packed
    panels of the register kernel; none for the local-memory kernel): ember.memory's prediction."""
    out_dt = np.result_type(_numpy_dtype(a.dtype), _numpy_dtype(b.dtype))
    nb, n, k = a.shape
    m = b.shape[2]
    cfg = gemm.config_for(dev, out_dt)
    if cfg.variant != "register" or n * m * nb == 0 or k == 0:
        return ()
    acc_size = np.dtype(cg.NUMPY_OF_CL[cg.opmath(out_dt)]).itemsize
    return (_packed_nbytes(a, acc_size, cfg.rows, n, nb, k), _packed_nbytes(b, acc_size, cfg.width, m, nb, k))


def bmm(backend, spec, a, b):
    """out[i] = a[i] @ b[i] in the opmath type, by the kernel `gemm.config_for` picks for the device
    (a zero-length K fills the result with zeros). An operand may be 4-d, its two leading dimensions both
    batch dimensions read with their own strides (compiled code's strided_bmm, ember/compiler/layout.py)."""
    out_dt = to_numpy_dtype(spec[1])
    dev = a.device
    out = backend.new_array(spec[0], out_dt, dev)
    n, k = a.shape[-2:]
    nb, m = math.prod(a.shape[:-2]), b.shape[-1]
    if out.size == 0:
        return out
    acc = cg.opmath(out_dt)
    if k == 0:
        return elementwise.run(out, [0], [acc], "x0", acc, tag="fill")
    cfg = gemm.config_for(dev, out_dt)
    i64 = np.int64
    key = ("bmm", a.dtype.name, b.dtype.name, out_dt.name, cfg)
    if cfg.variant == "register":
        R, W = cfg.rows, cfg.width
        (ap, sapb), (bp, sbpb) = _pack_pair(backend, dev, a, b, acc, R, W, n, m, nb, k)
        kernel = cg.get_kernel(dev, key, lambda: gemm.register_source(out_dt, cfg))
        gx, gy = -(-m // W), -(-n // R)
        lx, ly = (min(g, dev.max_wg) for g in cfg.group)   # fixed: PoCL compiles per local size
        gx, gy = -(-gx // lx) * lx, -(-gy // ly) * ly
        cg.launch_nd(dev, kernel, (gx, gy, nb), (lx, ly, 1),
                     (ap.buffer, i64(sapb), bp.buffer, i64(sbpb // W), out.buffer, i64(n), i64(m), i64(k)))
        return out
    S, TS = cfg.width, cfg.width * cfg.rows
    kernel = cg.get_kernel(dev, key, lambda: gemm.local_source(a.dtype, b.dtype, out_dt, cfg))
    gx, gy = -(-m // TS) * S, -(-n // TS) * S
    operands = [value for x in (a, b) for value in (x.buffer, i64(x.offset), *map(i64, _batch(x)),
                                                   *map(i64, x.elem_strides[-2:]))]
    cg.launch_nd(dev, kernel, (gx, gy, nb), (S, S, 1), (*operands, out.buffer, i64(n), i64(m), i64(k)))
    return out


def _numpy_dtype(dtype):
    """A workspace function's operand dtype as numpy's: meta arrays have ember dtypes, CLArrays numpy's."""
    return dtype if isinstance(dtype, np.dtype) else to_numpy_dtype(dtype)


def mm_workspace(dev, a, b) -> tuple[int, ...]:
    """The scratch `mm` allocates (bmm's for one product)."""
    out_dt = np.result_type(_numpy_dtype(a.dtype), _numpy_dtype(b.dtype))
    (n, k), m = a.shape, b.shape[1]
    cfg = gemm.config_for(dev, out_dt)
    if cfg.variant != "register" or n * m == 0 or k == 0:
        return ()
    acc_size = np.dtype(cg.NUMPY_OF_CL[cg.opmath(out_dt)]).itemsize
    return (-(-n // cfg.rows) * k * cfg.rows * acc_size, -(-m // cfg.width) * k * cfg.width * acc_size)


def mm(backend, spec, a, b):
    """a @ b for a (n, k) and b (k, m): bmm's kernel on one-product views, its result seen as (n, m).

    A native kernel, not mm's explicit one (unsqueeze, bmm, select): the result is no view of a larger
    tensor, so autograd makes a weight's gradient from it its `.grad` without a copy."""
    (n, k), m = a.shape, b.shape[1]
    a3 = a.view((1, n, k), (0,) + a.elem_strides, a.offset)
    b3 = b.view((1, k, m), (0,) + b.elem_strides, b.offset)
    out = bmm(backend, ((1, n, m), spec[1]), a3, b3)
    return out.view((n, m), out.elem_strides[1:], out.offset)


KERNELS = {"bmm": bmm, "mm": mm}
