"""Compile ember-cuda's generated CUDA C on the host (g++) to test it where there is no GPU.

The Philox block function is plain C: compiled as is, it must give the reference's words bit
for bit. The fused row kernels (softmax, layer_norm, cross_entropy) are compiled with host
definitions of the CUDA built-ins and run block by block, each block's threads as real host
threads: `threadIdx` is thread-local, `__shared__` memory is one static array the threads of a
block share, `__syncthreads()` is a std::barrier. That checks their syntax, their arithmetic (max
shift, sums, the two-pass variance, the class pick, ignore_index, the out-of-range flag) and the
shared-memory tree reductions against numpy, without a GPU.
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
#include <barrier>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct ember_dim3 { unsigned x, y, z; };
static thread_local ember_dim3 threadIdx = {0, 0, 0};
static ember_dim3 blockIdx = {0, 0, 0}, blockDim = {1, 1, 1};
static std::barrier<>* ember_block_barrier = nullptr;
static inline void __syncthreads() { ember_block_barrier->arrive_and_wait(); }
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
        subprocess.run([CXX, "-std=c++20", "-pthread", "-O0", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(tmp),
                        str(src)],
                       check=True, capture_output=True, text=True)
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


# kernel name -> (source attribute of ember_cuda.kernels.fused, parameters, call arguments); T: the type
KERNELS = {
    "softmax": ("_SOFTMAX", "const void* x, void* y, long long n, int lg", "(const T*)x, (T*)y, n, lg"),
    "layer_norm": ("_LAYER_NORM",
                   "const void* x, const void* w, const void* b, void* y, void* m, void* r, long long n, T eps, "
                   "int hw, int hb",
                   "(const T*)x, (const T*)w, (const T*)b, (T*)y, (T*)m, (T*)r, n, eps, hw, hb"),
    "cross_entropy": ("_CROSS_ENTROPY",
                      "const void* x, const void* t, const void* w, void* loss, void* ws, void* bad, long long C, "
                      "long long ig, int hw",
                      "(const T*)x, (const long long*)t, (const T*)w, (T*)loss, (T*)ws, (int*)bad, C, ig, hw"),
}


def fused_library() -> ctypes.CDLL:
    """Every fused kernel for float and double in one library (one compile): `run_<name>_<type>(rows,
    threads, <parameters>)` runs `rows` blocks of `threads` threads."""
    from ember_cuda.kernels import fused

    parts = [PRELUDE]
    for ctype in ("float", "double"):
        for name, (attr, params, args) in KERNELS.items():
            body = (fused._REDUCE + getattr(fused, attr)).format(T=ctype).replace('extern "C" ', "")
            p, a = params.replace("T ", f"{ctype} "), args.replace("T*", f"{ctype}*")
            parts.append(f"""
namespace ember_{name}_{ctype} {{
{body}
}}
extern "C" void run_{name}_{ctype}(long long rows, int threads, {p}) {{
    blockDim.x = (unsigned)threads;
    std::barrier<> sync(threads);
    ember_block_barrier = &sync;
    for (long long ember_row = 0; ember_row < rows; ++ember_row) {{
        blockIdx.x = (unsigned)ember_row;
        std::vector<std::thread> block;
        for (int ember_t = 0; ember_t < threads; ++ember_t)
            block.emplace_back([&, ember_t] {{
                threadIdx.x = (unsigned)ember_t;
                ember_{name}_{ctype}::ember_{name}({a});
            }});
        for (auto& th : block) th.join();
    }}
}}
""")
    return build("".join(parts))


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def launcher(lib: ctypes.CDLL):
    """A stand-in for ember_cuda.kernels.fused._kernel: `kernel(grid, block, args)` on the host library,
    numpy arrays passed as pointers, numpy scalars as the C types they stand for."""
    import numpy as np

    conv = {np.int64: ctypes.c_longlong, np.int32: ctypes.c_int, np.float32: ctypes.c_float,
            np.float64: ctypes.c_double}

    def get(name: str, body: str, ctype: str):
        fn = getattr(lib, f"run_{name.removeprefix('ember_')}_{ctype}")

        def launch(grid, block, args):
            c_args = [ptr(a) if isinstance(a, np.ndarray) else conv[type(a)](a) for a in args]
            fn(ctypes.c_longlong(grid[0]), ctypes.c_int(block[0]), *c_args)
        return launch
    return get
