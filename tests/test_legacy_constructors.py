"""Tensor construction and indexing as older programs write them, against torch: the legacy constructors
(`Tensor(2, 3)`, `Tensor(data)`, `FloatTensor`, `LongTensor`, ...), type predicates and names, the device
and layout predicates, indexing with a `range`, and `ember.nn.parallel` being importable."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def both(fn):
    """fn(torch) and fn(ember), each as (dtype name, shape, values or None) or the exception class raised."""
    out = []
    for lib in (torch, ember):
        try:
            t = fn(lib)
        except Exception as exc:      # noqa: BLE001
            out.append(type(exc))
            continue
        out.append((str(t.dtype).split(".")[-1], tuple(t.shape)))
    return out


@pytest.mark.parametrize("build", [
    lambda L: L.Tensor(2, 3), lambda L: L.Tensor(), lambda L: L.Tensor([1, 2]), lambda L: L.Tensor([[1.5]]),
    lambda L: L.Tensor(L.Size([2, 4])), lambda L: L.Tensor((2, 3)), lambda L: L.Tensor(np.arange(3)),
    lambda L: L.FloatTensor(2), lambda L: L.DoubleTensor([1, 2]), lambda L: L.LongTensor([1.7, 2]),
    lambda L: L.IntTensor(3, 1), lambda L: L.ByteTensor([1, 2]), lambda L: L.CharTensor([1]),
    lambda L: L.ShortTensor([1]), lambda L: L.HalfTensor([1]), lambda L: L.BFloat16Tensor([1]),
    lambda L: L.BoolTensor([1, 0]), lambda L: L.FloatTensor(L.zeros(2)), lambda L: L.FloatTensor(L.zeros(2).double()),
    lambda L: L.FloatTensor(2, "x"),
])
def test_legacy_constructors_match_torch(build):
    t, e = both(build)
    if isinstance(t, type):
        assert isinstance(e, type) and issubclass(e, t.__mro__[0] if t is not TypeError else TypeError), (e, t)
    else:
        assert e == t


def test_legacy_constructor_values_and_aliasing():
    for lib in (torch, ember):
        assert lib.Tensor([1, 2]).tolist() == [1.0, 2.0]
        assert lib.LongTensor([1.7, -2.2]).tolist() == [1, -2]
        source = lib.zeros(3)
        alias = lib.FloatTensor(source)
        alias[0] = 5
        assert source.tolist() == [5.0, 0.0, 0.0]


def test_legacy_types_are_isinstance_predicates_and_type_names():
    for lib in (torch, ember):
        f, d, i = lib.zeros(2), lib.zeros(2, dtype=lib.float64), lib.zeros(2, dtype=lib.int64)
        assert isinstance(f, lib.FloatTensor) and not isinstance(d, lib.FloatTensor)
        assert isinstance(i, lib.LongTensor) and isinstance(d, lib.DoubleTensor)
        assert not isinstance([1.0], lib.FloatTensor)
        assert f.type("torch.DoubleTensor").dtype == lib.float64
        assert f.type(lib.int32).dtype == lib.int32
    assert ember.zeros(1).type() == "ember.FloatTensor"
    with pytest.raises(ValueError):
        ember.zeros(1).type("torch.NoSuchTensor")


@pytest.mark.parametrize("name", ["is_xpu", "is_mps", "is_ipu", "is_xla", "is_mtia", "is_maia", "is_vulkan",
                                  "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested",
                                  "is_cpu", "is_cuda", "is_meta"])
def test_device_and_layout_predicates_match_torch(name):
    assert getattr(ember.zeros(2), name) == getattr(torch.zeros(2), name)


@pytest.mark.parametrize("index", [
    lambda: range(0, 2), lambda: (slice(None), range(0, 3, 2)), lambda: ([0, 1], slice(None), None, slice(1, 3)),
    lambda: (range(2), range(2), 0), lambda: (Ellipsis, range(3, 0, -1)),
])
def test_indexing_with_ranges_and_mixed_lists_matches_torch(index):
    values = np.arange(24.0).reshape(2, 3, 4)
    t, e = torch.tensor(values), ember.tensor(values)
    np.testing.assert_array_equal(e[index()].numpy(), t[index()].numpy())
    t[index()] = -1.0
    e[index()] = -1.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo_matches_torch(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


@pytest.mark.parametrize("name", ["int64", "int32", "int16", "int8", "uint8"])
def test_iinfo_matches_torch(name):
    e, t = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    assert (e.bits, e.min, e.max, e.dtype, repr(e)) == (t.bits, t.min, t.max, t.dtype, repr(t))


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((1,), (4, 1, 5), (5,)), ((2, 3), (4, 3))])
def test_broadcast_functions_match_torch(shapes):
    outs = []
    for lib in (torch, ember):
        try:
            tensors = lib.broadcast_tensors(*(lib.zeros(*s) for s in shapes))
            outs.append(([tuple(t.shape) for t in tensors], tuple(lib.broadcast_shapes(*shapes)),
                         tuple(lib.broadcast_to(lib.zeros(*shapes[0]), lib.broadcast_shapes(*shapes)).shape)))
        except RuntimeError as exc:             # compared by builtin class: ember's errors subclass torch's
            outs.append(next(c for c in type(exc).__mro__ if c.__module__ == "builtins"))
    assert outs[1] == outs[0]
