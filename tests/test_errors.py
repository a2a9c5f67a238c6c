"""Bad input: PyTorch's exception classes, messages naming the op and the argument."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import ember


def both(fn_ember, fn_torch):
    """Run the same bad call in both frameworks; return (ember exception, torch exception)."""
    with pytest.raises(Exception) as e_info:
        fn_ember()
    with pytest.raises(Exception) as t_info:
        fn_torch()
    return e_info.value, t_info.value


def assert_same_class(e_exc, t_exc):
    """ember's exception is an instance of the built-in class torch raised."""
    builtin = next(c for c in type(t_exc).__mro__ if c.__module__ == "builtins")
    assert isinstance(e_exc, builtin), (type(e_exc), type(t_exc))


def test_shape_mismatch():
    e, t = both(lambda: ember.ones(2, 3) + ember.ones(4), lambda: torch.ones(2, 3) + torch.ones(4))
    assert_same_class(e, t)
    assert str(e).startswith("add.Tensor(): The size of tensor a (3) must match the size of tensor b (4)")


def test_matmul_shape_mismatch():
    e, t = both(lambda: ember.mm(ember.ones(2, 3), ember.ones(4, 5)), lambda: torch.mm(torch.ones(2, 3), torch.ones(4, 5)))
    assert_same_class(e, t)
    assert "mm(): mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)" in str(e)


def test_device_mismatch_cpu_vs_meta():
    e, t = both(lambda: ember.ones(2) * ember.ones(2, device="meta"),
                lambda: torch.ones(2) * torch.ones(2, device="meta"))
    assert_same_class(e, t)
    assert "mul.Tensor" in str(e) and "cpu (argument 'self')" in str(e) and "meta (argument 'other')" in str(e)


def test_wrong_dtype():
    e, t = both(lambda: ember.where(ember.ones(2), ember.ones(2), ember.zeros(2)),
                lambda: torch.where(torch.ones(2), torch.ones(2), torch.zeros(2)))
    assert_same_class(e, t)
    assert "where.self(): where expected condition to be a boolean tensor" in str(e)
    e, t = both(lambda: ember.ones(2, dtype=ember.int64).add_(1.5), lambda: torch.ones(2, dtype=torch.int64).add_(1.5))
    assert_same_class(e, t)
    assert "add_.Tensor(): result type Float can't be cast to the desired output type Long" in str(e)


def test_wrong_argument_type():
    e, t = both(lambda: ember.add(ember.ones(2), "x"), lambda: torch.add(torch.ones(2), "x"))
    assert_same_class(e, t)
    assert "add.Tensor(): argument 'other' must be Tensor or a number, not str" in str(e)


def test_dimension_out_of_range():
    e, t = both(lambda: ember.ones(2, 3).sum(5), lambda: torch.ones(2, 3).sum(5))
    assert_same_class(e, t)
    assert "sum.dim_IntList(): Dimension out of range (expected to be in range of [-2, 1], but got 5)" in str(e)


def test_modified_saved_tensor():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        a = x * 1
        b = a * a
        a.mul_(2)
        b.sum().backward()
    e, t = both(lambda: run(ember), lambda: run(torch))
    assert_same_class(e, t)
    assert "modified by an inplace operation" in str(e) and "is at version 1; expected version 0" in str(e)


def test_invalid_view():
    e, t = both(lambda: ember.ones(2, 3).t().view(6), lambda: torch.ones(2, 3).t().view(6))
    assert_same_class(e, t)
    assert str(e).startswith("view(): view size is not compatible with input tensor's size and stride")


def test_bad_input_leaves_tensors_untouched():
    a = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        a.add_(ember.ones(2, 3))
    assert a.tolist() == [1.0, 2.0, 3.0] and a._version == 0


