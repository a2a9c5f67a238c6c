"""Counter-based random numbers (Philox4x32-10) written against the array-module API.

Every function takes ``xp`` -- the ``numpy`` module, or ``cupy``, which has the same API --
as its first argument and uses only operations both share (uint32/uint64 arithmetic, shifts,
bitwise ops, ``astype``, ``arange``, ``stack``/``reshape``, elementwise math).  Work is
vectorised over all blocks; the only Python loop is over the 10 Philox rounds.

Why counter-based: the n-th random word of a stream is a pure function of (seed, n), so the
same seed gives the same numbers on cpu, opencl and cuda, and any backend can compute any
slice of the stream in parallel.  The OpenCL and CUDA backends re-implement the
specification below bit-for-bit in C; this module is the reference.

SPECIFICATION
=============

1. Block function: Philox4x32-10 exactly as in Random123 (Salmon et al., SC11).
   State: counter ``x = (x0, x1, x2, x3)`` (uint32), key ``k = (k0, k1)`` (uint32).
   Constants: ``M0 = 0xD2511F53``, ``M1 = 0xCD9E8D57``, ``W0 = 0x9E3779B9``,
   ``W1 = 0xBB67AE85``.  ``mulhilo(a, b)`` = high and low 32 bits of the 64-bit product.
   One round::

       (hi0, lo0) = mulhilo(M0, x0)
       (hi1, lo1) = mulhilo(M1, x2)
       x = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0)

   Ten rounds; between consecutive rounds (9 times) the key is bumped:
   ``k0 += W0; k1 += W1`` (mod 2**32).  The output is the final ``x``.
   Known answers (counter; key -> output), from Random123's kat_vectors:
   ``0,0,0,0; 0,0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8``.

2. Stream.  A stream is ``(seed, offset)``: ``seed`` a 64-bit integer (taken mod 2**64,
   so negative Python seeds are allowed), ``offset`` the number of 32-bit words already
   consumed, a non-negative multiple of 4.  ``key = (seed & 0xffffffff, seed >> 32)``.
   Block ``i`` (``i = 0, 1, ...``) of a draw uses counter
   ``(c & 0xffffffff, c >> 32, 0, 0)`` with ``c = (offset // 4 + i) mod 2**64`` and yields
   4 words; the words of a draw are block0 word0..3, block1 word0..3, ...  A draw of ``n``
   words consumes whole blocks: ``new_offset = offset + 4 * ceil(n / 4)``.

3. ``uniform`` (one draw of ``W`` words, ``W`` given per dtype below):

   * float32 / float16 / bfloat16: one word per element, element ``j`` uses word ``j``.
     ``u = float32(w >> (32 - B)) * 2**-B`` with ``B`` the target's significand digits
     (24 for float32, 11 for float16, 8 for bfloat16), so ``u`` is exact in the target and
     in ``[0, 1)``; then, in float32 with no fused multiply-add (C: ``-ffp-contract=off`` /
     ``__fmul_rn`` + ``__fadd_rn``)::

         r = float32(low) + u * float32(high - low)   # high - low computed in double

     and finally ``r`` is cast (round to nearest even) to the target dtype.
   * float64: two words per element, element ``j`` uses words ``2j`` (w0) and ``2j+1`` (w1).
     ``u = (double(w0 >> 5) * 2**26 + double(w1 >> 6)) * 2**-53`` (exact, in ``[0, 1)``),
     ``r = low + u * (high - low)`` in double, no FMA.

   With ``low = 0, high = 1`` every result lies in ``[0, 1)`` for every dtype; for other
   bounds the rounding of ``low + u*span`` can reach ``high``, as in PyTorch.

4. ``normal`` (Box-Muller).  For ``n`` elements, ``P = ceil(n / 2)`` pairs.  Uniforms are
   produced exactly as in ``uniform`` on [0, 1) (``U`` = 1 word each for float32/16/bf16,
   computed in float32; 2 words each for float64, computed in float64), ``2P`` of them,
   so the draw has ``2P * U`` words.  Pair ``p`` uses uniforms ``a = u[2p]``,
   ``b = u[2p+1]``::

       u1 = 1 - a                      # in (0, 1], so log(u1) is finite
       rad = sqrt(-2 * log(u1))
       theta = (2*pi) * b              # 2*pi rounded to the compute dtype first
       z[2p] = rad * cos(theta);  z[2p+1] = rad * sin(theta)

   then ``out = z * std + mean`` in the compute dtype (mean/std rounded to it), truncated
   to ``n`` elements (an odd ``n`` drops the last sine), then cast to the target dtype.
   Note: log/sqrt/cos/sin come from each platform's math library, so normals agree across
   backends to a few ulps, not bit-for-bit (the underlying uniforms are bit-exact).

5. ``randint`` in ``[low, high)``: two words per element, element ``j`` uses
   ``v = w[2j] | (w[2j+1] << 32)`` (uint64); ``r = (v mod (high - low)) + low`` computed
   in uint64 with wrap-around, reinterpreted as int64 and cast to the target dtype.
   Modulo bias: a value is over-represented by at most one count in ``2**64 // range``,
   i.e. relative bias below ``range / 2**64`` (< 1e-10 for ranges below 2**30).

Every drawing function returns ``(result, new_offset)`` so that a Generator object
elsewhere can advance its offset.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

__all__ = [
    "PHILOX_M0",
    "PHILOX_M1",
    "PHILOX_W0",
    "PHILOX_W1",
    "philox4x32_10",
    "stream_key",
    "random_bits",
    "uniform",
    "normal",
    "randint",
]

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
PHILOX_ROUNDS = 10

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

# Inclusive value bounds of the integer dtypes randint supports.
_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "uint8": (0, 2**8 - 1),
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

def _mulhilo(xp: Any, multiplier: int, x: Any) -> tuple[Any, Any]:
    """High and low 32-bit halves of ``multiplier * x`` for a uint32 array ``x``.

    The product of two 32-bit values fits in uint64, which numpy and cupy both support.
    """
    prod = x.astype(xp.uint64) * xp.uint64(multiplier)
    hi = (prod >> xp.uint64(32)).astype(xp.uint32)
    lo = (prod & xp.uint64(_MASK32)).astype(xp.uint32)
    return hi, lo


def philox4x32_10(xp: Any, key: tuple[int, int], counters: Any) -> Any:
    """Apply the Philox4x32-10 block function to every row of ``counters``.

    ``key`` is two 32-bit Python ints ``(k0, k1)``; ``counters`` is a uint32 array of shape
    ``(n, 4)``.  Returns a new uint32 array of shape ``(n, 4)``, row ``i`` being
    Philox4x32-10(counters[i], key) as defined by Random123.
    """
    if counters.ndim != 2 or counters.shape[1] != 4:
        raise ValueError(f"counters must have shape (n, 4), got {tuple(counters.shape)}")
    if counters.dtype != xp.uint32:
        raise TypeError(f"counters must be uint32, got {counters.dtype}")
    k0 = int(key[0]) & _MASK32
    k1 = int(key[1]) & _MASK32
    x0, x1, x2, x3 = (counters[:, j] for j in range(4))
    for rnd in range(PHILOX_ROUNDS):
        if rnd > 0:  # key schedule: bump between rounds
            k0 = (k0 + PHILOX_W0) & _MASK32
            k1 = (k1 + PHILOX_W1) & _MASK32
        hi0, lo0 = _mulhilo(xp, PHILOX_M0, x0)
        hi1, lo1 = _mulhilo(xp, PHILOX_M1, x2)
        x0, x1, x2, x3 = (
            hi1 ^ x1 ^ xp.uint32(k0),
            lo1,
            hi0 ^ x3 ^ xp.uint32(k1),
            lo0,
        )
    return xp.stack([x0, x1, x2, x3], axis=1)


def stream_key(seed: int) -> tuple[int, int]:
    """Philox key of the stream with this 64-bit ``seed`` (taken mod 2**64)."""
    s = int(seed) & _MASK64
    return (s & _MASK32, s >> 32)


def _check_offset(offset: int) -> int:
    """Validate a stream offset (non-negative multiple of 4) and return it as an int."""
    offset = int(offset)
    if offset < 0 or offset % 4 != 0:
        raise ValueError(f"offset must be a non-negative multiple of 4, got {offset}")
    return offset


class BlockFunction:
    """A fused block function for an array module that cannot carry one as an attribute (numpy), and when
    to use it: `load()` imports it (slow: a compiler), so a draw of `worth_loading` blocks or more loads
    it, as does the draw after `eager_draws` smaller ones (a training loop's dropout masks) or any draw once
    `cheap()` says loading costs little now; once loaded every draw of `min_blocks` or more takes it."""

    def __init__(self, load: Callable[[], Callable], worth_loading: int, min_blocks: int = 64,
                 eager_draws: int = 64, cheap: Callable[[], bool] = lambda: False) -> None:
        self.load, self.worth_loading, self.min_blocks = load, worth_loading, min_blocks
        self.eager_draws, self.cheap = eager_draws, cheap
        self.draws = 0
        self.loaded: Callable | None = None

    def for_draw(self, nblocks: int) -> Callable | None:
        if nblocks < self.min_blocks:
            return None
        if self.loaded is None:
            self.draws += 1
            if nblocks < self.worth_loading and self.draws <= self.eager_draws and not self.cheap():
                return None
            self.loaded = self.load()
        return self.loaded


#: {array module name: BlockFunction} registered by backends (ember_cpu: a numba loop for numpy)
BLOCK_FUNCTIONS: dict[str, BlockFunction] = {}


def random_bits(xp: Any, seed: int, offset: int, n: int) -> tuple[Any, int]:
    """Draw ``n`` uint32 words from stream ``(seed, offset)``.

    Returns ``(words, new_offset)`` where ``words`` is a 1-D uint32 array of length ``n``
    and ``new_offset = offset + 4 * ceil(n / 4)`` (whole blocks are always consumed, so
    drawing ``n`` then ``m`` words equals drawing ``n + m`` when ``n`` is a multiple of 4).
    """
    offset = _check_offset(offset)
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    nblocks = -(-n // 4)
    base = (offset // 4) & _MASK64
    fused = getattr(xp, "philox_blocks", None)
    if fused is None and BLOCK_FUNCTIONS:
        registered = BLOCK_FUNCTIONS.get(getattr(xp, "__name__", ""))
        fused = registered.for_draw(nblocks) if registered is not None else None
    if fused is not None:
        # an array-module namespace may bring a fused block function (ember_cuda's RawKernel,
        # generated from this module's constants): philox_blocks(seed, base, nblocks) returns
        # the nblocks * 4 words of this specification as a 1-D uint32 array
        return fused(int(seed) & _MASK64, base, nblocks)[:n], offset + 4 * nblocks
    # uint64 addition wraps mod 2**64, matching the specification.
    c = xp.arange(nblocks, dtype=xp.uint64) + xp.uint64(base)
    lo = (c & xp.uint64(_MASK32)).astype(xp.uint32)
    hi = (c >> xp.uint64(32)).astype(xp.uint32)
    zeros = xp.zeros(nblocks, dtype=xp.uint32)
    counters = xp.stack([lo, hi, zeros, zeros], axis=1)
    words = philox4x32_10(xp, stream_key(seed), counters).reshape(-1)[:n]
    return words, offset + 4 * nblocks


def _normalize_shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    """Turn an int or a sequence of ints into a shape tuple, rejecting negative sizes."""
    if isinstance(shape, int):
        shape = (shape,)
    out = tuple(int(s) for s in shape)
    if any(s < 0 for s in out):
        raise ValueError(f"negative dimension in shape {out}")
    return out


def _resolve_float_dtype(xp: Any, dtype_name: str, native_dtype: Any) -> Any:
    """The array-module dtype for ``dtype_name``; ``native_dtype`` overrides it.

    bfloat16 is not a numpy/cupy builtin: with numpy it maps to ``ml_dtypes.bfloat16``;
    other modules must pass ``native_dtype``.
    """
    if dtype_name not in FLOAT_DTYPES:
        raise ValueError(f"unsupported float dtype {dtype_name!r}; expected one of {FLOAT_DTYPES}")
    if native_dtype is not None:
        return native_dtype
    if dtype_name == "bfloat16":
        if getattr(xp, "__name__", "") != "numpy":
            raise TypeError("bfloat16 needs native_dtype for array modules other than numpy")
        import ml_dtypes

        return ml_dtypes.bfloat16
    return getattr(xp, dtype_name)


# random bits per element of a low-precision uniform: the target's significand digits, so
# every value of u is exact in the target and below 1 (PyTorch draws the same widths)
UNIFORM_BITS = {"float32": 24, "float16": 11, "bfloat16": 8}


def _unit_float32(xp: Any, words: Any, bits: int = 24) -> Any:
    """Map uint32 words to float32 uniforms ``(w >> (32 - bits)) * 2**-bits`` in [0, 1) (exact)."""
    return (words >> xp.uint32(32 - bits)).astype(xp.float32) * xp.float32(2.0**-bits)


def _unit_float64(xp: Any, words: Any) -> Any:
    """Map word pairs (w[2j], w[2j+1]) to float64 uniforms with 53 random bits in [0, 1)."""
    a = (words[0::2] >> xp.uint32(5)).astype(xp.float64)
    b = (words[1::2] >> xp.uint32(6)).astype(xp.float64)
    return (a * xp.float64(2.0**26) + b) * xp.float64(2.0**-53)


def uniform(
    xp: Any,
    seed: int,
    offset: int,
    shape: int | Sequence[int],
    dtype_name: str,
    low: float = 0.0,
    high: float = 1.0,
    native_dtype: Any = None,
) -> tuple[Any, int]:
    """Uniform floats in ``[low, high)`` of ``shape`` and ``dtype_name``; see module spec 3.

    Returns ``(array, new_offset)``.  ``native_dtype`` optionally gives the array-module
    dtype to cast to (needed for bfloat16 on modules other than numpy).
    """
    target = _resolve_float_dtype(xp, dtype_name, native_dtype)
    shape = _normalize_shape(shape)
    n = math.prod(shape)
    if dtype_name == "float64":
        words, new_offset = random_bits(xp, seed, offset, 2 * n)
        u = _unit_float64(xp, words)
        out = xp.float64(low) + u * xp.float64(float(high) - float(low))
    else:
        words, new_offset = random_bits(xp, seed, offset, n)
        u = _unit_float32(xp, words, UNIFORM_BITS[dtype_name])
        out = xp.float32(low) + u * xp.float32(float(high) - float(low))
    return out.astype(target).reshape(shape), new_offset


def normal(
    xp: Any,
    seed: int,
    offset: int,
    shape: int | Sequence[int],
    dtype_name: str,
    mean: float = 0.0,
    std: float = 1.0,
    native_dtype: Any = None,
) -> tuple[Any, int]:
    """Normal floats (Box-Muller) of ``shape`` and ``dtype_name``; see module spec 4.

    Computed in float32 for float16/bfloat16/float32 and in float64 for float64.
    Returns ``(array, new_offset)``.
    """
    target = _resolve_float_dtype(xp, dtype_name, native_dtype)
    shape = _normalize_shape(shape)
    n = math.prod(shape)
    pairs = -(-n // 2)
    if dtype_name == "float64":
        ct = xp.float64
        words, new_offset = random_bits(xp, seed, offset, 4 * pairs)
        u = _unit_float64(xp, words)
    else:
        ct = xp.float32
        words, new_offset = random_bits(xp, seed, offset, 2 * pairs)
        u = _unit_float32(xp, words)
    u1 = ct(1.0) - u[0::2]  # in (0, 1]: log(u1) is finite
    u2 = u[1::2]
    rad = xp.sqrt(ct(-2.0) * xp.log(u1))
    theta = ct(2.0 * math.pi) * u2
    z = xp.stack([rad * xp.cos(theta), rad * xp.sin(theta)], axis=1).reshape(-1)[:n]
    out = z * ct(std) + ct(mean)
    return out.astype(target).reshape(shape), new_offset


def randint(
    xp: Any,
    seed: int,
    offset: int,
    shape: int | Sequence[int],
    low: int,
    high: int,
    dtype_name: str,
) -> tuple[Any, int]:
    """Integers in ``[low, high)`` of ``shape`` and ``dtype_name``; see module spec 5.

    Uses one 64-bit draw (two words) per element reduced modulo ``high - low`` (bias below
    ``(high - low) / 2**64``).  ``dtype_name`` is one of uint8, int8, int16, int32, int64.
    Returns ``(array, new_offset)``.
    """
    if dtype_name not in _INT_BOUNDS:
        raise ValueError(
            f"unsupported integer dtype {dtype_name!r}; expected one of {tuple(_INT_BOUNDS)}"
        )
    low, high = int(low), int(high)
    dmin, dmax = _INT_BOUNDS[dtype_name]
    if high <= low:
        raise ValueError(f"randint needs low < high, got low={low}, high={high}")
    if low < dmin or high - 1 > dmax:
        raise ValueError(f"[{low}, {high}) does not fit in {dtype_name}")
    shape = _normalize_shape(shape)
    n = math.prod(shape)
    words, new_offset = random_bits(xp, seed, offset, 2 * n)
    v = words[0::2].astype(xp.uint64) | (words[1::2].astype(xp.uint64) << xp.uint64(32))
    r = (v % xp.uint64(high - low)) + xp.uint64(low & _MASK64)  # wraps mod 2**64
    out = r.view(xp.int64).astype(getattr(xp, dtype_name))
    return out.reshape(shape), new_offset
