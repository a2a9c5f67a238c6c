"""Compile ember-cuda's generated CUDA C on the host (g++) to test it where there is no GPU.

The Philox block function is plain C: compiled as is, it must give the reference's words bit
for bit. The fused row kernels (softmax, layer_norm, cross_entropy) are compiled with stub
definitions of the CUDA built-ins and run with one thread per block (`blockDim.x == 1`,
blocks in a loop): that checks their syntax and their arithmetic (max shift, sums, the
two-pass variance, the class pick, ignore_index, the out-of-range flag) against numpy; the
shared-memory tree reduction itself (`blockDim.x > 1`) is exercised only on a GPU
(`make gpu-check`).
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

CXX = shutil.which("g++") or shutil.which("c++")

PRELUDE = r"""
#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct ember_dim3 { unsigned x, y, z; };
static ember_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1};
static inline void __syncthreads() {}
"""

_CACHE = Path(tempfile.gettempdir()) / "ember_cuda_host_emulation"


def build(source: str) -> ctypes.CDLL:
    """Compile `source` (C++) into a shared library, cached by content, and load it."""
    _CACHE.mkdir(exist_ok=True)
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    lib = _CACHE / f"k{key}.so"
    if not lib.exists():
        src = _CACHE / f"k{key}.cpp"
        src.write_text(source)
        tmp = lib.with_suffix(".tmp.so")
        subprocess.run([CXX, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(tmp), str(src)],
                       check=True, capture_output=True, text=True)
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


def row_kernel_library(body: str, ctype: str, kernel: str, params: str, args: str) -> ctypes.CDLL:
    """A library exporting `run(rows, <params>)` that launches `kernel` once per row, one thread each."""
    from ember_cuda.kernels import fused

    source = PRELUDE + (fused._REDUCE + body).format(T=ctype) + f"""
extern "C" void run(long long rows, {params}) {{
    for (long long ember_row = 0; ember_row < rows; ++ember_row) {{
        blockIdx.x = (unsigned)ember_row;
        {kernel}({args});
    }}
}}
"""
    return build(source)


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)
