"""OpenCL C generation: type tables, load/store conversions, the program cache, launching.

Kernels are generated from templates per family and per dtype combination and compiled once
per (kernel key, device): `Device.programs` caches the built kernel for the process.

Storage and compute ("opmath") types follow PyTorch: float16 and bfloat16 are loaded into
float, computed there and rounded once on store (float16 through `vstore_half_rte`, bfloat16,
stored as ushort, by round-to-nearest-even); bool is stored as uchar 0/1 and computed as int.
"""
from __future__ import annotations

import numpy as np

from ember.core import fused_c

STORAGE = {"bool": "uchar", "uint8": "uchar", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
           "float16": "half", "bfloat16": "ushort", "float32": "float", "float64": "double"}
OPMATH = {"bool": "int", "uint8": "uchar", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
          "float16": "float", "bfloat16": "float", "float32": "float", "float64": "double"}
NUMPY_OF_CL = {"uchar": np.uint8, "char": np.int8, "short": np.int16, "int": np.int32, "long": np.int64,
               "float": np.float32, "double": np.float64, "ushort": np.uint16, "ulong": np.uint64}
FLOAT_CL = ("float", "double")

PRELUDE = r"""
#pragma OPENCL FP_CONTRACT OFF
#ifdef EMBER_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
inline float ember_bf16_to_float(ushort v) { return as_float(((uint)v) << 16); }
inline ushort ember_float_to_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x0040u);   /* quiet NaN, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);                                               /* round to nearest even */
    return (ushort)(u >> 16);
}
inline float ember_round_f16(float x) { ushort h; vstore_half_rte(x, 0, (half*)&h); return vload_half(0, (const half*)&h); }
inline float ember_round_bf16(float x) { return ember_bf16_to_float(ember_float_to_bf16(x)); }
inline long ember_ipow(long a, long b) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
    long r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
inline long ember_ifloordiv(long a, long b) {
    long q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
inline long ember_iremainder(long a, long b) {
    long r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* Philox4x32-10 (Random123), the stream of backends/cpu/array_kernels/philox.py, bit for bit */
inline uint4 ember_philox(ulong c, ulong seed) {
    uint x0 = (uint)c, x1 = (uint)(c >> 32), x2 = 0, x3 = 0;
    uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint hi0 = mul_hi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        uint hi1 = mul_hi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        uint n0 = hi1 ^ x1 ^ k0, n2 = hi0 ^ x3 ^ k1;
        x0 = n0; x1 = lo1; x2 = n2; x3 = lo0;
    }
    return (uint4)(x0, x1, x2, x3);
}
inline uint ember_philox_word(ulong seed, ulong base, ulong w) {
    uint4 b = ember_philox(base + w / 4, seed);
    uint k = (uint)(w & 3);
    return k == 0 ? b.x : (k == 1 ? b.y : (k == 2 ? b.z : b.w));
}
inline float ember_unit_f(uint w, int bits) { return (float)(w >> (32 - bits)) * ldexp(1.0f, -bits); }
#ifdef EMBER_FP64
inline double ember_unit_d(uint w0, uint w1) {
    return ((double)(w0 >> 5) * 67108864.0 + (double)(w1 >> 6)) * ldexp(1.0, -53);
}
#endif
#define EMBER_FLOORDIV(T)                                                    \
inline T ember_floordiv_##T(T a, T b) {                                      \
    if (b == 0) return a / b;                                                \
    T mod = fmod(a, b);                                                      \
    T div = (a - mod) / b;                                                   \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                        \
    T fl;                                                                    \
    if (div != 0) { fl = floor(div); if (div - fl > (T)0.5) fl += 1; }       \
    else fl = copysign((T)0, a / b);                                         \
    return fl;                                                               \
}
EMBER_FLOORDIV(float)
#ifdef EMBER_FP64
EMBER_FLOORDIV(double)
#endif
"""


def storage(dtype) -> str:
    return STORAGE[np.dtype(dtype).name]


def opmath(dtype) -> str:
    return OPMATH[np.dtype(dtype).name]


def load_type(dtype) -> str:
    """The type a load of `dtype` yields (float for float16/bfloat16)."""
    name = np.dtype(dtype).name
    return "float" if name in ("float16", "bfloat16") else STORAGE[name]


