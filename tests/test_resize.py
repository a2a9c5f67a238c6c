"""Tensor.resize_ against torch: shapes, strides, kept elements, storage reuse, errors, meta."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from torch_compare import values

CASES = [
    ("shrink", lambda m: m.arange(6.0), (2, 2)),
    ("same numel", lambda m: m.arange(6.0), (3, 2)),
    ("grow", lambda m: m.arange(6.0), (3, 4)),
    ("grow a transposed view", lambda m: m.arange(12.0).reshape(3, 4).t(), (4, 4)),
    ("shrink a transposed view", lambda m: m.arange(12.0).reshape(3, 4).t(), (2, 3)),
    ("grow a view with an offset", lambda m: m.arange(12.0)[2:], (3, 4)),
    ("within the storage of an offset view", lambda m: m.arange(12.0)[2:4], (3, 3)),
    ("to 0-d", lambda m: m.arange(6.0), ()),
    ("to empty", lambda m: m.arange(6.0), (0, 3)),
    ("from empty", lambda m: m.zeros(0), (2, 2)),
]


@pytest.mark.parametrize("desc,make,size", CASES, ids=[c[0] for c in CASES])
def test_resize_matches_torch(desc, make, size):
    e, t = make(ember), make(torch)
    t_old = t.untyped_storage().nbytes()
    e_storage = e.untyped_storage()
    assert e.resize_(size) is e and t.resize_(size) is t
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert e.storage_offset() == t.storage_offset()
    assert e.untyped_storage().nbytes == t.untyped_storage().nbytes()
    # the same storage when it was large enough, a new one otherwise
    assert (e.untyped_storage() is e_storage) == (t.untyped_storage().nbytes() == t_old)
    # the elements the old storage held keep their places; the rest are uninitialised
    n = min(t_old // 4 - t.storage_offset(), t.numel())
    if n > 0:
        np.testing.assert_array_equal(values(e).reshape(-1)[:n], values(t).reshape(-1)[:n])


def test_resize_varargs_and_shrinking_keeps_sharing_the_storage():
    base = ember.arange(6.0)
    x = base[:]
    x.resize_(2, 2)
    x[0, 0] = 100.0
    assert base[0].item() == 100.0


def test_resize_growth_leaves_other_views_on_the_old_storage():
    """ember's storage is its backend array: a grown tensor gets a new one, other views keep the old."""
    a = ember.arange(4.0)
    v = a[:2]
    a.resize_(8)
    a[0] = 50.0
    assert v[0].item() == 0.0
    assert np.array_equal(values(a)[:4], [50.0, 1.0, 2.0, 3.0])


def test_resize_errors_match_torch():
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="require grad"):
            m.zeros(3, requires_grad=True).resize_(4)
        with pytest.raises(RuntimeError, match="require grad"):
            with m.no_grad():
                m.zeros(3, requires_grad=True).resize_(4)
        with pytest.raises(RuntimeError):
            m.zeros(3).resize_(-1)


def test_resize_on_meta_matches_torch_meta():
    for size in [(4, 4), (2,), (3, 5, 2)]:
        e, t = ember.zeros(2, 3, device="meta"), torch.zeros(2, 3, device="meta")
        e.resize_(size)
        t.resize_(size)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        assert e.untyped_storage().nbytes == t.untyped_storage().nbytes()
