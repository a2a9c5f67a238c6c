"""Fused cupy RawKernels: softmax / log_softmax, layer_norm and cross_entropy, one block per row.

The shared array-module versions take 4-6 cupy kernels each (max, subtract, exp, sum, divide,
...) with a temporary per step; these read each row once or twice from global memory and
reduce in shared memory. Each handles the common case (float32/float64 compute, contiguous
rows after moving the reduced dim last) and hands every other case to the shared kernel it
replaces, so behaviour and error messages stay the library's:

* softmax.int / log_softmax.int: any dim (moved last, copied back when it is not last);
  float16 inputs compute in float32 and round once, like PyTorch's opmath.
* native_layer_norm: the two-pass mean and variance (no cancellation), rstd = 1/sqrt(var+eps),
  the affine weight and bias applied in the same pass; float16 computes in float32.
* cross_entropy_loss: (N, C) logits with class-index targets, no label smoothing, float32 or
  float64; out-of-range targets are flagged per row and re-run through the shared kernel for
  its error message. Other shapes and probability targets use the shared kernel.

Sources are generated per compute type (float, double) and compiled once per device by cupy.
Each kernel is `fn(am, spec, *op_args)` with `am` the `CudaArrayModule` of kernels/__init__.py
(`am.library` holds the shared kernels they hand cases to); the table `KERNELS` ends the module.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from . import CudaArrayModule

MAX_THREADS = 256

_REDUCE = """
__device__ __forceinline__ {T} ember_block_max({T} v, {T}* sh) {{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }}
    {T} r = sh[0];
    __syncthreads();
    return r;
}}

__device__ __forceinline__ {T} ember_block_sum({T} v, {T}* sh) {{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }}
    {T} r = sh[0];
    __syncthreads();
    return r;
}}