def load(dtype, ptr: str, idx: str) -> str:
    name = np.dtype(dtype).name
    if name == "float16":
        return f"vload_half({idx}, {ptr})"
    if name == "bfloat16":
        return f"ember_bf16_to_float({ptr}[{idx}])"
    return f"{ptr}[{idx}]"


def store(dtype, ptr: str, idx: str, expr: str, expr_type: str) -> str:
    name = np.dtype(dtype).name
    if name == "float16":
        src = expr if expr_type in FLOAT_CL else f"(float)({expr})"
        return f"vstore_half_rte({src}, {idx}, {ptr});"
    if name == "bfloat16":
        return f"{ptr}[{idx}] = ember_float_to_bf16((float)({expr}));"
    if name == "bool":
        return f"{ptr}[{idx}] = (uchar)(({expr}) != 0);"
    return f"{ptr}[{idx}] = ({STORAGE[name]})({expr});"


def scalar_arg(value, cltype: str):
    """A Python number as a kernel argument of OpenCL type `cltype` (integers wrap, as in PyTorch)."""
    np_t = NUMPY_OF_CL[cltype]
    if cltype in FLOAT_CL:
        with np.errstate(over="ignore"):
            return np_t(float(value))
    v = int(value)
    bits = np.dtype(np_t).itemsize * 8
    if np.issubdtype(np_t, np.signedinteger):
        v = (v + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
    else:
        v %= 2 ** bits
    return np_t(v)


def get_kernel(dev, key, source_fn, name: str = "k"):
    """The compiled kernel `name` for `key` on `dev`, built from `source_fn()` on first use."""
    return get_program(dev, key, source_fn)[name]


def launch(dev, kernel, n: int, args, local: int | None = None) -> None:
    """1-d launch of `n` work-items, always with an explicit work-group size.

    Without `local`, a fixed size per device (64 on CPUs, 256 elsewhere, capped by the device):
    PoCL builds one binary per local size and, given none, picks one per global size, i.e. a new
    build for every tensor size. The global size is padded: the kernels guard `gid >= n`.
    """
    if n <= 0:
        return
    if local is None:
        local = min(64 if "cpu" in dev.info.type else 256, dev.max_wg)
        launch_nd(dev, kernel, (-(-n // local) * local,), (local,), args)
    else:
        launch_nd(dev, kernel, (n,), (local,), args)


def launch_nd(dev, kernel, global_size: tuple, local_size: tuple, args) -> None:
    """Enqueue `kernel` on `dev`'s queue: every launch of the plugin goes through here and is counted
    (`launches()`: benchmarks report kernels per step).

    Setting a kernel's arguments and enqueueing it is one step under the device's launch lock: the
    kernel objects are shared by every thread, and OpenCL's clSetKernelArg is the one call of the API
    that is not safe to make concurrently on one kernel."""
    global _LAUNCHES
    with dev.launch_lock:
        _LAUNCHES += 1
        kernel(dev.queue, global_size, local_size, *args)


_LAUNCHES = 0


def launches() -> int:
    """Kernels launched by this process so far."""
    return _LAUNCHES


def collapse(shape, stride_lists):
    """Drop size-1 dims and merge dims that are contiguous in every operand (fewer index steps)."""
    return fused_c.collapse(shape, stride_lists)


def index_code(ndim: int, names: list[str]) -> str:
    """C statements computing offsets `p_<name>` of the element `gid` (row-major decomposition)."""
    return fused_c.index_code(ndim, names, "long")


def get_program(dev, key, source_fn) -> dict:
    """{name: kernel} of one program holding several kernels, built once for `key` on `dev`.

    One build of many kernels costs little more than one of a single kernel (PoCL: most of a
    build is fixed cost), so families put the kernels of every dtype in one program."""
    ks = dev.programs.get(key)
    if ks is None:
        import pyopencl as cl

        with dev.lock:
            ks = dev.programs.get(key)
            if ks is None:
                opts = ["-DEMBER_FP64"] if dev.info.fp64 else []
                src = PRELUDE + source_fn()
                try:
                    prg = cl.Program(dev.context, src).build(options=opts)
                except cl.Error as exc:
                    raise RuntimeError(f"ember_opencl: building kernel(s) {key[0]!r} failed:\n{exc}\n{src}") from None
                ks = {k.function_name: k for k in prg.all_kernels()}
                dev.programs[key] = ks
    return ks