def test_dispatch_trace_shows_autograd_then_cpu():
    code = ("import ember\n"
            "a = ember.ones(3, requires_grad=True)\nb = ember.ones(3, requires_grad=True)\n"
            "import sys; print('--- a * b', file=sys.stderr)\nc = a * b\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, EMBER_DISPATCH_TRACE="1"), timeout=60)
    assert proc.returncode == 0, proc.stderr
    hops = proc.stderr.split("--- a * b\n", 1)[1].splitlines()
    assert len(hops) == 2
    assert "mul.Tensor" in hops[0] and "keys=Autograd|CPU" in hops[0] and "-> Autograd (autograd_kernel)" in hops[0]
    assert "mul.Tensor" in hops[1] and "keys=CPU" in hops[1] and "-> CPU (cpu kernel)" in hops[1]


def test_integer_division_by_zero():
    e, t = both(lambda: ember.tensor([1, 2]) // 0, lambda: torch.tensor([1, 2]) // 0)
    assert_same_class(e, t)
    assert "ZeroDivisionError" in str(e) and "div" in str(e)
    assert (ember.tensor([1.0]) // 0).tolist() == [float("inf")]


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_integer_fmod_remainder_by_zero(name):
    e, t = both(lambda: getattr(ember, name)(ember.tensor([1, 2]), ember.tensor([1, 0])),
                lambda: getattr(torch, name)(torch.tensor([1, 2]), torch.tensor([1, 0])))
    assert_same_class(e, t)
    assert "ZeroDivisionError" in str(e) and name in str(e)
    e, t = both(lambda: ember.tensor([3]) % 0, lambda: torch.tensor([3]) % 0)
    assert_same_class(e, t)


def test_integer_overflow_in_fill_and_numbers_that_wrap():
    e, t = both(lambda: ember.full((1,), 300, dtype=ember.int8), lambda: torch.full((1,), 300, dtype=torch.int8))
    assert_same_class(e, t)
    assert "value cannot be converted to type int8_t without overflow" in str(e)
    assert ember.tensor([-1], dtype=ember.uint8).tolist() == torch.tensor([-1], dtype=torch.uint8).tolist()
    assert (ember.tensor([1], dtype=ember.int8) + 300).tolist() == (torch.tensor([1], dtype=torch.int8) + 300).tolist()


RAGGED = [([[1, 2], [3]], "expected sequence of length 2 at dim 1 (got 1)"),
          ([[[1], [2]], [[3], [4, 5]]], "expected sequence of length 1 at dim 2 (got 2)"),
          ([[1, 2], [3, 4, 5]], "expected sequence of length 2 at dim 1 (got 3)"),
          ([[1, 2], 3], "expected a sequence at dim 1, got int"),
          ([1, [2]], "expected a number at dim 1, got a sequence (list)")]


@pytest.mark.parametrize("data,message", RAGGED, ids=[str(d) for d, _ in RAGGED])
def test_ragged_data_raises_torchs_class(data, message):
    e, t = both(lambda: ember.tensor(data), lambda: torch.tensor(data))
    assert_same_class(e, t)
    assert str(e) == f"tensor(): {message}"
    if isinstance(t, ValueError):
        assert str(e) == f"tensor(): {t}"        # torch's own words for a row of the wrong length


def test_float_alpha_for_integers():
    a, ta = ember.ones(2, 2, dtype=ember.int64), torch.ones(2, 2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=r"addmm\(\): For integral input tensors, argument alpha"):
        ember.addmm(a, a, a, alpha=1.5)


def test_numpy_integers_as_dims_and_sizes():
    import numpy as np

    x = ember.ones(2, 3)
    assert x.sum(np.int64(0)).tolist() == [2.0, 2.0, 2.0]
    assert tuple(ember.zeros(np.int64(2), 3).shape) == (2, 3)
    assert tuple(x.transpose(np.int64(0), 1).shape) == (3, 2)
    with pytest.raises(TypeError, match=r"sum\(\): argument 'dim' \(position 1\) must be tuple of ints, not float"):
        x.sum(1.5)


@pytest.mark.parametrize("write", [lambda m, t: t.add_(1), lambda m, t: t.mul_(m.ones(2, 3)),
                                   lambda m, t: t.copy_(m.zeros(2, 3))])
def test_writing_into_an_expanded_tensor_is_refused(write):
    e, t = both(lambda: write(ember, ember.ones(3).expand(2, 3)), lambda: write(torch, torch.ones(3).expand(2, 3)))
    assert_same_class(e, t)
    assert "more than one element of the written-to tensor refers to a single memory location" in str(e)
    assert ember.ones(3).expand(2, 3).fill_(2).tolist() == [[2.0] * 3] * 2      # fill_ is allowed, as in torch
