"""Calls a differential fuzzer against PyTorch found leaking internal errors or differing from torch, each kept
as a regression test: the same result, or an error of the same builtin class (and torch's message)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

LIBS = (ember, torch)


def _outcome(call):
    try:
        return "value", np.asarray(call().tolist())
    except Exception as exc:                     # noqa: BLE001 - the class is what is compared
        builtin = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")
        return builtin, str(exc)


def _same(call) -> None:
    ours, theirs = _outcome(lambda: call(ember)), _outcome(lambda: call(torch))
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "value":
        np.testing.assert_allclose(ours[1], theirs[1])


@pytest.mark.parametrize("p", [0, 1, 2, 3, float("inf"), -float("inf"), 0.5])
def test_normalize_any_p(p):
    _same(lambda m: m.nn.functional.normalize(m.tensor([[1.0, 2.0], [0.0, 3.0], [0.0, 0.0]]), p=p))


def test_normalize_of_integers_is_refused_as_torch_refuses_it():
    _same(lambda m: m.nn.functional.normalize(m.tensor([1, 2]), dim=0))


@pytest.mark.parametrize("index", [[], [0], [0, 0], [1]])
def test_index_select_of_a_0d_tensor(index):
    _same(lambda m: m.index_select(m.tensor(5.0), 0, m.tensor(index, dtype=m.int64)))
    if len(index) != 1:
        with pytest.raises(RuntimeError, match=r"Index to scalar can have only 1 value, got \d+ value"):
            ember.index_select(ember.tensor(5.0), 0, ember.tensor(index, dtype=ember.int64))


@pytest.mark.parametrize("data", ["abc", b"ab", ["a", "b"], [1, "a"], [[1, 2], [3, "x"]]], ids=repr)
@pytest.mark.parametrize("dtype", [None, "int32", "bool", "float32"])
def test_tensor_of_text_is_refused_as_torch_refuses_it(data, dtype):
    _same(lambda m: m.tensor(data, dtype=None if dtype is None else getattr(m, dtype)))


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4), (2, 3, 0)])
def test_batch_norm_of_an_empty_batch_keeps_the_running_statistics(shape):
    results = []
    for m in LIBS:
        running_mean, running_var = m.zeros(3), m.ones(3)
        weight, bias = m.full((3,), 2.0, requires_grad=True), m.ones(3, requires_grad=True)
        out = m.nn.functional.batch_norm(m.empty(*shape), running_mean, running_var, weight, bias, training=True)
        out.sum().backward()
        results.append([tuple(out.shape), running_mean.tolist(), running_var.tolist(), weight.grad.tolist(),
                        bias.grad.tolist()])
    assert results[0] == results[1]


OVERLOADS = {   # calls torch accepts that ember refused or read differently
    "all over dim=()": lambda m: m.all(m.tensor([[True, False]]), dim=()),
    "any over dim=[]": lambda m: m.any(m.tensor([[1.0, 0.0]]), dim=[]),
    "all over dim=[] of uint8, keepdim": lambda m: m.all(m.tensor([[1, 0]], dtype=m.uint8), dim=[], keepdim=True),
    "Tensor.any(dim=())": lambda m: m.tensor([[0, 2]]).any(dim=()),
    "all over dim=None": lambda m: m.all(m.tensor([[True, False]]), dim=None),
    "roll with dims=None": lambda m: m.roll(m.arange(6).reshape(2, 3), 1, None),
    "Tensor.roll with dims=None": lambda m: m.arange(6).reshape(2, 3).roll(2, None),
    "flip with dims=None": lambda m: m.flip(m.arange(6).reshape(2, 3), None),     # no default: refused by both
    "where with a uint8 condition": lambda m: m.where(m.tensor([[2, 0]], dtype=m.uint8), m.ones(2, 2), -m.ones(2)),
    "where with an int64 condition": lambda m: m.where(m.tensor([1, 0]), m.ones(2), m.zeros(2)),   # refused by both
}


@pytest.mark.parametrize("p", [-2, -1, -0.5, -float("inf")])
@pytest.mark.parametrize("dim", [None, 1])
def test_norm_of_a_negative_order(p, dim):
    """torch's vector norm of a negative order: (sum |x|^p)^(1/p) (a zero makes it 0), its gradient, and its
    error on an empty reduction."""
    values = [[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]]
    kw = {} if dim is None else {"dim": dim}
    _same(lambda m: m.norm(m.tensor(values), p, **kw))
    _same(lambda m: m.norm(m.tensor([[3.0, 0.0]]), p, **kw))
    _same(lambda m: m.norm(m.zeros(2, 0), p, **kw))
    grads = []
    for m in (ember, torch):
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        m.norm(x, p, **kw).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)


@pytest.mark.parametrize("case", sorted(OVERLOADS))
@pytest.mark.filterwarnings("ignore:where received a uint8 condition")
def test_overloads_and_defaults_as_torch_reads_them(case):
    _same(OVERLOADS[case])


def test_where_with_a_uint8_condition_warns_as_torch_does():
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        ember.where(ember.tensor([1, 0], dtype=ember.uint8), ember.ones(2), ember.zeros(2))


def test_all_over_no_dims_on_meta_keeps_the_shape():
    assert ember.all(ember.ones(2, 3, device="meta"), dim=()).shape == (2, 3)


CHECKS = {   # calls torch refuses that ember used to accept
    "roll of a 0-d tensor over dims (0,)": lambda m: m.roll(m.tensor(3.0), 1, (0,)),
    "flatten with start_dim after end_dim": lambda m: m.flatten(m.zeros(2, 3, 4), 2, 1),
    "add with alpha=True for floats": lambda m: m.add(m.ones(2), m.ones(2), alpha=True),
    "ones() with no size": lambda m: m.ones(),
    "randn() with no size": lambda m: m.randn(),
    "zeros() with no size": lambda m: m.zeros(),
    "repeat() with no repeats": lambda m: m.ones(2).repeat(),
    "reshape() with no shape": lambda m: m.ones(2).reshape(),
    "tensor(2**63)": lambda m: m.tensor(2**63),
    "tensor([1, 2**63])": lambda m: m.tensor([1, 2**63]),
    "tensor(-2**63 - 1)": lambda m: m.tensor(-2**63 - 1),
    "tensor(2**63, dtype=uint8)": lambda m: m.tensor(2**63, dtype=m.uint8),
    "topk of bools": lambda m: m.topk(m.tensor([True, False, True]), 2),
    "addmm with a 3-d input": lambda m: m.addmm(m.zeros(2, 2, 2), m.zeros(2, 2), m.zeros(2, 2)),
    "addmm with an input wider than the product": lambda m: m.addmm(m.zeros(2, 3), m.zeros(2, 2), m.zeros(2, 2)),
}
ALLOWED = {   # and their neighbours torch accepts
    "add with alpha=True for bools": lambda m: m.add(m.ones(2, dtype=m.bool), m.ones(2, dtype=m.bool), alpha=True),
    "ones(())": lambda m: m.ones(()),
    "tensor(2**63, dtype=float32)": lambda m: m.tensor(2**63, dtype=m.float32),
    "tensor(-2**63)": lambda m: m.tensor(-2**63),
    "roll of a 0-d tensor without dims": lambda m: m.roll(m.tensor(3.0), 1),
    "topk of ints": lambda m: m.topk(m.tensor([3, 1, 2]), 2).values,
    "addmm with a broadcast row": lambda m: m.addmm(m.ones(2), m.ones(3, 2), m.ones(2, 2)),
    "addmm with a 0-d input": lambda m: m.addmm(m.tensor(1.5), m.ones(3, 2), m.ones(2, 2)),
}


@pytest.mark.parametrize("case", sorted(CHECKS) + sorted(ALLOWED))
def test_torchs_argument_checks(case):
    _same(CHECKS.get(case) or ALLOWED[case])
    if case in CHECKS:
        with pytest.raises((TypeError, ValueError, RuntimeError, IndexError)):
            CHECKS[case](ember)