/* the row's max m and sum of exp(x - m): the stable log-sum-exp's two parts (softmax, cross entropy) */
__device__ __forceinline__ void ember_row_max_sumexp(const {T}* xr, long long n, {T}* sh, {T}* m_out, {T}* s_out) {{
    {T} m = xr[0];                      /* rows are never empty */
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, xr[i]);
    m = ember_block_max(m, sh);
    {T} s = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += exp(xr[i] - m);
    *m_out = m;
    *s_out = ember_block_sum(s, sh);
}}
"""

_SOFTMAX = """
extern "C" __global__ void ember_softmax(const {T}* x, {T}* y, long long n, int log_out) {{
    __shared__ {T} sh[%d];
    const {T}* xr = x + (long long)blockIdx.x * n;
    {T}* yr = y + (long long)blockIdx.x * n;
    {T} m, s;
    ember_row_max_sumexp(xr, n, sh, &m, &s);
    if (log_out) {{
        {T} ls = log(s);
        for (long long i = threadIdx.x; i < n; i += blockDim.x) yr[i] = (xr[i] - m) - ls;
    }} else {{
        for (long long i = threadIdx.x; i < n; i += blockDim.x) yr[i] = exp(xr[i] - m) / s;
    }}
}}
""" % MAX_THREADS

_LAYER_NORM = """
extern "C" __global__ void ember_layer_norm(const {T}* x, const {T}* w, const {T}* b, {T}* y, {T}* mean_out,
                                            {T}* rstd_out, long long n, {T} eps, int has_w, int has_b) {{
    __shared__ {T} sh[%d];
    const {T}* xr = x + (long long)blockIdx.x * n;
    {T}* yr = y + (long long)blockIdx.x * n;
    {T} s = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    {T} mean = ember_block_sum(s, sh) / ({T})n;
    {T} q = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {{
        {T} d = xr[i] - mean;
        q += d * d;
    }}
    {T} rstd = ({T})1 / sqrt(ember_block_sum(q, sh) / ({T})n + eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {{
        {T} v = (xr[i] - mean) * rstd;
        if (has_w) v = v * w[i];
        if (has_b) v = v + b[i];
        yr[i] = v;
    }}
    if (threadIdx.x == 0) {{
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }}
}}
""" % MAX_THREADS

_CROSS_ENTROPY = """
extern "C" __global__ void ember_cross_entropy(const {T}* x, const long long* target, const {T}* weight,
                                               {T}* loss, {T}* wsel, int* bad, long long C,
                                               long long ignore_index, int has_w) {{
    __shared__ {T} sh[%d];
    const {T}* xr = x + (long long)blockIdx.x * C;
    {T} m, s;
    ember_row_max_sumexp(xr, C, sh, &m, &s);
    if (threadIdx.x == 0) {{
        long long t = target[blockIdx.x];
        {T} l = 0, w = 0;
        if (t != ignore_index) {{
            if (t < 0 || t >= C) {{
                bad[blockIdx.x] = 1;
            }} else {{
                w = has_w ? weight[t] : ({T})1;
                l = -(((xr[t] - m) - log(s)) * w);
            }}
        }}
        loss[blockIdx.x] = l;
        wsel[blockIdx.x] = w;
    }}
}}
""" % MAX_THREADS

_CTYPE = {"float32": "float", "float64": "double"}
_SCALAR = {"float32": np.float32, "float64": np.float64}      # eps as the kernel's scalar type
_COMPILED: dict = {}


def _kernel(name: str, body: str, ctype: str):
    key = (name, ctype)
    k = _COMPILED.get(key)
    if k is None:
        import cupy

        k = _COMPILED[key] = cupy.RawKernel((_REDUCE + body).format(T=ctype), name)
    return k


def _threads(n: int) -> int:
    t = 32
    while t < n and t < MAX_THREADS:
        t *= 2
    return t


def _softmax_rows(am: CudaArrayModule, log_out: int, op: str, spec, a, dim, dtype):
    """softmax (`log_out` 0) or log_softmax (1) of `a` along `dim`: the rows moved last and made
    contiguous, one block per row; `op`, the library's kernel, takes the cases it does not."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    ct = am.f32 if dt == am.f16 else dt
    if a.ndim == 0 or a.size == 0 or ct.name not in _CTYPE:
        return am.library[op](spec, a, dim, dtype)
    d = int(dim) % a.ndim
    x = a.astype(ct, copy=False)
    if d != a.ndim - 1:
        x = xp.moveaxis(x, d, -1)
    x = xp.ascontiguousarray(x)
    n = x.shape[-1]
    y = xp.empty(x.shape, dtype=ct)
    _kernel("ember_softmax", _SOFTMAX, _CTYPE[ct.name])((x.size // n,), (_threads(n),),
                                                        (x, y, np.int64(n), np.int32(log_out)))
    if d != a.ndim - 1:
        y = xp.ascontiguousarray(xp.moveaxis(y, -1, d))
    return y if y.dtype == dt else y.astype(dt)


def softmax(am: CudaArrayModule, spec, a, dim, dtype=None):
    """softmax.int (see `_softmax_rows`)."""
    return _softmax_rows(am, 0, "softmax.int", spec, a, dim, dtype)


def log_softmax(am: CudaArrayModule, spec, a, dim, dtype=None):
    """log_softmax.int (see `_softmax_rows`)."""
    return _softmax_rows(am, 1, "log_softmax.int", spec, a, dim, dtype)


def native_layer_norm(am: CudaArrayModule, specs, x, normalized_shape, w, b, eps):
    """(y, mean, rstd) over the trailing `normalized_shape` dims, one block per row."""
    xp = am.xp
    native_of = am.native_of
    dt = native_of[specs[0][1]]
    ct = am.f32 if dt == am.f16 else dt
    if x.size == 0 or ct.name not in _CTYPE:
        return am.library["native_layer_norm"](specs, x, normalized_shape, w, b, eps)
    n = 1
    for s in normalized_shape:
        n *= int(s)
    xc = xp.ascontiguousarray(x.astype(ct, copy=False))
    rows = xc.size // n
    y = xp.empty(xc.shape, dtype=ct)
    mean = xp.empty(rows, dtype=ct)
    rstd = xp.empty(rows, dtype=ct)
    wc = xp.ascontiguousarray(w.astype(ct, copy=False)).reshape(-1) if w is not None else xc
    bc = xp.ascontiguousarray(b.astype(ct, copy=False)).reshape(-1) if b is not None else xc
    _kernel("ember_layer_norm", _LAYER_NORM, _CTYPE[ct.name])(
        (rows,), (_threads(n),),
        (xc, wc, bc, y, mean, rstd, np.int64(n), _SCALAR[ct.name](eps), np.int32(w is not None),
         np.int32(b is not None)))
    return (y if y.dtype == dt else y.astype(dt), mean.reshape(specs[1][0]).astype(native_of[specs[1][1]]),
            rstd.reshape(specs[2][0]).astype(native_of[specs[2][1]]))


def cross_entropy_loss(am: CudaArrayModule, spec, x, target, weight=None, reduction=1, ignore_index=-100,
                       label_smoothing=0.0):
    """(N, C) logits and class-index targets, one block per row; the library's kernel takes every
    other case, and re-runs a call with an out-of-range target for its error."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    if (x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0 or dt.name not in _CTYPE or x.dtype != dt
            or target.dtype.kind not in "iu" or target.ndim != 1 or label_smoothing != 0):
        return am.library["cross_entropy_loss"](spec, x, target, weight, reduction, ignore_index, label_smoothing)
    N, C = x.shape
    xc = xp.ascontiguousarray(x)
    t = xp.ascontiguousarray(target.astype(xp.int64, copy=False))
    loss = xp.empty(N, dtype=dt)
    wsel = xp.empty(N, dtype=dt)
    bad = xp.zeros(N, dtype=xp.int32)
    wc = xp.ascontiguousarray(weight.astype(dt, copy=False)) if weight is not None else xc
    _kernel("ember_cross_entropy", _CROSS_ENTROPY, _CTYPE[dt.name])(
        (N,), (_threads(C),),
        (xc, t, wc, loss, wsel, bad, np.int64(C), np.int64(ignore_index), np.int32(weight is not None)))
    if bool(bad.any()):              # an out-of-range target: the library's kernel raises its error
        return am.library["cross_entropy_loss"](spec, x, target, weight, reduction, ignore_index, label_smoothing)
    if reduction == 0:
        return loss
    if reduction == 2:
        return loss.sum()
    return loss.sum() / wsel.sum()


KERNELS = {"softmax.int": softmax, "log_softmax.int": log_softmax, "native_layer_norm": native_layer_norm,
           "cross_entropy_loss": cross_entropy_loss}
