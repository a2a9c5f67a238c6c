"""Sorting/scan/shape ops beyond the conformance samples: Python signatures of the
hand-written wrappers (split, norm, einsum), return types, and the generated stubs."""
from pathlib import Path

import numpy as np
import pytest
import torch

import ember

ROOT = Path(__file__).resolve().parents[1]


def test_split_accepts_an_int_or_sizes_like_torch():
    x = np.arange(12.0).reshape(3, 4)
    for args, kwargs in [((2,), {}), (([1, 3], 1), {}), ((), {"split_size": 2, "dim": 1})]:
        e = ember.tensor(x).split(*args, **kwargs)
        t = torch.tensor(x).split(*args, **kwargs)
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    parts = ember.split(ember.tensor(x), [2, 1])
    assert [tuple(p.shape) for p in parts] == [(2, 4), (1, 4)]


def test_multiple_unnamed_returns_are_plain_tuples():
    x = ember.tensor(np.arange(6.0).reshape(2, 3))
    out = ember.var_mean(x, 1)
    assert type(out) is tuple and len(out) == 2
    assert ember.sort(x).indices.dtype is ember.int64          # named returns keep their namedtuple


def test_norm_rejects_nuclear_and_keeps_fro():
    x = ember.tensor(np.arange(6.0).reshape(2, 3))
    assert float(ember.norm(x, "fro")) == pytest.approx(float(torch.norm(torch.arange(6.0).reshape(2, 3))))
    with pytest.raises(RuntimeError, match="norm"):
        ember.norm(x, "nuc")


def test_flatten_function_matches_torch():
    x = np.arange(120.0).reshape(2, 3, 4, 5)
    for args in [(), (1,), (1, 2), (0, -2), (-1,)]:
        e, t = ember.flatten(ember.tensor(x), *args), torch.flatten(torch.tensor(x), *args)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert tuple(ember.flatten(ember.tensor(3.0)).shape) == (1,)
    with pytest.raises(TypeError, match="flatten.*'input' must be Tensor, not list"):
        ember.flatten([1.0])


def test_einsum_takes_varargs_and_a_list():
    a, b = np.random.default_rng(0).random((2, 3)), np.random.default_rng(1).random((3, 4))
    e1 = ember.einsum("ij,jk->ik", ember.tensor(a), ember.tensor(b))
    e2 = ember.einsum("ij,jk->ik", [ember.tensor(a), ember.tensor(b)])
    np.testing.assert_allclose(e1.numpy(), a @ b)
    np.testing.assert_allclose(e2.numpy(), a @ b)


def test_stubs_type_tensor_list_returns():
    stubs = (ROOT / "ember" / "_generated" / "functions.pyi").read_text()
    assert "def unbind(input: Tensor, dim: int = ...) -> tuple[Tensor, ...]: ..." in stubs


