"""Tensor.__getitem__ / __setitem__ with advanced indices against torch: values, shapes,
gradients, copy-vs-view semantics, and the meta device's data-dependent shapes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from torch_compare import values

RNG = np.random.default_rng(7)
BASE = RNG.standard_normal((4, 5, 6))


I = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
B = lambda *v: np.array(v, dtype=bool)      # noqa: E731

GET_CASES = [
    ("int tensor", (I(0, 2, -1),)),
    ("two tensors", (I(0, 1), I(1, 2))),
    ("broadcast tensors", (I(0, 3)[:, None], I(1, 2, 4))),
    ("int then tensor (select first)", (0, slice(None), I(0, 1))),
    ("slice between tensors (dims first)", (I(0, 1), slice(None), I(1, 0))),
    ("tensor, ellipsis, None", (I(1, 3), Ellipsis, None)),
    ("None, tensor, slice", (None, slice(1, 4), I(0, 4), slice(None, None, 2))),
    ("bool mask", (B(True, False, True, False),)),
    ("bool mask on dim 1", (slice(None), B(True, False, True, False, True))),
    ("2-d bool mask", (RNG.random((4, 5)) > 0.5,)),
    ("mask and tensor", (B(True, False, True, False), slice(None), I(0, 5))),
    ("empty tensor", (I(),)),
    ("list of ints", ([0, 2, 3],)),
    ("list of bools", ([True, False, False, True],)),
    # torch 2.13 reads it as a tuple, with a deprecation warning about its future meaning
    pytest.param("nested list (tuple reading)", [[0, 1], [1, 0]], id="nested list (tuple reading)",
                 marks=pytest.mark.filterwarnings("ignore:Using a non-tuple sequence for multidimensional "
                                                  "indexing is deprecated:UserWarning")),
    ("numpy array", (np.array([1, 3]),)),
    ("0-d bool tensor", (np.array(True),)),
    ("tensor after ellipsis", (Ellipsis, I(5, 0))),
]


def _conv(m, spec):
    if isinstance(spec, np.ndarray) and spec.dtype != object:
        return m.tensor(spec)
    if isinstance(spec, tuple):
        return tuple(_conv(m, a) for a in spec)
    return spec


@pytest.mark.parametrize("desc,spec", GET_CASES, ids=[getattr(c, "id", None) or c[0] for c in GET_CASES])
def test_getitem_values_and_grads(desc, spec):
    xe = ember.tensor(BASE, requires_grad=True)
    xt = torch.tensor(BASE, requires_grad=True)
    ye, yt = xe[_conv(ember, spec)], xt[_conv(torch, spec)]
    assert tuple(ye.shape) == tuple(yt.shape), desc
    np.testing.assert_allclose(values(ye), values(yt))
    g = RNG.standard_normal(tuple(yt.shape))
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(values(xe.grad), values(xt.grad))


def test_advanced_indexing_copies_and_basic_indexing_views():
    x = ember.tensor(BASE.copy())
    adv = x[ember.tensor([0, 1])]
    adv[0, 0, 0] = 100.0
    assert float(x[0, 0, 0]) == BASE[0, 0, 0], "an advanced index result must be a copy"
    basic = x[1:3]
    basic[0, 0, 0] = 100.0
    assert float(x[1, 0, 0]) == 100.0, "a basic index result must be a view"


SET_CASES = [
    ("rows", (I(0, 2),), (5, 6)),
    ("duplicates, last wins", (I(1, 1), I(2, 2)), (2, 6)),
    ("mask, scalar", (RNG.random((4, 5, 6)) > 0.5,), None),
    ("mask on dim 0, row value", (B(True, False, True, True),), (6,)),
    ("slice then tensor", (slice(1, 3), I(0, 4)), (2, 6)),
    ("int then tensor", (2, slice(None), I(5, 0)), (5, 2)),
    ("broadcast value with leading 1s", (I(0, 1),), (1, 1, 6)),
    ("list index", ([3, 0],), ()),
]


@pytest.mark.parametrize("desc,spec,vshape", SET_CASES, ids=[c[0] for c in SET_CASES])
def test_setitem_values_and_grads(desc, spec, vshape):
    v = 7.5 if vshape is None else RNG.standard_normal(vshape)
    ve = v if vshape is None else ember.tensor(v, requires_grad=True)
    vt = v if vshape is None else torch.tensor(v, requires_grad=True)
    be = ember.tensor(BASE, requires_grad=True)
    bt = torch.tensor(BASE, requires_grad=True)
    xe, xt = be * 1, bt * 1
    xe[_conv(ember, spec)] = ve
    xt[_conv(torch, spec)] = vt
    np.testing.assert_allclose(values(xe), values(xt))
    g = RNG.standard_normal(BASE.shape)
    xe.backward(ember.tensor(g))
    xt.backward(torch.tensor(g))
    np.testing.assert_allclose(values(be.grad), values(bt.grad))
    if vshape is not None:
        np.testing.assert_allclose(values(ve.grad), values(vt.grad))


def test_setitem_writes_through_a_view_and_casts_the_value():
    x = ember.zeros(3, 4, dtype=ember.int64)
    row = x[1]
    row[ember.tensor([0, 3])] = ember.tensor([1.7, 2.2])      # float value into an int64 view
    assert x.tolist() == [[0, 0, 0, 0], [1, 0, 0, 2], [0, 0, 0, 0]]


def test_index_errors_match_torch():
    for m in (ember, torch):
        x = m.zeros(3, 4)
        with pytest.raises(IndexError, match="out of bounds"):
            x[m.tensor([3])]
        with pytest.raises(IndexError):
            x[m.tensor([0.5])]
        with pytest.raises(IndexError):
            x[m.tensor([0, 1]), m.tensor([0, 1, 2])]
        with pytest.raises(IndexError):
            x[m.tensor([True, False])]


@pytest.mark.parametrize("call", [
    lambda m, x: m.nonzero(x),
    lambda m, x: m.masked_select(x, x > 0),
    lambda m, x: x[x > 0],
], ids=["nonzero", "masked_select", "bool mask index"])
def test_data_dependent_shapes_raise_on_meta_as_in_torch(call):
    t_exc = e_exc = None
    try:
        call(torch, torch.zeros(3, 4, device="meta"))
    except Exception as exc:   # noqa: BLE001
        t_exc = exc
    try:
        call(ember, ember.zeros(3, 4, device="meta"))
    except Exception as exc:   # noqa: BLE001
        e_exc = exc
    assert isinstance(t_exc, NotImplementedError)
    assert isinstance(e_exc, NotImplementedError), e_exc


def test_integer_indices_run_on_meta_without_bounds_checks():
    x = ember.zeros(3, 4, device="meta")
    y = x[ember.tensor([0, 7], device="meta")]        # torch's meta device does not check values either
    assert tuple(y.shape) == (2, 4) and y.device.type == "meta"
    x[ember.tensor([1], device="meta")] = 1.0


def test_embedding_functional_matches_torch():
    w = RNG.standard_normal((6, 3))
    idx = np.array([[0, 2, 2], [5, 1, 2]])
    we, wt = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    oe = ember.nn.functional.embedding(ember.tensor(idx), we, padding_idx=-4, scale_grad_by_freq=True)
    ot = torch.nn.functional.embedding(torch.tensor(idx), wt, padding_idx=-4, scale_grad_by_freq=True)
    np.testing.assert_allclose(values(oe), values(ot))
    g = RNG.standard_normal(tuple(ot.shape))
    oe.backward(ember.tensor(g))
    ot.backward(torch.tensor(g))
    np.testing.assert_allclose(values(we.grad), values(wt.grad))


def test_embedding_max_norm_renormalises_rows_like_torch():
    w = RNG.standard_normal((6, 3)) * 3
    idx = np.array([0, 2, 2, 4])
    we, wt = ember.tensor(w), torch.tensor(w)
    oe = ember.nn.functional.embedding(ember.tensor(idx), we, max_norm=1.0)
    ot = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.0)
    np.testing.assert_allclose(values(oe), values(ot), rtol=1e-6)
    np.testing.assert_allclose(values(we), values(wt), rtol=1e-6)     # the weight is renormalised in place


_IDX = np.array([[0, 1], [1, 0]])
SECOND_ORDER = {
    "gather": lambda m, x, y: m.gather(x * x, 1, m.tensor(_IDX)) * y,
    "index": lambda m, x, y: (x * x)[m.tensor([1, 0, 1])] * y,
    "index_put accumulate": lambda m, x, y: m.index_put(x * x, (m.tensor([0, 0]),), y * y, accumulate=True),
    "index_select": lambda m, x, y: m.index_select(x * x, 0, m.tensor([1, 1])) * y,
    "masked_fill": lambda m, x, y: m.masked_fill(x * y, m.tensor([[True, False], [False, True]]), 0.5) * x,
}


@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_gradients_match_torch(name):
    f = SECOND_ORDER[name]
    xs, ys = RNG.standard_normal((2, 2)), RNG.standard_normal((2,))
    res = {}
    for m in (ember, torch):
        x, y = m.tensor(xs, requires_grad=True), m.tensor(ys, requires_grad=True)
        out = f(m, x, y)
        g = m.tensor(np.linspace(-1, 1, int(np.prod(tuple(out.shape)))).reshape(tuple(out.shape)))
        gx, gy = m.autograd.grad(out, (x, y), g, create_graph=True)
        ggx, ggy = m.autograd.grad((gx * gx).sum() + (gy * gy).sum(), (x, y))
        res[m.__name__] = (gx, gy, ggx, ggy)
    for e, t in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(values(e), values(t), rtol=1e-10, atol=1e-12)
    x, y = ember.tensor(xs, requires_grad=True), ember.tensor(ys, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: f(ember, a, b), (x, y))
