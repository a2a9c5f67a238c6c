"""Factories and random numbers against PyTorch (the oracle).

`ember.tensor` / `as_tensor` dtype inference from Python and numpy data; empty, zeros, ones,
full, arange, eye, rand, randn, randint and the *_like factories with their dtype, device
and requires_grad arguments and both size spellings; Generator / manual_seed determinism,
the `generator=` argument, RNG state round trips and statistical sanity of the draws.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember

from torch_compare import DTYPES, dname, values

FLOATS = ["float16", "bfloat16", "float32", "float64"]




def assert_same(e, t, *, check_values: bool = True):
    assert isinstance(e, ember.Tensor), type(e)
    assert dname(e.dtype) == dname(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.requires_grad == t.requires_grad
    assert e.device.type == t.device.type
    if check_values and e.device.type != "meta":
        np.testing.assert_array_equal(values(e), values(t))


def both(fn):
    return fn(ember), fn(torch)


@pytest.fixture(autouse=True)
def _restore_defaults():
    yield
    ember.set_default_dtype(ember.float32)


# ----------------------------------------------------------------------------- ember.tensor

TENSOR_DATA = [
    [1, 2], [1.0, 2], [True, False], 3, 3.5, True, [[1, 2], [3, 4]], [], [[], []], (1, 2.5), [True, 2],
    [1, 2.5, True], [[1.5], [2.0]], -0.0, [float("inf"), float("nan")], 2 ** 40,
    np.array([1, 2], dtype=np.int32), np.float64(2.0), np.array(True), np.ones((2, 2), dtype=np.float16),
    [np.float32(1), 2.5], [np.float64(1.5)], [np.int32(1)], [np.int32(1), 2], [np.float16(1), 2],
    [np.int16(1), True], [np.uint8(3), np.int8(1)], [[np.float64(1)], [2]], [np.bool_(True)],
]


@pytest.mark.parametrize("data", TENSOR_DATA, ids=[repr(d) for d in TENSOR_DATA])
def test_tensor_infers_dtype_like_torch(data):
    assert_same(ember.tensor(data), torch.tensor(data))


def test_tensor_infers_dtype_from_tensors_inside_lists():
    for build in (lambda m: [m.tensor(1, dtype=m.int32)], lambda m: [m.tensor(1, dtype=m.int32), 2],
                  lambda m: [m.tensor(1.0, dtype=m.float16), 2.5], lambda m: [m.tensor(2.0), m.tensor(3.0)]):
        assert_same(*both(lambda m: m.tensor(build(m))))


def test_tensor_follows_default_dtype():
    ember.set_default_dtype(ember.float64)
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.tensor([1]).dtype is ember.int64
    assert ember.tensor([]).dtype is ember.float64
    assert ember.zeros(2).dtype is ember.float64
    assert ember.arange(0.0, 1.0, 0.5).dtype is ember.float64


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_dtype_argument(dtype):
    data = [0.0, 1.0, 2.75, 100.0]
    assert_same(ember.tensor(data, dtype=getattr(ember, dtype)), torch.tensor(data, dtype=getattr(torch, dtype)))


def test_tensor_arguments_and_copy_semantics():
    assert_same(*both(lambda m: m.tensor([1.0, 2.0], requires_grad=True)))
    assert ember.tensor([1.0], requires_grad=True).is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        ember.tensor([1, 2], requires_grad=True)
    m = ember.tensor([[1, 2]], device="meta")
    assert m.device.type == "meta" and m.shape == (1, 2) and m.dtype is ember.int64
    arr = np.zeros(3)
    e = ember.tensor(arr)                          # ember.tensor copies
    arr[0] = 5
    assert e.tolist() == [0.0, 0.0, 0.0] and e.dtype is ember.float64
    src = ember.ones(2)
    copy = ember.tensor(src)
    src.fill_(3.0)
    assert copy.tolist() == [1.0, 1.0]
    with pytest.raises((TypeError, ValueError)):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor("abc")
    with pytest.raises(TypeError):
        ember.tensor([1], dtype="float32")


def test_as_tensor_shares_numpy_memory():
    arr = np.zeros(3, dtype=np.float32)
    t = ember.as_tensor(arr)
    t.fill_(2.0)
    assert arr.tolist() == [2.0, 2.0, 2.0]
    x = ember.ones(2)
    assert ember.as_tensor(x) is x
    assert ember.as_tensor([1, 2.0]).dtype is ember.float32
    assert ember.as_tensor(np.zeros(2), dtype=ember.float32).dtype is ember.float32


# ----------------------------------------------------------------------------- shape factories

SIZE_SPELLINGS = [(2, 3), ((2, 3),), ([2, 3],), (torch.Size([2, 3]),), ((),), ((0,),), (0,), ((1, 0, 2),)]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("size", SIZE_SPELLINGS, ids=repr)
def test_size_spellings(name, size):
    def run(m):
        args = tuple(m.Size(a) if isinstance(a, torch.Size) else a for a in size) if m is ember else size
        return getattr(m, name)(*args)
    e, t = both(run)
    assert_same(e, t, check_values=name in ("zeros", "ones"))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_arguments(name):
    fn = lambda m, **kw: getattr(m, name)(2, 3, **kw)  # noqa: E731
    floats = FLOATS if name in ("rand", "randn") else DTYPES
    for dtype in floats:
        e, t = both(lambda m: fn(m, dtype=getattr(m, dtype)))
        assert_same(e, t, check_values=name in ("zeros", "ones"))
    e, t = both(lambda m: fn(m, requires_grad=True))
    assert_same(e, t, check_values=name in ("zeros", "ones"))
    assert e.is_leaf and e.grad_fn is None
    e, t = both(lambda m: fn(m, device="meta", dtype=m.float16))
    assert_same(e, t)
    assert fn(ember, device=ember.device("meta")).device.type == "meta"
    if name not in ("rand", "randn"):
        with pytest.raises(RuntimeError, match="floating point"):
            fn(ember, dtype=ember.int64, requires_grad=True)


def test_zeros_and_ones_values_every_dtype():
    for dtype in DTYPES:
        assert_same(*both(lambda m: m.zeros(2, 2, dtype=getattr(m, dtype))))
        assert_same(*both(lambda m: m.ones(3, dtype=getattr(m, dtype))))


def test_negative_size_is_an_error():
    with pytest.raises(RuntimeError):
        ember.zeros(-1)
    with pytest.raises(TypeError):
        ember.zeros(2.0)


def test_size_keyword():
    assert ember.zeros(size=(2, 3)).shape == (2, 3)
    assert ember.rand(size=(2, 3)).shape == (2, 3)


FULL_CASES = [
    ((2,), 3, None), ((2,), 3.5, None), ((2,), True, None), ((2,), 3, "float64"), ([2, 2], -1, None),
    ((2,), 2.7, "int32"), ((3,), 1, "bool"), ((2, 1), 0.1, "float16"), ((2,), -2.5, "bfloat16"), ((), 7, None),
]


@pytest.mark.parametrize("size,fill,dtype", FULL_CASES, ids=repr)
def test_full(size, fill, dtype):
    assert_same(*both(lambda m: m.full(size, fill, dtype=None if dtype is None else getattr(m, dtype))))


def test_full_arguments():
    assert_same(*both(lambda m: m.full((2,), 1.0, requires_grad=True)))
    assert_same(*both(lambda m: m.full((2, 3), 4, device="meta")))
    ember.set_default_dtype(ember.float64)
    assert ember.full((1,), 0.5).dtype is ember.float64 and ember.full((1,), 5).dtype is ember.int64


ARANGE_CASES = [
    (5,), (5.0,), (2, 7), (1, 10, 3), (10, 0, -3), (0, 1, 0.1), (1, 2.5, 0.5), (-1, 1, 0.3), (1.0, -1.0, -0.25),
    (0,), (0, 1, 1 / 3), (0, 3, 0.1), (0.5, 5), (-5, 5, 2), (3, 3), (0, 10, 4), (10, 1, -1.5), (1e-3, 5e-3, 1e-3),
]


@pytest.mark.parametrize("args", ARANGE_CASES, ids=repr)
def test_arange(args):
    e, t = both(lambda m: m.arange(*args))
    assert_same(e, t, check_values=False)          # dtype and length exactly
    # values to the last bit of float32: torch accumulates in float32 on cpu, ember in double
    np.testing.assert_allclose(values(e), values(t), rtol=2 ** -23, atol=0)


def test_arange_arguments():
    for args, kw in [((5,), {"dtype": "float64"}), ((0.5, 5), {"dtype": "int64"}), ((0, 2, 0.5), {"dtype": "bfloat16"}),
                     ((0, 1, 0.25), {"dtype": "float16"}), ((0.5, 3.5), {"dtype": "int32"}), ((3,), {"dtype": "uint8"})]:
        assert_same(*both(lambda m: m.arange(*args, dtype=getattr(m, kw["dtype"]))))
    assert_same(*both(lambda m: m.arange(start=1, end=4)))
    assert_same(*both(lambda m: m.arange(0, 10, step=4)))
    assert_same(*both(lambda m: m.arange(3.0, requires_grad=True)))
    assert_same(*both(lambda m: m.arange(4, device="meta")))
    for bad in ((0, 5, 0), (5, 0), (0, 5, -1)):
        with pytest.raises(RuntimeError):
            ember.arange(*bad)


def test_arange_tensor_and_numpy_bounds():
    assert_same(*both(lambda m: m.arange(m.tensor(1), m.tensor(4.5))))
    assert_same(*both(lambda m: m.arange(np.int64(3))))


EYE_CASES = [((3,), None), ((2, 4), None), ((4, 2), "int64"), ((0,), None), ((2,), "bool"), ((1, 3), "float16")]


@pytest.mark.parametrize("args,dtype", EYE_CASES, ids=repr)
def test_eye(args, dtype):
    assert_same(*both(lambda m: m.eye(*args, dtype=None if dtype is None else getattr(m, dtype))))


def test_eye_arguments():
    assert_same(*both(lambda m: m.eye(2, requires_grad=True)))
    assert_same(*both(lambda m: m.eye(2, m=3)))
    m = ember.eye(3, 2, device="meta", dtype=ember.float16)   # (torch's meta eye takes seconds to warm up)
    assert m.device.type == "meta" and m.shape == (3, 2) and m.dtype is ember.float16
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        ember.eye(-1)


LIKE_CASES = [
    ("zeros_like", {}), ("zeros_like", {"dtype": "float16"}), ("ones_like", {}), ("ones_like", {"dtype": "bool"}),
    ("empty_like", {}), ("empty_like", {"dtype": "int8"}), ("full_like", {"fill_value": 2.7}),
    ("full_like", {"fill_value": 7, "dtype": "float64"}), ("full_like", {"fill_value": True}),
]


@pytest.mark.parametrize("name,kw", LIKE_CASES, ids=lambda v: repr(v))
@pytest.mark.parametrize("src", ["int32", "float32", "bfloat16"])
def test_like_factories(name, kw, src):
    def run(m):
        x = m.tensor([[1, 2, 3]]).to(getattr(m, src))
        kwargs = dict(kw)
        fill = kwargs.pop("fill_value", None)
        if "dtype" in kwargs:
            kwargs["dtype"] = getattr(m, kwargs["dtype"])
        args = (x,) if fill is None else (x, fill)
        return getattr(m, name)(*args, **kwargs)
    e, t = both(run)
    assert_same(e, t, check_values=name in ("zeros_like", "ones_like", "full_like"))


def test_like_factory_arguments():
    for name, extra in (("zeros_like", ()), ("ones_like", ()), ("empty_like", ()), ("full_like", (2.0,))):
        fn = getattr(ember, name)
        x = ember.ones(2, 3, requires_grad=True)
        out = fn(x, *extra)
        assert not out.requires_grad and out.shape == (2, 3)   # requires_grad is not inherited
        out = fn(x, *extra, requires_grad=True)
        assert out.requires_grad and out.is_leaf
        out = fn(x, *extra, device="meta")
        assert out.device.type == "meta" and out.shape == (2, 3)
        m = ember.ones(4, device="meta", dtype=ember.float16)
        out = fn(m, *extra)
        assert out.device.type == "meta" and out.dtype is ember.float16
        assert fn(m, *extra, device="cpu").device.type == "cpu"


def test_like_factories_preserve_strides():
    for name in ("zeros_like", "empty_like"):
        e, t = both(lambda m: getattr(m, name)(m.ones(3, 4).t()))
        assert e.stride() == t.stride()


# ----------------------------------------------------------------------------- random numbers

def test_randint():
    e, t = both(lambda m: m.randint(3, 7, (4, 5)))
    assert_same(e, t, check_values=False)
    assert 3 <= e.numpy().min() and e.numpy().max() < 7
    for dtype in ("int8", "int32", "uint8", "float32", "float64", "bool"):
        hi = 2 if dtype == "bool" else 5
        assert_same(*both(lambda m: m.randint(0, hi, (3,), dtype=getattr(m, dtype))), check_values=False)
    assert_same(*both(lambda m: m.randint(0, 3, [2, 2], device="meta")))
    neg = ember.randint(-5, -2, (200,))
    assert set(neg.tolist()) == {-5, -4, -3}
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        ember.randint(3, 3, (2,))


def test_randint_high_only():
    assert_same(*both(lambda m: m.randint(5, (3,))), check_values=False)


@pytest.mark.parametrize("draw", ["rand", "randn", "randint"])
def test_manual_seed_determinism(draw):
    fn = {"rand": lambda: ember.rand(5, 3), "randn": lambda: ember.randn(7),
          "randint": lambda: ember.randint(0, 1000, (6,))}[draw]
    ember.manual_seed(1234)
    a, b = fn().tolist(), fn().tolist()
    ember.manual_seed(1234)
    assert fn().tolist() == a and fn().tolist() == b
    assert a != b                                  # the stream advances
    ember.manual_seed(4321)
    assert fn().tolist() != a
    assert ember.initial_seed() == 4321


def test_generator_argument():
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator("cpu")
    assert g2.manual_seed(7) is g2 and g1.initial_seed() == 7 and g1.device == ember.device("cpu")
    assert ember.rand(4, generator=g1).tolist() == ember.rand(4, generator=g2).tolist()
    assert ember.randn(5, generator=g1).tolist() == ember.randn(5, generator=g2).tolist()
    assert ember.randint(0, 9, (5,), generator=g1).tolist() == ember.randint(0, 9, (5,), generator=g2).tolist()
    ember.manual_seed(0)
    state = ember.get_rng_state()
    ember.rand(3, generator=g1)                    # an explicit generator leaves the default one alone
    assert ember.get_rng_state().tolist() == state.tolist()
    ember.manual_seed(7)
    assert ember.rand(4).tolist() == ember.rand(4, generator=ember.Generator().manual_seed(7)).tolist()
    x = ember.empty(6)
    x.uniform_(generator=ember.Generator().manual_seed(3))
    assert x.tolist() == ember.rand(6, generator=ember.Generator().manual_seed(3)).tolist()


def test_rng_state_round_trip():
    ember.manual_seed(99)
    ember.rand(3)
    state = ember.get_rng_state()
    a = ember.randn(10).tolist()
    ember.set_rng_state(state)
    assert ember.randn(10).tolist() == a
    g = ember.Generator().manual_seed(5)
    s = g.get_state()
    b = ember.rand(4, generator=g).tolist()
    g.set_state(s)
    assert ember.rand(4, generator=g).tolist() == b
    assert ember.Generator().manual_seed(2 ** 64 - 1).initial_seed() == torch.Generator().manual_seed(2 ** 64 - 1).initial_seed()
    assert ember.Generator().manual_seed(-1).initial_seed() == torch.Generator().manual_seed(-1).initial_seed()


def test_bad_seed_is_rejected_and_changes_nothing():
    ember.manual_seed(5)
    expected = ember.rand(3).tolist()
    ember.manual_seed(5)
    for bad in (2 ** 64, -(2 ** 63) - 1):
        with pytest.raises((RuntimeError, ValueError), match="Overflow"):
            ember.manual_seed(bad)
        with pytest.raises((RuntimeError, ValueError), match="Overflow"):
            torch.manual_seed(bad)
    assert ember.initial_seed() == 5 and ember.rand(3).tolist() == expected
    from ember.frontend.random import default_generator
    assert default_generator("meta").initial_seed() == 5


def test_stream_is_block_aligned():
    """Per the Philox spec a draw consumes whole 4-word blocks: rand(4)+rand(4) == rand(8)."""
    g = ember.Generator().manual_seed(11)
    two = ember.rand(4, generator=g).tolist() + ember.rand(4, generator=g).tolist()
    assert ember.rand(8, generator=ember.Generator().manual_seed(11)).tolist() == two
    g = ember.Generator().manual_seed(11)
    first, second = ember.rand(3, generator=g).tolist(), ember.rand(4, generator=g).tolist()
    assert first == two[:3] and second == two[4:]


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_statistics(dtype):
    ember.manual_seed(0)
    x = ember.rand(20000, dtype=getattr(ember, dtype))
    assert x.dtype is getattr(ember, dtype) and x.shape == (20000,)
    v = values(x)
    assert v.min() >= 0.0
    if dtype in ("float32", "float64"):
        assert v.max() < 1.0                       # float16/bfloat16: see test_rand_half_precision_below_one
    assert abs(v.mean() - 0.5) < 0.02
    assert abs(v.std() - math.sqrt(1 / 12)) < 0.02
    assert len(np.unique(v)) > 200


def test_rand_half_precision_below_one():
    for dtype in (ember.float16, ember.bfloat16):
        ember.manual_seed(0)
        assert values(ember.rand(20000, dtype=dtype)).max() < 1.0


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_statistics(dtype):
    ember.manual_seed(1)
    v = values(ember.randn(20000, dtype=getattr(ember, dtype)))
    assert abs(v.mean()) < 0.03 and abs(v.std() - 1.0) < 0.03
    assert (np.abs(v) > 3).mean() < 0.01 and np.isfinite(v).all()
    y = ember.empty(20000, dtype=getattr(ember, dtype))
    y.normal_(5.0, 0.5)
    w = values(y)
    assert abs(w.mean() - 5.0) < 0.05 and abs(w.std() - 0.5) < 0.05


def test_randint_and_uniform_statistics():
    ember.manual_seed(2)
    r = ember.randint(3, 7, (20000,)).numpy()
    counts = np.bincount(r, minlength=7)[3:]
    assert counts.sum() == 20000 and (np.abs(counts - 5000) < 300).all()
    u = ember.empty(10000)
    u.uniform_(-2.0, 3.0)
    v = u.numpy()
    assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.1
    i = ember.empty(5000, dtype=ember.int64)
    i.random_(0, 4)
    assert set(i.tolist()) == {0, 1, 2, 3}


def test_concurrent_draws_from_one_generator_never_overlap():
    """Eight threads drawing from one generator get disjoint parts of its Philox stream."""
    import threading

    gen = ember.Generator().manual_seed(11)
    draws: list = []

    def work():
        for _ in range(25):
            draws.append(ember.randint(0, 2 ** 62, (4,), generator=gen).tolist())

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({tuple(d) for d in draws}) == 200
    assert gen.offset == 200 * 8     # 4 int64 values = 8 words per draw


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("size,stride", [((2, 0), (5, 1)), ((0, 3), (1, 7)), ((3, 0, 2), (9, 4, 1)), ((2, 0), (1, 1))])
def test_empty_strided_of_an_empty_shape_keeps_its_strides(device, size, stride):
    """An empty tensor has no element to place, yet torch keeps the strides asked for, on cpu and meta
    alike; a new empty tensor made otherwise shows contiguous strides (size-0 dims counted as 1)."""
    assert ember.empty_strided(size, stride, device=device).stride() == \
        torch.empty_strided(size, stride, device=device).stride()
    assert ember.empty(size, device=device).stride() == torch.empty(size, device=device).stride()


def test_random_likes_draw_what_the_factories_draw():
    """rand_like, randn_like and randint_like fill a tensor shaped as their input with the draws rand, randn and
    randint make from the same seed (as torch's do), in the input's dtype unless one is given."""
    like = ember.empty(3, 4, dtype=ember.float64)
    for factory, fill in [(lambda: ember.rand(3, 4, dtype=ember.float64), lambda: ember.rand_like(like)),
                          (lambda: ember.randn(3, 4, dtype=ember.float64), lambda: ember.randn_like(like)),
                          (lambda: ember.randint(2, 9, (3, 4), dtype=ember.float64), lambda: ember.randint_like(like, 2, 9)),
                          (lambda: ember.randint(9, (3, 4), dtype=ember.float64), lambda: ember.randint_like(like, 9))]:
        ember.manual_seed(5)
        expected = factory()
        ember.manual_seed(5)
        got = fill()
        assert got.dtype is ember.float64 and ember.equal(got, expected)
    assert ember.randint_like(ember.zeros(2, dtype=ember.uint8), 5, dtype=ember.int64).dtype is ember.int64
    assert ember.rand_like(ember.zeros(3, 2).t()).stride() == torch.rand_like(torch.zeros(3, 2).t()).stride()


def test_normal_overloads_draw_scaled_standard_normals():
    """Each overload's moments, a seed reproducing its draws, and a negative std refused (on data)."""
    n = 20000
    for draw, mean, std in [(lambda g: ember.normal(5.0, 2.0, size=(n,), generator=g), 5.0, 2.0),
                            (lambda g: ember.normal(ember.full((n,), -3.0), 0.5, generator=g), -3.0, 0.5),
                            (lambda g: ember.normal(1.0, ember.full((n,), 3.0), generator=g), 1.0, 3.0),
                            (lambda g: ember.normal(ember.zeros(n), ember.full((n,), 0.25), generator=g), 0.0, 0.25)]:
        x = draw(ember.Generator().manual_seed(7)).numpy().astype(np.float64)
        assert abs(x.mean() - mean) < 0.05 * std and abs(x.std() - std) < 0.05 * std
        assert ember.equal(draw(ember.Generator().manual_seed(7)), draw(ember.Generator().manual_seed(7)))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        ember.normal(ember.zeros(3), ember.tensor([1.0, -1.0, 1.0]))