def test_cumprod_gradient_through_zeros_matches_torch():
    x = np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [1.5, -2.0, 0.0, 4.0, 1.0]])
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    ember.cumprod(e, 1).sum().backward()
    torch.cumprod(t, 1).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_allclose_and_equal_answer_python_bools_like_torch(device):
    """allclose and equal (hand-written: they return a bool, not a tensor), functions and methods, on
    pairs chosen to land on each side of each rule: tolerance, NaN, shape, dtype promotion."""
    if device == "meta":            # no values to compare: the value read fails as torch's does on meta
        with pytest.raises(RuntimeError):
            ember.allclose(ember.ones(2, device="meta"), ember.ones(2, device="meta"))
        return
    nan = float("nan")
    pairs = [([1.0, 2.0], [1.0, 2.0 + 1e-6], {}), ([1.0, 2.0], [1.0, 2.1], {}), ([1.0, 2.0], [1.0, 2.1], {"rtol": 0.1}),
             ([1.0, nan], [1.0, nan], {}), ([1.0, nan], [1.0, nan], {"equal_nan": True}),
             ([[1.0, 2.0]], [1.0, 2.0], {}), ([1.0, float("inf")], [1.0, float("inf")], {})]
    for a, b, kw in pairs:
        expected = torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
        got = ember.allclose(ember.tensor(a), ember.tensor(b), **kw)
        assert type(got) is bool and got == expected == ember.tensor(a).allclose(ember.tensor(b), **kw), (a, b, kw)
    for a, b in [([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0], [1, 2]), ([1.0, nan], [1.0, nan]), ([1.0, 2.0], [[1.0, 2.0]]),
                 ([1.0, 2.0], [1.0, 3.0]), ([], [])]:
        expected = torch.equal(torch.tensor(a), torch.tensor(b))
        got = ember.equal(ember.tensor(a), ember.tensor(b))
        assert type(got) is bool and got == expected == ember.tensor(a).equal(ember.tensor(b)), (a, b)
    with pytest.raises(TypeError, match=r"equal\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        ember.equal(ember.tensor([1.0]), 2)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ember.allclose(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2,), (3,), (4,)), ((), (2,)), ((3,),)])
def test_meshgrid_gives_torchs_grids_as_views(indexing, shapes):
    ts = [torch.arange(int(np.prod(s)), dtype=torch.float32).reshape(s) for s in shapes]
    expected = torch.meshgrid(*ts, indexing=indexing)
    got = ember.meshgrid([ember.tensor(t.numpy()) for t in ts], indexing=indexing)
    assert len(got) == len(expected)
    for e, t in zip(got, expected):
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_meshgrid_warns_without_indexing_and_refuses_what_torch_refuses():
    with pytest.warns(UserWarning, match="indexing argument"):
        assert [tuple(g.shape) for g in ember.meshgrid(ember.ones(2), ember.ones(3))] == [(2, 3), (2, 3)]
    for args, kwargs, exc, match in [((ember.arange(2), ember.arange(3.0)), {}, RuntimeError, "same dtype"),
                                     ((ember.arange(2),), {"indexing": "zz"}, RuntimeError, "indexing must be"),
                                     ((), {"indexing": "ij"}, RuntimeError, "non-empty"),
                                     ((ember.zeros(2, 2),), {"indexing": "ij"}, RuntimeError, "0D or 1D")]:
        with pytest.raises(exc, match=match):
            ember.meshgrid(*args, **{"indexing": "ij", **kwargs})


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_nd_shapes_follow_torch(n):
    for shape in [(), (2,), (2, 3), (2, 3, 4)]:
        got = getattr(ember, f"atleast_{n}d")(ember.ones(shape))
        assert tuple(got.shape) == tuple(getattr(torch, f"atleast_{n}d")(torch.ones(shape)).shape)
    pair = getattr(ember, f"atleast_{n}d")(ember.ones(2), ember.tensor(1.0))
    assert isinstance(pair, tuple) and len(pair) == 2 and all(t.dim() >= n for t in pair)
    with pytest.raises(TypeError, match="item 0 is float"):
        getattr(ember, f"atleast_{n}d")(1.0)


def test_metadata_questions_answer_as_torch():
    """ndimension, get_device, is_signed, is_same_size, is_nonzero, positive, and the module-level forms."""
    for dtype in ["float32", "int64", "uint8", "bool"]:
        e, t = ember.ones(2, 3, dtype=getattr(ember, dtype)), torch.ones(2, 3, dtype=getattr(torch, dtype))
        assert (e.ndimension(), e.get_device(), e.is_signed()) == (t.ndimension(), t.get_device(), t.is_signed())
        assert ember.is_floating_point(e) == torch.is_floating_point(t) and ember.is_complex(e) is False
    assert ember.ones(2, device="meta").get_device() == -1
    a = ember.ones(2, 3)
    assert a.is_same_size(ember.zeros(2, 3)) and not ember.is_same_size(a, ember.zeros(3, 2))
    assert ember.positive(a) is a and a.positive() is a
    assert ember.tensor([2.0]).is_nonzero() and not ember.is_nonzero(ember.tensor(0))
    for call, exc, match in [(lambda: ember.ones(2).is_nonzero(), RuntimeError, "more than one value"),
                             (lambda: ember.tensor([]).is_nonzero(), RuntimeError, "no values"),
                             (lambda: ember.tensor([True]).positive(), RuntimeError, "bool tensor is not supported"),
                             (lambda: a.is_same_size(3), TypeError, "must be Tensor, not int"),
                             (lambda: ember.is_floating_point(1.0), TypeError, "must be Tensor, not float")]:
        with pytest.raises(exc, match=match):
            call()


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacking_functions_follow_torch(name):
    """Vectors, 0-d tensors, matrices and 3-d tensors, mixed dtypes promoted as cat promotes them."""
    groups = [[np.arange(3.0), np.arange(2.0)], [np.array(1.0), np.array(2.0)], [np.ones((2, 3)), np.zeros((2, 1))],
              [np.ones((2, 3)), np.ones((4, 3))], [np.ones((2, 3, 1)), np.ones((2, 3, 2))], [np.arange(3.0), np.arange(3)]]
    for group in groups:
        try:
            expected = getattr(torch, name)([torch.tensor(a) for a in group])
        except RuntimeError:
            with pytest.raises(RuntimeError):
                getattr(ember, name)([ember.tensor(a) for a in group])
            continue
        got = getattr(ember, name)([ember.tensor(a) for a in group])
        assert tuple(got.shape) == tuple(expected.shape) and str(got.dtype)[6:] == str(expected.dtype)[6:]
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    with pytest.raises(RuntimeError, match="non-empty"):
        getattr(ember, name)([])
    with pytest.raises(TypeError):
        getattr(ember, name)(ember.ones(2))


def _same_results(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _same_results(g, e)
        return
    assert tuple(got.shape) == tuple(expected.shape) and str(got.dtype)[6:] == str(expected.dtype)[6:]
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


NAN = float("nan")


@pytest.mark.parametrize("data,kwargs", [
    ([3.0, 1.0, NAN, 3.0, NAN, 2.0], {}),
    ([3.0, 1.0, NAN, 3.0, NAN, 2.0], {"return_inverse": True, "return_counts": True}),
    ([[1, 2], [0, 5], [1, 2], [0, 1]], {"dim": 0, "return_inverse": True, "return_counts": True}),
    ([[1, 2, 1], [0, 5, 0]], {"dim": -1, "return_counts": True}),
    ([], {"return_inverse": True, "return_counts": True}),
    (5, {"return_inverse": True}),
    ([True, False, True], {"return_counts": True}),
    ([[2, 1], [1, 2]], {"return_inverse": True})])
def test_unique_follows_torch(data, kwargs):
    """Values sorted (NaNs distinct and last), slices along a dim in lexicographic order, inverse and counts."""
    t = torch.tensor(data)
    _same_results(ember.unique(ember.tensor(t.numpy()), **kwargs), torch.unique(t, **kwargs))
    _same_results(ember.tensor(t.numpy()).unique(**kwargs), t.unique(**kwargs))


def test_unique_consecutive_and_unique_errors_follow_torch():
    for data, kwargs in [([1, 1, 2, 2, 3, 1, 1, 2], {"return_inverse": True, "return_counts": True}),
                         ([[1, 2], [1, 2], [0, 5], [1, 2]], {"dim": 0, "return_counts": True})]:
        t = torch.tensor(data)
        _same_results(ember.unique_consecutive(ember.tensor(t.numpy()), **kwargs), torch.unique_consecutive(t, **kwargs))
    _same_results(ember.unique(ember.zeros(0, 3), dim=0, return_counts=True),
                  torch.unique(torch.zeros(0, 3), dim=0, return_counts=True))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.unique(ember.tensor([[1]]), dim=2)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        ember.unique(ember.zeros(2, 0), dim=0)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        ember.unique([1, 2])


@pytest.mark.parametrize("args", [(7, 3), (7, [1, 5]), (7, [3, 1]), (5, [-2, 10]), (2, 4), ((2, 5), 2, 1),
                                  ((3, 4), 3, -1), (4, "tensor 2"), (6, "tensor [1, 4]")])
def test_tensor_split_gives_torchs_views(args):
    shape, spec, *dim = args
    tensors = {"tensor 2": 2, "tensor [1, 4]": [1, 4]}
    sections = (ember.tensor(tensors[spec]), torch.tensor(tensors[spec])) if isinstance(spec, str) else (spec, spec)
    data = np.arange(int(np.prod(shape))).reshape(shape)
    got, expected = ember.tensor_split(ember.tensor(data), sections[0], *dim), \
        torch.tensor_split(torch.tensor(data), sections[1], *dim)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert tuple(g.shape) == tuple(e.shape) and g.stride() == e.stride() and g._base is not None
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_hsplit_vsplit_dsplit_follow_torch():
    for name, shape, spec in [("hsplit", (4, 6), 3), ("hsplit", (6,), 2), ("vsplit", (4, 6), [1]), ("dsplit", (2, 2, 4), 2)]:
        data = np.arange(int(np.prod(shape))).reshape(shape)
        got, expected = getattr(ember, name)(ember.tensor(data), spec), getattr(torch, name)(torch.tensor(data), spec)
        assert [tuple(g.shape) for g in got] == [tuple(e.shape) for e in expected]
        assert [tuple(g.shape) for g in getattr(ember.tensor(data), name)(spec)] == [tuple(e.shape) for e in expected]
    for call, match in [(lambda: ember.hsplit(ember.ones(4, 5), 3), "not divisible"),
                        (lambda: ember.vsplit(ember.ones(4), 2), "at least 2 dimension"),
                        (lambda: ember.tensor_split(ember.arange(4), 0), "larger than 0"),
                        (lambda: ember.tensor_split(ember.tensor(1.0), 1), "at least a 1-dimensional")]:
        with pytest.raises(RuntimeError, match=match):
            call()
