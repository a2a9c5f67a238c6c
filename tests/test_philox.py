"""Tests for the Philox4x32-10 array kernels (backends/cpu/array_kernels/philox.py).

The module is loaded from its file path so the test works whether or not the ``ember_cpu``
package is installed.  Bit-level results are checked against an independent scalar
Python implementation of the specification and the Random123 known-answer vectors;
distributions are checked statistically on 100k samples.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "backends" / "cpu" / "array_kernels" / "philox.py"
_spec = importlib.util.spec_from_file_location("_ember_test_philox", _PATH)
philox = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(philox)

M32 = 0xFFFFFFFF


def ref_philox(ctr: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, ...]:
    """Scalar Python Philox4x32-10 (independent of the vectorised implementation)."""
    x0, x1, x2, x3 = ctr
    k0, k1 = key
    for rnd in range(10):
        if rnd:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * x0
        p1 = 0xCD9E8D57 * x2
        x0, x1, x2, x3 = ((p1 >> 32) ^ x1 ^ k0, p1 & M32, (p0 >> 32) ^ x3 ^ k1, p0 & M32)
    return (x0, x1, x2, x3)


def ref_words(seed: int, offset: int, n: int) -> list[int]:
    """Scalar reference of the stream: n words from (seed, offset)."""
    seed &= (1 << 64) - 1
    key = (seed & M32, seed >> 32)
    out: list[int] = []
    c = offset // 4
    while len(out) < n:
        out.extend(ref_philox((c & M32, c >> 32, 0, 0), key))
        c += 1
    return out[:n]


KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32, M32, M32, M32), (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


# --- block function --------------------------------------------------------------------


def test_known_answer_vectors_batched():
    ctrs = np.array([c for c, _, _ in KAT], dtype=np.uint32)
    for i, (_, key, expected) in enumerate(KAT):
        out = philox.philox4x32_10(np, key, ctrs)
        assert out.dtype == np.uint32 and out.shape == (3, 4)
        assert [int(v) for v in out[i]] == list(expected)


def test_reference_matches_kat():
    # Guards the scalar reference used by the other tests.
    for ctr, key, expected in KAT:
        assert ref_philox(ctr, key) == expected


def test_block_function_matches_reference_on_random_counters():
    rng = np.random.default_rng(0)
    ctrs = rng.integers(0, 2**32, size=(64, 4), dtype=np.uint64).astype(np.uint32)
    key = (0x12345678, 0x9ABCDEF0)
    out = philox.philox4x32_10(np, key, ctrs)
    for row_in, row_out in zip(ctrs, out):
        assert tuple(int(v) for v in row_out) == ref_philox(tuple(int(v) for v in row_in), key)


def test_block_function_rejects_bad_counters():
    with pytest.raises(ValueError):
        philox.philox4x32_10(np, (0, 0), np.zeros((3, 2), dtype=np.uint32))
    with pytest.raises(TypeError):
        philox.philox4x32_10(np, (0, 0), np.zeros((3, 4), dtype=np.int64))


# --- stream ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seed,offset,n",
    [(0, 0, 9), (42, 8, 13), (0x0123456789ABCDEF, 4 * (2**32 - 2), 16), (-1, 400, 5)],
)
def test_random_bits_matches_scalar_stream(seed, offset, n):
    words, new_offset = philox.random_bits(np, seed, offset, n)
    assert words.dtype == np.uint32 and words.shape == (n,)
    assert [int(w) for w in words] == ref_words(seed, offset, n)
    assert new_offset == offset + 4 * math.ceil(n / 4)


def test_first_block_of_seed_zero_is_kat():
    words, off = philox.random_bits(np, 0, 0, 4)
    assert [int(w) for w in words] == list(KAT[0][2])
    assert off == 4


def test_stream_continuity():
    a, off = philox.random_bits(np, 7, 0, 12)
    b, off2 = philox.random_bits(np, 7, off, 21)
    whole, off_whole = philox.random_bits(np, 7, 0, 33)
    np.testing.assert_array_equal(np.concatenate([a, b]), whole)
    assert off2 == off_whole == 36


def test_partial_block_is_consumed_whole():
    _, off = philox.random_bits(np, 7, 0, 5)
    assert off == 8
    nxt, _ = philox.random_bits(np, 7, off, 4)
    whole, _ = philox.random_bits(np, 7, 0, 12)
    np.testing.assert_array_equal(nxt, whole[8:12])


def test_zero_words_and_bad_offsets():
    w, off = philox.random_bits(np, 1, 16, 0)
    assert w.shape == (0,) and off == 16
    with pytest.raises(ValueError):
        philox.random_bits(np, 1, 6, 4)
    with pytest.raises(ValueError):
        philox.random_bits(np, 1, -4, 4)


def test_determinism_and_seed_sensitivity():
    a, _ = philox.random_bits(np, 1234, 0, 1000)
    b, _ = philox.random_bits(np, 1234, 0, 1000)
    c, _ = philox.random_bits(np, 1235, 0, 1000)
    d, _ = philox.random_bits(np, 1234 + (1 << 32), 0, 1000)  # high key word matters
    np.testing.assert_array_equal(a, b)
    assert np.mean(a == c) < 0.01
    assert np.mean(a == d) < 0.01
    u1, _ = philox.uniform(np, 5, 0, (100,), "float32")
    u2, _ = philox.uniform(np, 5, 0, (100,), "float32")
    u3, _ = philox.uniform(np, 6, 0, (100,), "float32")
    np.testing.assert_array_equal(u1, u2)
    assert not np.array_equal(u1, u3)


# --- uniform -----------------------------------------------------------------------------


def test_uniform_float32_bit_exact_formula():
    words, _ = philox.random_bits(np, 99, 4, 10)
    u, off = philox.uniform(np, 99, 4, (2, 5), "float32", low=-2.0, high=3.0)
    assert off == 4 + 12
    expected = np.float32(-2.0) + (words >> 8).astype(np.float32).reshape(2, 5) * np.float32(
        2.0**-24
    ) * np.float32(5.0)
    assert u.dtype == np.float32 and u.shape == (2, 5)
    np.testing.assert_array_equal(u, expected)


def test_uniform_float64_uses_53_bits_from_two_words():
    words, _ = philox.random_bits(np, 3, 0, 6)
    u, off = philox.uniform(np, 3, 0, 3, "float64")
    assert off == 8 and u.dtype == np.float64
    w = [int(x) for x in words]
    expected = [((w[2 * j] >> 5) * 2**26 + (w[2 * j + 1] >> 6)) / 2.0**53 for j in range(3)]
    assert u.tolist() == expected


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_uniform_statistics(dtype_name):
    u, off = philox.uniform(np, 2024, 0, (100_000,), dtype_name)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005  # ~5.5 sigma
    assert abs(u.var() - 1 / 12) < 0.0015  # ~6 sigma
    counts = np.histogram(u, bins=10, range=(0.0, 1.0))[0]
    assert np.all(np.abs(counts - 10_000) < 600)  # ~6 sigma per bin
    assert off == (100_000 if dtype_name == "float32" else 200_000)


def test_uniform_range_and_dtypes():
    import ml_dtypes

    u, _ = philox.uniform(np, 1, 0, (50_000,), "float32", low=-3.0, high=-1.0)
    assert u.min() >= -3.0 and u.max() < -1.0 and abs(u.mean() + 2.0) < 0.02
    h, _ = philox.uniform(np, 1, 0, (1000,), "float16", low=2.0, high=4.0)
    assert h.dtype == np.float16 and h.min() >= 2.0 and h.max() <= 4.0
    b, _ = philox.uniform(np, 1, 0, (7, 3), "bfloat16")
    assert b.dtype == ml_dtypes.bfloat16 and b.shape == (7, 3)
    words, _ = philox.random_bits(np, 1, 0, 21)      # bfloat16 draws its 8 significand bits
    expected = ((words >> 24).astype(np.float32) * np.float32(2.0**-8)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(b.reshape(-1), expected)
    for name in ("float16", "bfloat16"):               # exact in the target: never reaches 1.0
        u, _ = philox.uniform(np, 1234, 0, (20_000,), name)
        assert float(u.astype(np.float32).max()) < 1.0
    n, _ = philox.uniform(np, 1, 0, (4,), "bfloat16", native_dtype=np.float32)
    assert n.dtype == np.float32
    with pytest.raises(ValueError):
        philox.uniform(np, 1, 0, (4,), "int32")


# --- normal ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_normal_statistics(dtype_name):
    z, off = philox.normal(np, 77, 0, (100_000,), dtype_name, mean=1.5, std=2.0)
    assert z.dtype == np.dtype(dtype_name) and np.all(np.isfinite(z))
    assert abs(z.mean() - 1.5) < 0.035  # ~5.5 sigma
    assert abs(z.std() - 2.0) < 0.025
    # Standardised tail mass beyond 2 sigma is ~4.55%.
    assert abs(np.mean(np.abs(z - 1.5) > 4.0) - 0.0455) < 0.005
    assert off == (100_000 if dtype_name == "float32" else 200_000)


def test_normal_box_muller_layout():
    u, _ = philox.uniform(np, 11, 0, (6,), "float64")
    z, off = philox.normal(np, 11, 0, (5,), "float64")
    assert off == 12
    u1, u2 = 1.0 - u[0::2], u[1::2]
    r = np.sqrt(-2.0 * np.log(u1))
    expected = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], 1).ravel()[:5]
    np.testing.assert_allclose(z, expected, rtol=1e-12, atol=1e-12)


def test_normal_low_precision_dtypes():
    import ml_dtypes

    z32, _ = philox.normal(np, 5, 0, (3, 4), "float32")
    z16, _ = philox.normal(np, 5, 0, (3, 4), "float16")
    zbf, _ = philox.normal(np, 5, 0, (3, 4), "bfloat16")
    assert z16.dtype == np.float16 and zbf.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(z16, z32.astype(np.float16))
    np.testing.assert_array_equal(zbf, z32.astype(ml_dtypes.bfloat16))


# --- randint -----------------------------------------------------------------------------


def test_randint_bounds_and_coverage():
    x, off = philox.randint(np, 8, 0, (10_000,), 3, 13, "int64")
    assert x.dtype == np.int64 and off == 20_000
    assert x.min() >= 3 and x.max() < 13
    assert set(np.unique(x).tolist()) == set(range(3, 13))
    counts = np.bincount(x - 3)
    assert np.all(np.abs(counts - 1000) < 200)


@pytest.mark.parametrize(
    "dtype_name,low,high",
    [("uint8", 0, 256), ("int8", -128, 128), ("int16", -5, 5), ("int32", -(2**31), 2**31 - 1)],
)
def test_randint_dtypes(dtype_name, low, high):
    x, _ = philox.randint(np, 9, 0, (4, 5000), low, high, dtype_name)
    assert x.dtype == np.dtype(dtype_name) and x.shape == (4, 5000)
    assert int(x.min()) >= low and int(x.max()) < high
    if high - low <= 256:
        assert len(np.unique(x)) == high - low


def test_randint_bit_exact_with_negative_low_and_full_int64_range():
    words, _ = philox.random_bits(np, 21, 8, 8)
    w = [int(v) for v in words]
    vs = [w[2 * j] | (w[2 * j + 1] << 32) for j in range(4)]
    low, high = -(2**63), 2**63 - 1
    x, _ = philox.randint(np, 21, 8, 4, low, high, "int64")
    assert x.tolist() == [v % (high - low) + low for v in vs]
    y, _ = philox.randint(np, 21, 8, 4, -1000, 1000, "int32")
    assert y.tolist() == [v % 2000 - 1000 for v in vs]


def test_randint_rejects_bad_arguments():
    with pytest.raises(ValueError):
        philox.randint(np, 0, 0, 4, 5, 5, "int32")
    with pytest.raises(ValueError):
        philox.randint(np, 0, 0, 4, -1, 10, "uint8")
    with pytest.raises(ValueError):
        philox.randint(np, 0, 0, 4, 0, 129, "int8")
    with pytest.raises(ValueError):
        philox.randint(np, 0, 0, 4, 0, 10, "float32")
