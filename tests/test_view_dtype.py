"""Tensor.view(dtype) (the op view.dtype) against torch: values, layouts, aliasing, autograd and errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

CASES = [  # (dtype of the input, shape, a slice of it or None, the dtype to view as)
    ("float32", (2, 4), None, "int32"),
    ("float32", (2, 4), None, "float16"),
    ("float32", (2, 4), None, "uint8"),
    ("int16", (2, 4), None, "int32"),
    ("int16", (3, 8), (slice(None), slice(4, 8)), "int64"),
    ("int16", (2, 4), (slice(None), slice(1, None)), "int8"),
    ("float64", (3,), None, "bfloat16"),
    ("bool", (5,), None, "uint8"),
    ("uint8", (2, 8), None, "float64"),
    ("float16", (4, 2), None, "bfloat16"),
]


@pytest.mark.parametrize("src, shape, window, dst", CASES)
def test_view_dtype_matches_torch(src, shape, window, dst):
    base = np.random.default_rng(0).integers(0, 120, size=shape)
    t = torch.tensor(base).to(getattr(torch, src))
    e = ember.tensor(base).to(getattr(ember, src))
    if window is not None:
        t, e = t[window], e[window]
    tv, ev = t.view(getattr(torch, dst)), e.view(getattr(ember, dst))
    assert tuple(ev.shape) == tuple(tv.shape)
    assert ev.stride() == tv.stride() and ev.storage_offset() == tv.storage_offset()
    np.testing.assert_array_equal(ev.float().numpy(), tv.float().numpy())
    meta = ember.empty(shape, dtype=getattr(ember, src), device="meta")
    meta = meta[window] if window is not None else meta
    mv = meta.view(dtype=getattr(ember, dst))
    assert tuple(mv.shape) == tuple(tv.shape) and mv.stride() == tv.stride()


def test_the_view_shares_memory_and_carries_no_gradient():
    x = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    assert not x.view(ember.int32).requires_grad and not x.view(ember.float32).requires_grad
    y = ember.tensor([1.0, -2.0])
    bits = y.view(ember.int32)
    bits[0] = 0
    assert y.tolist() == [0.0, -2.0]
    assert bits._version == y._version == 1


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(8, dtype=lib.int16).reshape(2, 4).t(),            # last stride not 1
    lambda lib: lib.arange(6, dtype=lib.int16).reshape(2, 3),                # last size not divisible
    lambda lib: lib.arange(8, dtype=lib.int16)[1:5],                         # offset not divisible
    lambda lib: lib.arange(12, dtype=lib.int16).reshape(4, 3)[:, :2],        # stride(0) not divisible
    lambda lib: lib.tensor(1, dtype=lib.int16),                              # 0-d
    lambda lib: lib.zeros(2, 0, dtype=lib.int16),                            # an empty tensor's strides
])
def test_bad_layouts_raise_torchs_error(make):
    with pytest.raises(RuntimeError) as theirs:
        make(torch).view(torch.int32)
    with pytest.raises(RuntimeError) as ours:
        make(ember).view(ember.int32)
    assert str(ours.value) == str(theirs.value)


def test_view_takes_a_dtype_or_a_shape_not_both():
    with pytest.raises(TypeError):
        ember.ones(4).view(ember.int32, 2)
    assert ember.ones(2, 3).view(3, 2).shape == (3, 2) and ember.ones(6).view((2, 3)).shape == (2, 3)
