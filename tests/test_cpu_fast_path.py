"""The cpu plugin's fast path (backends/cpu/fast_path.py) answers exactly what the full path would,
against torch, and leaves every call it cannot answer to the full path."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import ALL_OPS
from ember_cpu.fast_path import fast_entry

OPS = {"add.Tensor": torch.add, "sub.Tensor": torch.sub, "mul.Tensor": torch.mul}
DTYPES = ["float32", "float64", "int32", "int64"]


def _entry(name):
    """The op's fast entry over a full path that records being taken."""
    taken = []

    def body(args):
        taken.append(args)
        return "full path"
    from ember.frontend.tensor import Tensor, make_tensor

    op = ALL_OPS[name]
    cpu = ember.device("cpu")
    key = ember.ones(1)._keys
    return fast_entry(op, body, Tensor, make_tensor, cpu, key), taken


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_two_tensors_alike_take_one_ufunc_call_with_torchs_result(name, dtype):
    run, taken = _entry(name)
    rng = np.random.default_rng(0)
    for shape in ((5,), (3, 4), (2, 3, 4)):
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        y = (rng.standard_normal(shape) * 10).astype(dtype)
        a, b = ember.from_numpy(x.copy()), ember.from_numpy(y.copy())
        args = (a, b, 1) if ALL_OPS[name].alpha_arg is not None else (a, b)
        out = run(args)
        want = OPS[name](torch.from_numpy(x), torch.from_numpy(y))
        assert out.dtype is getattr(ember, dtype) and tuple(out.stride()) == want.stride()
        np.testing.assert_array_equal(out.numpy(), want.numpy())
    assert taken == []


def test_every_other_call_takes_the_full_path():
    run, taken = _entry("add.Tensor")
    f32, f16 = ember.ones(2, 3), ember.ones(2, 3, dtype=ember.float16)
    others = [(f32, f32, 2),                                   # alpha other than 1
              (f32, f32, 1.0),                                  # a float alpha
              (f32, f32.double(), 1),                           # dtypes differ
              (f16, f16, 1),                                    # a dtype numpy's ufunc would not match
              (f32, ember.ones(3), 1),                          # broadcasting
              (f32.t(), f32.t(), 1),                            # not C-contiguous
              (ember.ones(()), ember.ones(()), 1),              # 0-d
              (ember.arange(3), 1.5, 1),                        # an integer tensor and a float number
              (f32, True, 1),                                   # a bool number
              (f32, 2 ** 60, 1),                                # an int a float64 cannot hold exactly
              (f32.t(), 1.0, 1)]                                # not C-contiguous
    for args in others:
        assert run(args) == "full path"
    assert len(taken) == len(others)
    mul, _ = _entry("mul.Tensor")
    assert _entry("div.Tensor_mode")[0] is None and _entry("addmm")[0] is None and mul is not None
    assert _entry("add_.Tensor")[0] is not None         # in place: tests/test_cpu_inplace_fast_path.py


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_a_float_tensor_and_a_number_take_one_ufunc_call_with_torchs_result(name, dtype):
    run, taken = _entry(name)
    x = (np.random.default_rng(1).standard_normal((3, 4)) * 10).astype(dtype)
    for number in (0.1, -3, 1e30, float("inf")):
        args = (ember.from_numpy(x.copy()), number) + ((1,) if ALL_OPS[name].alpha_arg is not None else ())
        out = run(args)
        want = OPS[name](torch.from_numpy(x), number)
        assert out.dtype is getattr(ember, dtype) and tuple(out.stride()) == want.stride()
        np.testing.assert_array_equal(out.numpy(), want.numpy())
    assert taken == []
