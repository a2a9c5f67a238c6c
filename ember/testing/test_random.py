"""Random numbers on the device under test (values: skipped on meta, whose random ops are
checked for shape and dtype by test_outputs).

  test_random_statistics    range, mean, spread and histogram of 20000 draws per op and dtype
  test_random_determinism   manual_seed and explicit Generators reproduce draws; draws advance
  test_random_fills_write_in_place_through_views
  test_random_matches_cpu   a seed gives the same numbers as on cpu (Philox on every backend)
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from . import op_db
from .compare import dtype_str, host
from .plugin import NUMPY_WARNINGS, require_data
from .tolerances import (BELL_TOL, HISTOGRAM_MIN_FRACTION, INT_MEAN_TOL, LOWP_FACTOR, NORMAL_MATCH_ULPS,
                         NORMAL_MOMENT_TOL, RANDOM_N, UNIFORM_MOMENT_TOL)

pytestmark = NUMPY_WARNINGS


def _draw(name, dtype, n=RANDOM_N, gen=None, device="cpu", **kw):
    dt = getattr(ember, dtype)
    if name == "rand":
        return ember.rand(n, dtype=dt, generator=gen, device=device)
    if name == "randn":
        return ember.randn(n, dtype=dt, generator=gen, device=device)
    if name == "randint":
        return ember.randint(kw.get("low", -5), kw.get("high", 5), (n,), dtype=dt, generator=gen, device=device)
    if name == "randint_high":
        return ember.randint(kw.get("high", 7), (n,), dtype=dt, generator=gen, device=device)
    x = ember.empty(n, dtype=dt, device=device)
    if name == "uniform_":
        return x.uniform_(kw.get("low", -2.0), kw.get("high", 3.0), generator=gen)
    if name == "normal_":
        return x.normal_(kw.get("mean", 2.0), kw.get("std", 0.5), generator=gen)
    if name == "random_":
        return x.random_(kw.get("low", 0), kw.get("high", 10), generator=gen)
    raise KeyError(name)


_RANDOM = [("rand", d) for d in op_db.FLOAT] + [("randn", d) for d in op_db.FLOAT] + \
    [("uniform_", d) for d in op_db.FLOAT] + [("normal_", d) for d in op_db.FLOAT] + \
    [("randint", d) for d in ("int64", "int32", "float32")] + [("randint_high", d) for d in ("int64", "uint8")] + \
    [("random_", d) for d in ("int64", "uint8", "float32")]


@pytest.mark.parametrize("name,dtype", [pytest.param(n, d, id=f"{n}-{d}") for n, d in _RANDOM])
def test_random_statistics(name, dtype, ember_device):
    require_data(ember_device, "random values", "test_outputs checks random ops' shapes and dtypes")
    ember.manual_seed(1234)
    x = _draw(name, dtype, device=ember_device.name)
    assert dtype_str(x.dtype) == dtype and tuple(x.shape) == (RANDOM_N,)
    assert x.device.type == ember_device.type, x.device
    a = np.asarray(host(x), dtype=np.float64)
    assert np.isfinite(a).all()
    widen = LOWP_FACTOR if dtype in op_db.LOWP else 1
    if name in ("rand", "uniform_"):
        lo, hi = (0.0, 1.0) if name == "rand" else (-2.0, 3.0)
        assert a.min() >= lo and a.max() < hi, (a.min(), a.max())
        width = hi - lo
        assert abs(a.mean() - (lo + hi) / 2) < UNIFORM_MOMENT_TOL * width * widen
        assert abs(a.std() - width / np.sqrt(12)) < UNIFORM_MOMENT_TOL * width * widen
        counts, _ = np.histogram(a, bins=10, range=(lo, hi))
        assert counts.min() > RANDOM_N / 10 * HISTOGRAM_MIN_FRACTION, counts          # roughly flat
    elif name in ("randn", "normal_"):
        mean, std = (0.0, 1.0) if name == "randn" else (2.0, 0.5)
        tol = NORMAL_MOMENT_TOL * widen
        assert abs(a.mean() - mean) < tol * std and abs(a.std() - std) < tol * std, (a.mean(), a.std())
        assert abs(np.mean(np.abs(a - mean) < std) - 0.6827) < BELL_TOL      # the shape of the bell
    else:
        lo, hi = {"randint": (-5, 5), "randint_high": (0, 7)}.get(name, (0, 10))
        assert a.min() >= lo and a.max() < hi
        assert set(np.unique(a).astype(int)) == set(range(lo, hi)), "every value in [low, high) appears"
        assert abs(a.mean() - (lo + hi - 1) / 2) < INT_MEAN_TOL


_DETERMINISM = ["rand", "randn", "randint", "uniform_", "normal_", "random_"]


def _det_dtype(name):
    return "int64" if name in ("randint", "random_") else "float32"


@pytest.mark.parametrize("name", _DETERMINISM)
def test_random_determinism(name, ember_device):
    require_data(ember_device, "random values")
    dtype, dev = _det_dtype(name), ember_device.name

    def draw(n, gen=None):
        return host(_draw(name, dtype, n, gen=gen, device=dev)).copy()

    ember.manual_seed(7)
    a = draw(64)
    b = draw(64)
    ember.manual_seed(7)
    c = draw(64)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b), "consecutive draws must differ"
    ember.manual_seed(8)
    assert not np.array_equal(a, draw(64))
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    np.testing.assert_array_equal(draw(32, g1), draw(32, g2))
    ember.manual_seed(7)       # an explicit generator leaves the default one alone
    np.testing.assert_array_equal(draw(64), a)


def test_random_fills_write_in_place_through_views(ember_device):
    require_data(ember_device, "random values")
    ember.manual_seed(0)
    base = ember.zeros(4, 6, device=ember_device.name)
    view = base.t()[::2]
    out = view.uniform_()
    assert out is view
    arr = host(base)
    assert (arr[:, ::2] > 0).all() and (arr[:, 1::2] == 0).all()


@pytest.mark.parametrize("name", _DETERMINISM)
def test_random_matches_cpu(name, ember_device):
    """One seed gives the same numbers on every device (Philox, implemented by each backend)."""
    require_data(ember_device, "random values")
    if ember_device.type == "cpu":
        pytest.skip("cpu is the reference this test compares other devices with")
    dtype = _det_dtype(name)
    ember.manual_seed(11)
    on_device = host(_draw(name, dtype, 1000, device=ember_device.name))
    ember.manual_seed(11)
    on_cpu = host(_draw(name, dtype, 1000))
    if name in ("randn", "normal_"):
        assert_normals_match(on_device, on_cpu, 0.0 if name == "randn" else 2.0, f"{name} on {ember_device.name}")
    else:
        np.testing.assert_array_equal(on_device, on_cpu, err_msg=f"{name}: {ember_device.name} draws differ from cpu's")


def assert_normals_match(on_device, on_cpu, mean: float, what: str, dtype: str | None = None) -> None:
    """Normals from one seed on a device and on cpu agree within NORMAL_MATCH_ULPS (tolerances.py);
    `dtype`: the drawn dtype when the arrays were widened (bfloat16 compared as float32, say)."""
    name = dtype or dtype_str(on_cpu.dtype)
    a, b = (np.asarray(x, dtype=np.float64) for x in (on_device, on_cpu))
    eps = np.finfo(np.float64 if name == "float64" else np.float32).eps
    bound = NORMAL_MATCH_ULPS * eps * (np.abs(b - mean) + np.abs(b))
    if name in ("float16", "bfloat16"):
        bound = bound + np.abs(b) * {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}[name]
    bad = ~(np.abs(a - b) <= bound)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {b.size} normals differ from cpu's beyond "
                           f"{NORMAL_MATCH_ULPS} ulps, e.g. {a[bad][:3]} vs {b[bad][:3]}")
