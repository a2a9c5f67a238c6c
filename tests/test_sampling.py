"""embedding_bag, grid_sample, affine_grid and nonzero(as_tuple=True) against torch: the
nn.functional wrappers, embedding_bag's auxiliary outputs, and the semantics where PyTorch's
cpu kernel is wrong (scale_grad_by_freq)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF

from torch_compare import values

RNG = np.random.default_rng(11)


def both(arr, requires_grad=False):
    """The same data as (ember, torch) leaves."""
    e, t = ember.tensor(arr.copy()), torch.tensor(arr.copy())
    if requires_grad:
        e.requires_grad_(True)
        t.requires_grad_(True)
    return e, t


BAG_CASES = [
    ("1-d, offsets, mean", dict(input=np.array([1, 2, 4, 5, 4, 3, 2, 9]), offsets=np.array([0, 4]))),
    ("2-d, sum", dict(input=np.array([[1, 2, 4], [4, 3, 9]]), mode="sum")),
    ("2-d, max", dict(input=np.array([[1, 2, 4], [4, 3, 9]]), mode="max")),
    ("per_sample_weights", dict(input=np.array([[1, 2, 4], [4, 3, 9]]), mode="sum",
                                per_sample_weights=RNG.standard_normal((2, 3)))),
    ("include_last_offset", dict(input=np.array([1, 2, 4, 5, 4, 3]), offsets=np.array([0, 2, 6]),
                                 include_last_offset=True, mode="sum")),
    ("padding_idx -1", dict(input=np.array([[9, 2, 9], [4, 9, 1]]), padding_idx=-1)),
    ("scale_grad_by_freq, equal counts", dict(input=np.array([[1, 4, 1], [4, 3, 3]]), mode="sum",
                                              scale_grad_by_freq=True)),
]


@pytest.mark.parametrize("desc,kw", BAG_CASES, ids=[c[0] for c in BAG_CASES])
def test_functional_embedding_bag_matches_torch(desc, kw):
    w = RNG.standard_normal((10, 3))
    ew, tw = both(w, True)
    ek, tk = {}, {}
    for k, v in kw.items():
        if isinstance(v, np.ndarray):
            ek[k], tk[k] = both(v, requires_grad=v.dtype.kind == "f")
        else:
            ek[k] = tk[k] = v
    eo = EF.embedding_bag(ek.pop("input"), ew, **ek)
    to = TF.embedding_bag(tk.pop("input"), tw, **tk)
    np.testing.assert_allclose(values(eo), values(to), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(values(ew.grad), values(tw.grad), rtol=1e-12, atol=1e-12)
    if "per_sample_weights" in kw:
        np.testing.assert_allclose(values(ek["per_sample_weights"].grad), values(tk["per_sample_weights"].grad),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call,exc", [
    (lambda m, F, w: F.embedding_bag(m.tensor([[0, 1]]), w, m.tensor([0])), ValueError),
    (lambda m, F, w: F.embedding_bag(m.tensor([0, 1]), w), ValueError),
    (lambda m, F, w: F.embedding_bag(m.tensor([[[0]]]), w), ValueError),
    (lambda m, F, w: F.embedding_bag(m.tensor([[0, 1]]), w, mode="min"), ValueError),
    (lambda m, F, w: F.embedding_bag(m.tensor([[0, 1]]), w, mode="max", scale_grad_by_freq=True), ValueError),
    (lambda m, F, w: F.embedding_bag(m.tensor([[0, 1]]), w, mode="mean", per_sample_weights=m.ones(1, 2)),
     NotImplementedError),
    (lambda m, F, w: F.embedding_bag(m.tensor([[0, 1]]), w, per_sample_weights=m.ones(2)), ValueError),
], ids=["2-d with offsets", "1-d without offsets", "3-d input", "bad mode", "max with scale_grad_by_freq",
        "per_sample_weights with mean", "per_sample_weights of another shape"])
def test_functional_embedding_bag_errors_match_torch(call, exc):
    with pytest.raises(exc):
        call(torch, TF, torch.zeros(4, 2))
    with pytest.raises(exc):
        call(ember, EF, ember.zeros(4, 2))


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_auxiliary_outputs_have_torch_meta_shapes(mode, last):
    args = lambda m: (m.zeros(6, 3, device="meta"), m.zeros(7, dtype=m.int64, device="meta"),  # noqa: E731
                      m.zeros(4, dtype=m.int64, device="meta"), False, mode, False, None, last)
    for e, t in zip(ember._embedding_bag(*args(ember)), torch._embedding_bag(*args(torch))):
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride() and str(e.dtype)[6:] == str(t.dtype)[6:]


def test_embedding_bag_auxiliary_values_match_torch_cpu_where_it_fills_them():
    """Mean and max (without include_last_offset): torch's cpu kernel fills offset2bag, bag_size
    and (max) max_indices; padding indices are left out of bag_size."""
    w = RNG.standard_normal((6, 3))
    i, off = np.array([1, 5, 0, 3, 3, 2, 4, 2]), np.array([0, 2, 2, 5])
    for mode in (1, 2):
        e = ember._embedding_bag(ember.tensor(w), ember.tensor(i), ember.tensor(off), False, mode, False, None,
                                 False, 2)
        t = torch._embedding_bag(torch.tensor(w), torch.tensor(i), torch.tensor(off), False, mode, False, None,
                                 False, 2)
        for k in (1, 2) + ((3,) if mode == 2 else ()):
            np.testing.assert_array_equal(values(e[k]), values(t[k]), err_msg=f"mode {mode} output {k}")


def test_embedding_bag_scale_grad_by_freq_divides_by_each_index_count():
    """PyTorch's cpu _embedding_bag scales by the counts of the wrong indices when they differ;
    ember follows the documented semantics (embedding's): the gradient of a row over how often
    its index occurs in the mini-batch."""
    w = RNG.standard_normal((5, 3))
    i, off = np.array([1, 1, 4, 4, 3]), np.array([0, 2, 3])
    for mode in (0, 1):
        ew = ember.tensor(w, requires_grad=True)
        out = ember._embedding_bag(ew, ember.tensor(i), ember.tensor(off), True, mode)[0]
        out.sum().backward()
        tw = torch.tensor(w, requires_grad=True)
        ref = torch._embedding_bag(tw, torch.tensor(i), torch.tensor(off), False, mode)[0]
        ref.sum().backward()
        counts = np.bincount(i, minlength=5)[:, None]
        np.testing.assert_allclose(values(ew.grad), values(tw.grad) / np.maximum(counts, 1), rtol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_of_an_affine_grid_matches_torch(mode, padding_mode):
    x = RNG.standard_normal((2, 3, 5, 6))
    theta = RNG.standard_normal((2, 2, 3)) * 0.8
    ex, tx = both(x, True)
    et, tt = both(theta, True)
    for align in (False, True):
        eo = EF.grid_sample(ex, EF.affine_grid(et, [2, 3, 4, 7], align_corners=align), mode=mode,
                            padding_mode=padding_mode, align_corners=align)
        to = TF.grid_sample(tx, TF.affine_grid(tt, [2, 3, 4, 7], align_corners=align), mode=mode,
                            padding_mode=padding_mode, align_corners=align)
        np.testing.assert_allclose(values(eo), values(to), rtol=1e-10, atol=1e-10)
        eo.sum().backward()
        to.sum().backward()
    np.testing.assert_allclose(values(ex.grad), values(tx.grad), rtol=1e-10, atol=1e-10)
    if mode != "nearest":
        np.testing.assert_allclose(values(et.grad), values(tt.grad), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("call,exc", [
    (lambda m, F: F.grid_sample(m.zeros(1, 1, 2, 2), m.zeros(1, 1, 1, 2), mode="cubic", align_corners=False),
     ValueError),
    (lambda m, F: F.grid_sample(m.zeros(1, 1, 2, 2), m.zeros(1, 1, 1, 2), padding_mode="wrap", align_corners=False),
     ValueError),
    (lambda m, F: F.affine_grid(m.zeros(1, 2, 3, dtype=m.int64), [1, 1, 2, 2], align_corners=False), ValueError),
    (lambda m, F: F.affine_grid(m.zeros(1, 3, 4), [1, 1, 2, 2], align_corners=False), ValueError),
    (lambda m, F: F.affine_grid(m.zeros(1, 2, 3), [1, 1, 2], align_corners=False), NotImplementedError),
    (lambda m, F: F.affine_grid(m.zeros(1, 2, 3), [1, 1, 0, 2], align_corners=False), ValueError),
], ids=["bad mode", "bad padding_mode", "int theta", "theta of another rank", "3-element size", "empty size"])
def test_functional_sampling_errors_match_torch(call, exc):
    with pytest.raises(exc):
        call(torch, TF)
    with pytest.raises(exc):
        call(ember, EF)


def test_grid_sample_warns_without_align_corners_like_torch():
    with pytest.warns(UserWarning, match="align_corners"):
        EF.grid_sample(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2))
    with pytest.warns(UserWarning, match="align_corners"):
        EF.affine_grid(ember.zeros(1, 2, 3), [1, 1, 2, 2])


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 3), (), (0, 2)])
def test_nonzero_as_tuple_and_argwhere_match_torch(shape):
    a = np.where(RNG.random(shape) > 0.5, RNG.standard_normal(shape), 0.0) if shape else np.array(2.0)
    e, t = ember.tensor(a), torch.tensor(a)
    for eo, to in ((ember.nonzero(e, as_tuple=True), torch.nonzero(t, as_tuple=True)),
                   (e.nonzero(as_tuple=True), t.nonzero(as_tuple=True))):
        assert isinstance(eo, tuple) and len(eo) == len(to)
        for x, y in zip(eo, to):
            assert str(x.dtype) == "ember.int64"
            np.testing.assert_array_equal(values(x), values(y))
    np.testing.assert_array_equal(values(e.nonzero()), values(t.nonzero()))
    np.testing.assert_array_equal(values(e.argwhere()), values(t.argwhere()))
    np.testing.assert_array_equal(values(ember.argwhere(e)), values(torch.argwhere(t)))
    e_idx = ember.nonzero(e, as_tuple=True)
    if shape:
        np.testing.assert_array_equal(values(e[e_idx]), values(t[torch.nonzero(t, as_tuple=True)]))
