"""The cpu backend's in-place fast path (ember_cpu/fast_path.py): `p.mul_(0.9)`, `p.add_(g, alpha=-lr)`,
`v.addcmul_(g, g, value=0.1)`, `s.sqrt_()`... run as numpy ufuncs in place. They must give the bits of
the out-of-place op (and torch's values), bump the version counter, and leave every call they do not
take (other dtypes, broadcasting, overlap, non-contiguous self) to the full path with its errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

CASES = {  # name -> (in-place call, the out-of-place expression it must equal)
    "mul_ number": (lambda a, b, c: a.mul_(0.9), lambda a, b, c: a * 0.9),
    "mul_ tensor": (lambda a, b, c: a.mul_(b), lambda a, b, c: a * b),
    "add_ alpha": (lambda a, b, c: a.add_(b, alpha=-0.37), lambda a, b, c: a.add(b, alpha=-0.37)),
    "add_ int": (lambda a, b, c: a.add_(1), lambda a, b, c: a + 1),
    "sub_": (lambda a, b, c: a.sub_(b, alpha=2.5), lambda a, b, c: a.sub(b, alpha=2.5)),
    "div_": (lambda a, b, c: a.div_(b), lambda a, b, c: a / b),
    "div_ number": (lambda a, b, c: a.div_(3.0), lambda a, b, c: a / 3.0),
    "sqrt_": (lambda a, b, c: a.sqrt_(), lambda a, b, c: a.sqrt()),
    "exp_": (lambda a, b, c: a.exp_(), lambda a, b, c: a.exp()),
    "neg_": (lambda a, b, c: a.neg_(), lambda a, b, c: -a),
    "addcmul_": (lambda a, b, c: a.addcmul_(b, c, value=0.1), lambda a, b, c: a.addcmul(b, c, value=0.1)),
    "addcdiv_": (lambda a, b, c: a.addcdiv_(b, c, value=-2.0), lambda a, b, c: a.addcdiv(b, c, value=-2.0)),
    "a.mul_(a)": (lambda a, b, c: a.mul_(a), lambda a, b, c: a * a),
    "mul_ 0-d tensor": (lambda a, b, c: a.mul_(b[2, 3]), lambda a, b, c: a * b[2, 3]),
    "add_ 0-d tensor, alpha": (lambda a, b, c: a.add_(b[1, 1], alpha=0.5), lambda a, b, c: a.add(b[1, 1], alpha=0.5)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_same_bits_as_out_of_place_and_torchs_values(name, dtype):
    inplace, expression = CASES[name]
    rng = np.random.default_rng(0)
    a, b, c = (np.abs(rng.standard_normal((5, 7))) + 0.5 for _ in range(3))
    ours = [ember.tensor(x).to(getattr(ember, dtype)) for x in (a, b, c)]
    expected = expression(*[t.clone() for t in ours]).numpy()
    version = ours[0]._version
    result = inplace(*ours)
    assert result is ours[0] and ours[0]._version > version
    np.testing.assert_array_equal(ours[0].numpy(), expected)
    theirs = [torch.tensor(x).to(getattr(torch, dtype)) for x in (a, b, c)]
    inplace(*theirs)
    tol = 1e-6 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=tol, atol=tol)


def test_calls_the_fast_path_declines_behave_as_torch():
    for lib in (ember, torch):
        a = lib.ones(3, 4)
        a.mul_(lib.full((4,), 2.0))                       # broadcast other
        assert a.tolist() == [[2.0] * 4] * 3
        a.t().add_(1.5)                                   # non-contiguous self
        assert a.tolist() == [[3.5] * 4] * 3
        a.add_(lib.ones(3, 4, dtype=lib.float64))         # other of another dtype: computed, then cast
        assert a.dtype == lib.float32 and a.tolist() == [[4.5] * 4] * 3
        i = lib.arange(4)
        i.mul_(3)                                         # integers
        assert i.tolist() == [0, 3, 6, 9]
        with pytest.raises(RuntimeError, match="can't be cast"):
            i.mul_(0.5)
        with pytest.raises(RuntimeError):
            lib.ones(4).expand(3, 4).mul_(2.0)            # internal overlap
        w = lib.arange(6.0)
        with pytest.raises(RuntimeError, match="single memory location"):
            w[1:].add_(w[:-1])                            # partial overlap of self and other
        with pytest.raises(RuntimeError, match="single memory location"):
            w.mul_(w[2])                                  # a 0-d other inside self
        y = lib.arange(6.0, requires_grad=True) * 1
        with pytest.raises(RuntimeError, match="single memory location"):
            y[1:].mul_(y[:-1])                            # also where autograd records
        w[:3].add_(w[3:])                                 # disjoint parts of one storage
        assert w.tolist() == [3.0, 5.0, 7.0, 3.0, 4.0, 5.0]
        with pytest.raises(RuntimeError, match="rounding_mode"):
            lib.ones(2).div_(2.0, rounding_mode="bogus")
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.mul_(2.0)                                       # autograd's check runs before any fast path
    y = x * 1
    y.mul_(3.0)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_a_0d_operand_makes_no_temporary_of_selfs_size():
    """`grad.mul_(inv_scale)` (GradScaler's unscale) runs the ufunc in place: no scratch of the gradient's size."""
    import tracemalloc

    a, s = ember.ones(256, 256), ember.tensor(0.5)
    a.mul_(s)
    tracemalloc.start()
    try:
        a.mul_(s)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < a.numel() * 4 // 8 and a[0, 0].item() == 0.25
