"""ember.linalg's Cholesky factorisation and triangular solves against torch.linalg: values, first and second
derivatives in float64, batched and broadcast shapes, the upper/left/unitriangular variants, torch's older
spellings (cholesky, cholesky_solve, triangular_solve, Tensor.cholesky) and the errors. The explicit kernels
in ember ops (what devices without LAPACK run) are checked against the same torch results directly."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.decompositions import linalg as explicit

TOL = dict(rtol=1e-10, atol=1e-10)
# torch.cholesky and torch.triangular_solve warn that they are deprecated
pytestmark = pytest.mark.filterwarnings("ignore:torch.(cholesky|triangular_solve) is deprecated")


def spd(rng, shape, n: int) -> np.ndarray:
    """Well-conditioned symmetric positive-definite matrices of batch `shape`."""
    x = rng.standard_normal(tuple(shape) + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def triangular(rng, shape, n: int, upper: bool) -> np.ndarray:
    """Well-conditioned triangular matrices (diagonal away from 0), with junk in the other triangle that the
    solves must not read."""
    x = rng.standard_normal(tuple(shape) + (n, n)) * 0.3
    x += np.eye(n) * (1.5 + rng.uniform(0, 1, tuple(shape) + (n, 1)))
    return x


def close(e, t, **tol):
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(), **(tol or TOL))


def both(a: np.ndarray, grad: bool = False):
    return (ember.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad))


# ---------------------------------------------------------------- cholesky
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("n", [1, 4])
def test_cholesky_values_and_info(shape, upper, n):
    rng = np.random.default_rng(n + len(shape))
    e, t = both(spd(rng, shape, n))
    close(ember.linalg.cholesky(e, upper=upper), torch.linalg.cholesky(t, upper=upper))
    (le, ie), (lt, it) = ember.linalg.cholesky_ex(e, upper=upper), torch.linalg.cholesky_ex(t, upper=upper)
    close(le, lt)
    assert ie.dtype == ember.int32 and tuple(ie.shape) == tuple(it.shape) and not ie.numpy().any()
    assert ember.linalg.cholesky_ex(e).L is not None and ember.linalg.cholesky_ex(e).info is not None
    close(ember.cholesky(e, upper), torch.cholesky(t, upper))
    close(e.cholesky(upper=upper), t.cholesky(upper=upper))


def test_cholesky_reads_one_triangle_and_lays_out_as_torch():
    a = spd(np.random.default_rng(0), (2,), 3)
    junk = a + np.triu(np.ones((3, 3)) * 7, 1)                  # the upper triangle is not read by the lower factor
    e, t = both(junk)
    close(ember.linalg.cholesky(e), torch.linalg.cholesky(t))
    junk = a + np.tril(np.ones((3, 3)) * 7, -1)
    e, t = both(junk)
    close(ember.linalg.cholesky(e, upper=True), torch.linalg.cholesky(t, upper=True))
    e, t = both(a)
    for upper in (False, True):
        assert ember.linalg.cholesky(e, upper=upper).stride() == torch.linalg.cholesky(t, upper=upper).stride()
        assert ember.linalg.cholesky(e.to("meta"), upper=upper).stride() == \
            torch.linalg.cholesky(t.to("meta"), upper=upper).stride()


def test_cholesky_float32_and_empty():
    a = spd(np.random.default_rng(1), (2,), 3).astype(np.float32)
    e, t = both(a)
    out = ember.linalg.cholesky(e)
    assert out.dtype == ember.float32
    close(out, torch.linalg.cholesky(t), rtol=1e-5, atol=1e-5)
    for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
        (le, ie), (lt, it) = (ember.linalg.cholesky_ex(ember.zeros(shape, dtype=ember.float64)),
                              torch.linalg.cholesky_ex(torch.zeros(shape, dtype=torch.float64)))
        assert tuple(le.shape) == tuple(lt.shape) and tuple(ie.shape) == tuple(it.shape)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradients_and_double_backward_match_torch(upper):
    rng = np.random.default_rng(2)
    a = spd(rng, (2,), 3)
    g = rng.standard_normal((2, 3, 3))
    e, t = both(a, grad=True)
    fe = ember.linalg.cholesky(e, upper=upper)
    ft = torch.linalg.cholesky(t, upper=upper)
    (ge,) = ember.autograd.grad(fe, e, ember.tensor(g), create_graph=True)
    (gt,) = torch.autograd.grad(ft, t, torch.tensor(g), create_graph=True)
    close(ge, gt)
    w = rng.standard_normal((2, 3, 3))
    (gge,) = ember.autograd.grad((ge * ember.tensor(w)).sum(), e)
    (ggt,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), t)
    close(gge, ggt, rtol=1e-9, atol=1e-9)


def test_cholesky_gradcheck_through_a_symmetric_input():
    a = ember.tensor(spd(np.random.default_rng(3), (), 3), requires_grad=True)

    def f(x):
        return ember.linalg.cholesky((x + x.mT) / 2)
    assert ember.autograd.gradcheck(f, (a,))
    assert ember.autograd.gradgradcheck(f, (a,))


def test_not_positive_definite_raises_linalg_error():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    batch = np.stack([np.eye(2), bad])
    cases = [(lambda m, x: m.linalg.cholesky(x), bad), (lambda m, x: m.linalg.cholesky_ex(x, check_errors=True), bad),
             (lambda m, x: m.cholesky(x), bad), (lambda m, x: m.linalg.cholesky(x), batch),
             (lambda m, x: m.linalg.cholesky(x), np.array([[np.nan, 0.0], [0.0, 1.0]]))]
    for call, a in cases:
        with pytest.raises(torch.linalg.LinAlgError) as t_err:
            call(torch, torch.tensor(a))
        with pytest.raises(ember.linalg.LinAlgError) as e_err:
            call(ember, ember.tensor(a))
        assert str(e_err.value) == str(t_err.value)
        assert isinstance(e_err.value, RuntimeError)
    L, info = ember.linalg.cholesky_ex(ember.tensor(batch))
    assert info.tolist() == torch.linalg.cholesky_ex(torch.tensor(batch)).info.tolist() == [0, 2]


@pytest.mark.parametrize("call, a, exc", [
    (lambda m, x: m.linalg.cholesky(x), np.ones((2, 3)), RuntimeError),
    (lambda m, x: m.linalg.cholesky_ex(x), np.ones((3, 2)), RuntimeError),
    (lambda m, x: m.cholesky(x), np.ones((2, 3)), RuntimeError),
    (lambda m, x: m.linalg.cholesky(x), np.ones((2, 2), np.int64), RuntimeError),
    (lambda m, x: m.linalg.cholesky(x.half()), np.eye(2), NotImplementedError),
])
def test_cholesky_errors(call, a, exc):
    with pytest.raises(exc) as t_err:
        call(torch, torch.tensor(a))
    with pytest.raises(exc) as e_err:
        call(ember, ember.tensor(a))
    assert isinstance(e_err.value, ember.errors.EmberError)
    # torch's message after the op's name (torch names linalg.cholesky for cholesky_ex's shape checks too)
    assert str(t_err.value).split(": ", 1)[-1] in str(e_err.value) and "cholesky" in str(e_err.value)


def test_cholesky_needs_a_matrix():
    with pytest.raises(RuntimeError, match="linalg.cholesky: The input tensor A must have at least 2 dimensions"):
        ember.linalg.cholesky(ember.ones(3))


# ---------------------------------------------------------------- solve_triangular
VARIANTS = [dict(upper=u, left=lf, unitriangular=un) for u in (False, True) for lf in (True, False) for un in (False, True)]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(k for k, v in kw.items() if v) or "lower")
@pytest.mark.parametrize("a_batch, b_batch", [((), ()), ((2,), (2,)), ((3, 1), (2,)), ((), (2,)), ((2,), ())])
def test_solve_triangular_values_and_gradients(kw, a_batch, b_batch):
    rng = np.random.default_rng(len(a_batch) * 3 + len(b_batch))
    n, k = 3, 2
    a = triangular(rng, a_batch, n, kw["upper"])
    b = rng.standard_normal(tuple(b_batch) + ((n, k) if kw["left"] else (k, n)))
    (ae, at), (be, bt) = both(a, grad=True), both(b, grad=True)
    xe, xt = ember.linalg.solve_triangular(ae, be, **kw), torch.linalg.solve_triangular(at, bt, **kw)
    close(xe, xt)
    assert tuple(xe.shape) == tuple(xt.shape) and xe.stride() == xt.stride()
    g = rng.standard_normal(tuple(xt.shape))
    ge = ember.autograd.grad(xe, (ae, be), ember.tensor(g), create_graph=True)
    gt = torch.autograd.grad(xt, (at, bt), torch.tensor(g), create_graph=True)
    for e, t in zip(ge, gt):
        close(e, t)
    w = [rng.standard_normal(tuple(t.shape)) for t in gt]
    gge = ember.autograd.grad(sum((x * ember.tensor(v)).sum() for x, v in zip(ge, w)), (ae, be))
    ggt = torch.autograd.grad(sum((x * torch.tensor(v)).sum() for x, v in zip(gt, w)), (at, bt))
    for e, t in zip(gge, ggt):
        close(e, t, rtol=1e-9, atol=1e-9)


def test_solve_triangular_gradcheck():
    rng = np.random.default_rng(5)
    a = ember.tensor(triangular(rng, (2,), 3, False), requires_grad=True)
    b = ember.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)

    def f(x, y):
        return ember.linalg.solve_triangular(x, y, upper=False)
    assert ember.autograd.gradcheck(f, (a, b))
    assert ember.autograd.gradgradcheck(f, (a, b))


def test_solve_triangular_dtypes_singular_and_empty():
    a = triangular(np.random.default_rng(6), (), 3, True)
    b = np.ones((3, 2))
    for bd in (np.float32, np.float64, np.int64):        # the result has A's dtype
        xe = ember.linalg.solve_triangular(ember.tensor(a.astype(np.float32)), ember.tensor(b.astype(bd)), upper=True)
        xt = torch.linalg.solve_triangular(torch.tensor(a.astype(np.float32)), torch.tensor(b.astype(bd)), upper=True)
        assert xe.dtype == ember.float32 and xt.dtype == torch.float32
        close(xe, xt, rtol=1e-5, atol=1e-5)
    singular = np.triu(np.ones((2, 2)))
    singular[1, 1] = 0
    xe = ember.linalg.solve_triangular(ember.tensor(singular), ember.ones(2, 1, dtype=ember.float64), upper=True)
    xt = torch.linalg.solve_triangular(torch.tensor(singular), torch.ones(2, 1, dtype=torch.float64), upper=True)
    np.testing.assert_array_equal(np.isfinite(xe.numpy()), np.isfinite(xt.numpy()))
    for ashape, bshape in (((0, 0), (0, 3)), ((2, 2), (2, 0)), ((0, 2, 2), (2, 3))):
        xe = ember.linalg.solve_triangular(ember.eye(ashape[-1]).expand(*ashape), ember.ones(*bshape), upper=False)
        xt = torch.linalg.solve_triangular(torch.eye(ashape[-1]).expand(*ashape), torch.ones(*bshape), upper=False)
        assert tuple(xe.shape) == tuple(xt.shape)


@pytest.mark.parametrize("a_shape, b_shape, kw, exc", [
    ((2, 3), (2, 2), dict(upper=True), RuntimeError),
    ((2, 2), (3, 2), dict(upper=True), RuntimeError),
    ((2, 2), (2, 3), dict(upper=True, left=False), RuntimeError),
    ((2, 2), (2,), dict(upper=True), RuntimeError),
    ((3, 2, 2), (4, 2, 1), dict(upper=True), RuntimeError),
])
def test_solve_triangular_errors(a_shape, b_shape, kw, exc):
    with pytest.raises(exc) as t_err:
        torch.linalg.solve_triangular(torch.ones(a_shape), torch.ones(b_shape), **kw)
    with pytest.raises(exc) as e_err:
        ember.linalg.solve_triangular(ember.ones(a_shape), ember.ones(b_shape), **kw)
    assert str(t_err.value) in str(e_err.value) or "size of tensor" in str(e_err.value)
    with pytest.raises(TypeError):
        ember.linalg.solve_triangular(ember.eye(2), ember.ones(2, 2))        # upper is required, as torch's


@pytest.mark.parametrize("dtype", ["int64", "float16"])
def test_solve_triangular_refuses_what_torch_refuses(dtype):
    with pytest.raises(NotImplementedError, match="triangular_solve_cpu"):
        torch.linalg.solve_triangular(torch.eye(2, dtype=getattr(torch, dtype)), torch.ones(2, 2), upper=True)
    with pytest.raises(NotImplementedError, match="triangular_solve_cpu"):
        ember.linalg.solve_triangular(ember.eye(2, dtype=getattr(ember, dtype)), ember.ones(2, 2), upper=True)


# ---------------------------------------------------------------- torch's older spellings
@pytest.mark.parametrize("upper, transpose, unitriangular", [(True, False, False), (False, True, False),
                                                             (False, False, True)])
def test_triangular_solve(upper, transpose, unitriangular):
    rng = np.random.default_rng(7)
    a, b = triangular(rng, (2,), 3, upper), rng.standard_normal((4, 1, 3, 2))
    (ae, at), (be, bt) = both(a, grad=True), both(b, grad=True)
    re = ember.triangular_solve(be, ae, upper, transpose, unitriangular)
    rt = torch.triangular_solve(bt, at, upper, transpose, unitriangular)
    close(re.solution, rt.solution)
    close(re.cloned_coefficient, rt.cloned_coefficient)
    g = rng.standard_normal(tuple(rt.solution.shape))
    for e, t in zip(ember.autograd.grad(re.solution, (ae, be), ember.tensor(g)),
                    torch.autograd.grad(rt.solution, (at, bt), torch.tensor(g))):
        close(e, t)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.triangular_solve(be.float(), ae)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve(upper):
    rng = np.random.default_rng(8)
    factor = torch.linalg.cholesky(torch.tensor(spd(rng, (2,), 3)), upper=upper).numpy()
    b = rng.standard_normal((3, 1, 3, 2))
    (fe, ft), (be, bt) = both(factor, grad=True), both(b, grad=True)
    xe, xt = ember.cholesky_solve(be, fe, upper), torch.cholesky_solve(bt, ft, upper)
    close(xe, xt)
    close(be.cholesky_solve(fe, upper), bt.cholesky_solve(ft, upper))
    g = rng.standard_normal(tuple(xt.shape))
    for e, t in zip(ember.autograd.grad(xe, (fe, be), ember.tensor(g)),
                    torch.autograd.grad(xt, (ft, bt), torch.tensor(g))):
        close(e, t, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- the explicit kernels (devices without LAPACK)
@pytest.mark.parametrize("upper", [False, True])
def test_explicit_cholesky_kernel_matches_torch(upper):
    a = spd(np.random.default_rng(9), (2, 2), 4)
    a[0, 1] = np.diag([1.0, -1.0, 1.0, 1.0])             # one matrix whose second leading minor is not positive
    L, info = explicit.linalg_cholesky_ex(ember.tensor(a), upper)
    lt, it = torch.linalg.cholesky_ex(torch.tensor(a), upper=upper)
    assert info.dtype == ember.int32 and info.tolist() == it.tolist()
    good = it.numpy() == 0
    np.testing.assert_allclose(L.numpy()[good], lt.numpy()[good], **TOL)
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.cholesky_ex: \(Batch element 1\)"):
        explicit.linalg_cholesky_ex(ember.tensor(a), upper, True)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(k for k, v in kw.items() if v) or "lower")
def test_explicit_solve_kernel_matches_torch(kw):
    rng = np.random.default_rng(10)
    a = triangular(rng, (3, 1), 4, kw["upper"])
    b = rng.standard_normal((2, 4, 3) if kw["left"] else (2, 3, 4))
    xe = explicit.linalg_solve_triangular(ember.tensor(a), ember.tensor(b), kw["upper"], kw["left"],
                                          kw["unitriangular"])
    close(xe, torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), **kw))


def test_meta_shapes_dtypes_and_gradients():
    a = ember.empty(2, 3, 3, device="meta", requires_grad=True)
    L, info = ember.linalg.cholesky_ex(a)
    assert tuple(L.shape) == (2, 3, 3) and info.dtype == ember.int32 and tuple(info.shape) == (2,)
    x = ember.linalg.solve_triangular(L, ember.empty(4, 1, 3, 5, device="meta"), upper=False)
    assert tuple(x.shape) == (4, 2, 3, 5)
    x.sum().backward()
    assert tuple(a.grad.shape) == (2, 3, 3)


def test_cholesky_solve_double_backward_matches_torch():
    rng = np.random.default_rng(11)
    factor = np.linalg.cholesky(spd(rng, (), 3))
    b = rng.standard_normal((3, 2))
    (fe, ft), (be, bt) = both(factor, grad=True), both(b, grad=True)
    g = rng.standard_normal((3, 2))
    ge = ember.autograd.grad(ember.cholesky_solve(be, fe), (fe, be), ember.tensor(g), create_graph=True)
    gt = torch.autograd.grad(torch.cholesky_solve(bt, ft), (ft, bt), torch.tensor(g), create_graph=True)
    w = [rng.standard_normal(tuple(t.shape)) for t in gt]
    gge = ember.autograd.grad(sum((x * ember.tensor(v)).sum() for x, v in zip(ge, w)), (fe, be))
    ggt = torch.autograd.grad(sum((x * torch.tensor(v)).sum() for x, v in zip(gt, w)), (ft, bt))
    for e, t in zip(gge, ggt):
        close(e, t, rtol=1e-9, atol=1e-9)


def test_autocast_runs_the_factorisations_in_float32():
    a = ember.tensor(spd(np.random.default_rng(12), (), 3)).to(ember.bfloat16)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert ember.linalg.cholesky(a).dtype == ember.float32
        assert ember.cholesky_solve(a, ember.linalg.cholesky(a).to(ember.bfloat16)).dtype == ember.float32
