"""Gradients on the device under test.

  test_grad          every differentiable op, float32 and float64: gradients of every leaf vs
                     torch's on cpu, for a random grad_output, broadcast and non-contiguous
                     inputs; the forward values and requires_grad of the outputs too.
                     meta: backward runs, and gradients have torch's (meta) shapes and dtypes
                     (float32 samples).
  test_gradcheck     ember.autograd.gradcheck in float64 (finite differences check the
                     formulas themselves); the op runs on the device, the perturbed leaves live
                     on cpu and reach it through a differentiable .to(device)
  test_second_order  grad of grad (create_graph=True) for pow, mul, tanh, exp, sigmoid vs torch
  test_gradgradcheck finite differences of those first derivatives
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from . import op_db
from .compare import assert_same, calls, dtype_str, flat, host, sample_where
from .op_db import GRAD_DTYPES, OP_DB, make, materialize
from .plugin import NUMPY_WARNINGS, failure_reason, known_failure, require_data
from .tolerances import (GRAD_TOL, GRADCHECK_ATOL, GRADCHECK_EPS, GRADCHECK_MAX_NUMEL, GRADCHECK_RTOL,
                         SECOND_ORDER_TOL)

pytestmark = NUMPY_WARNINGS

GRAD_CASES = [pytest.param(op, d, id=f"{op.name}-{d}") for op in OP_DB if op.grad for d in GRAD_DTYPES
              if d in op.dtypes]
_LOWEST = {"bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}


def _grad_outputs(outs, rng):
    return [make(rng, tuple(o.shape), dtype_str(o.dtype), domain="any") for o in outs]


def _diff_outputs(e_out, t_out, where):
    """The (ember, torch) output pairs torch differentiates; requires_grad must agree."""
    pairs = []
    for k, (e, t) in enumerate(zip(flat(e_out), flat(t_out))):
        if not isinstance(t, torch.Tensor):
            continue
        assert e.requires_grad == t.requires_grad, \
            f"{where} output {k}: requires_grad {e.requires_grad} != torch {t.requires_grad}"
        if t.requires_grad:
            pairs.append((e, t))
    return pairs


@pytest.mark.parametrize("op,dtype", GRAD_CASES)
def test_grad(op, dtype, ember_device):
    with known_failure(failure_reason(op, "grad", dtype, ember_device)):
        if ember_device.is_meta:
            if dtype != "float32":
                pytest.skip("meta has no gradient values to compare; their shapes and dtypes are checked once, "
                            "at float32")
            _check_meta_grads(op, dtype)
        else:
            _check_grads(op, dtype, ember_device)


def _check_grads(op, dtype, device):
    rng = op.rng(dtype, "grad")
    n = 0
    for s in op.samples(op.rng(dtype), dtype):
        if not s.has_grad:
            continue
        where = sample_where(op, dtype, s) + " gradient"
        call_e, call_t = calls(op, s)
        t_args, t_kw, t_leaves = materialize(torch, s, requires_grad=True, inplace=op.inplace)
        e_args, e_kw, e_leaves = materialize(ember, s, device.name, requires_grad=True, inplace=op.inplace)
        t_out = call_t(torch, *t_args, **t_kw)
        e_out = call_e(ember, *e_args, **e_kw)
        assert_same(e_out, t_out, op.tol, where + " (forward)", device.type)
        pairs = _diff_outputs(e_out, t_out, where)
        if not pairs:          # e.g. a cast to an integer dtype: nothing to differentiate
            continue
        n += 1
        gos = _grad_outputs([t for _, t in pairs], rng)
        torch.autograd.backward([t for _, t in pairs], [op_db.to_tensor(torch, g) for g in gos])
        ember.autograd.backward([e for e, _ in pairs], [op_db.to_tensor(ember, g, device.name) for g in gos])
        lowest = min((t.dtype for t in s.tensors() if op_db.is_float(t.dtype)), key=_LOWEST.__getitem__)
        tol = {**GRAD_TOL, **op.grad_tol}
        if lowest in ("float16", "bfloat16"):          # the gradients were computed in low precision
            tol = {d: tol[lowest] for d in tol}
        for k, (el, tl) in enumerate(zip(e_leaves, t_leaves)):
            w = f"{where} of leaf {k} {tuple(tl.shape)}"
            if k in op.torch_grad_wrong:
                assert el.grad is not None and tuple(el.grad.shape) == tuple(tl.shape), w
                continue
            if tl.grad is None:      # no gradient and a zero gradient are the same
                assert el.grad is None or not np.asarray(host(el.grad), np.float64).any(), f"{w}: torch has none"
                continue
            if el.grad is None:
                assert not tl.grad.any(), f"{w}: ember gave no gradient, torch {tl.grad}"
                continue
            assert_same(el.grad, tl.grad, tol, w, device.type)
    assert n, f"{op.name}[{dtype}]: no differentiable samples"


def _check_meta_grads(op, dtype):
    """Forward and backward on meta: the gradients' shapes and dtypes are torch's."""
    n = 0
    for s in op.samples(op.rng(dtype), dtype):
        if not s.has_grad or not s.meta:
            continue
        where = sample_where(op, dtype, s) + " gradient on meta"
        call_e, call_t = calls(op, s)
        t_args, t_kw, t_leaves = materialize(torch, s, "meta", requires_grad=True, inplace=op.inplace)
        e_args, e_kw, e_leaves = materialize(ember, s, "meta", requires_grad=True, inplace=op.inplace)
        pairs = _diff_outputs(call_e(ember, *e_args, **e_kw), call_t(torch, *t_args, **t_kw), where)
        if not pairs:
            continue
        n += 1
        torch.autograd.backward([t for _, t in pairs], [torch.ones_like(t) for _, t in pairs])
        ember.autograd.backward([e for e, _ in pairs], [ember.ones_like(e) for e, _ in pairs])
        for k, (el, tl) in enumerate(zip(e_leaves, t_leaves)):
            w = f"{where} of leaf {k} {tuple(tl.shape)}"
            if el.grad is None or tl.grad is None:     # no gradient and a zero gradient are the same (and
                continue                               # meta has no values to tell zeros: a real device does)
            assert el.grad.device.type == "meta", f"{w}: gradient on {el.grad.device}"
            assert tuple(el.grad.shape) == tuple(tl.grad.shape), \
                f"{w}: gradient shape {tuple(el.grad.shape)} != torch {tuple(tl.grad.shape)}"
            assert dtype_str(el.grad.dtype) == dtype_str(tl.grad.dtype), \
                f"{w}: gradient dtype {el.grad.dtype} != torch {tl.grad.dtype}"
    if not n and not any(s.meta for s in op.samples(op.rng(dtype), dtype)):
        pytest.skip("every sample has a data-dependent output shape, which meta tensors cannot compute")
    assert n, f"{op.name}[{dtype}]: no differentiable samples on meta"


# --------------------------------------------------------------------------- gradcheck
def _on(device, out):
    """`out` (a tensor or a tuple of them) moved to `device`, differentiably."""
    if isinstance(out, ember.Tensor):
        return out.to(device)
    if isinstance(out, tuple):
        return tuple(_on(device, o) for o in out)
    return out


GRADCHECK_CASES = [pytest.param(op, id=op.name) for op in OP_DB if op.grad and "float64" in op.dtypes]


@pytest.mark.parametrize("op", GRADCHECK_CASES)
def test_gradcheck(op, ember_device):
    require_data(ember_device, "finite differences", "test_grad checks the gradients' shapes and dtypes")
    dev = ember_device.name
    samples = [s for s in op.samples(op.rng("float64"), "float64") if s.has_grad and s.gradcheck
               and s.numel() <= GRADCHECK_MAX_NUMEL
               and all(t.dtype in ("float64", "bool", "int64") for t in s.tensors())  # finite differences need float64
               and not any(isinstance(v, op_db.DT) and v.name != "float64" for v in s.kwargs.values())]
    assert samples, f"{op.name}: no gradcheck samples"
    with known_failure(failure_reason(op, "gradcheck", None, ember_device)):
        for s in samples:
            call = s.fn or op.call
            _, _, leaves = materialize(ember, s, requires_grad=True, inplace=op.inplace)   # on cpu: perturbed in place

            def f(*ls, s=s, call=call):
                args, kw, _ = materialize(ember, s, dev, requires_grad=True, inplace=op.inplace,
                                          leaves_in=[x.to(dev) for x in ls])
                return _on("cpu", call(ember, *args, **kw))

            assert ember.autograd.gradcheck(f, tuple(leaves), eps=GRADCHECK_EPS, atol=GRADCHECK_ATOL,
                                            rtol=GRADCHECK_RTOL), f"{op.name} sample '{s.desc}': gradcheck failed"


def test_gradcheck_detects_a_wrong_formula(ember_device):
    require_data(ember_device, "finite differences")
    dev = ember_device.name

    class WrongSquare(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x * 3          # should be 2

    x = ember.tensor(np.array([0.5, 1.5]), requires_grad=True)
    f = lambda x: WrongSquare.apply(x.to(dev)).cpu()       # noqa: E731
    assert not ember.autograd.gradcheck(f, (x,), raise_exception=False)
    with pytest.raises(RuntimeError):
        ember.autograd.gradcheck(f, (x,))


# --------------------------------------------------------------------------- second order
_SECOND_ORDER = {
    "pow": lambda m, x, y: m.pow(x, y),
    "pow (scalar exponent)": lambda m, x, y: m.pow(x, 3) * y,
    "mul": lambda m, x, y: m.mul(x, y),
    "mul (same input)": lambda m, x, y: m.mul(x, x) * y,
    "tanh": lambda m, x, y: m.tanh(x) * y,
    "exp": lambda m, x, y: m.exp(x) * y,
    "sigmoid": lambda m, x, y: m.sigmoid(x) * y,
}


@pytest.mark.parametrize("name", list(_SECOND_ORDER))
@pytest.mark.parametrize("dtype", GRAD_DTYPES)
def test_second_order(name, dtype, ember_device):
    require_data(ember_device, "second-order gradient values")
    f = _SECOND_ORDER[name]
    rng = np.random.default_rng(abs(hash((name, dtype))) % 2 ** 32)
    xs = make(rng, (2, 3), dtype, domain="positive")
    ys = make(rng, (3,), dtype, domain="positive")         # broadcast second input
    go = make(rng, (2, 3), dtype)
    v = [make(rng, (2, 3), dtype), make(rng, (3,), dtype)]
    results = {}
    for m, dev in ((ember, ember_device.name), (torch, "cpu")):
        x = op_db.to_tensor(m, xs, dev, requires_grad=True)
        y = op_db.to_tensor(m, ys, dev, requires_grad=True)
        out = f(m, x, y)
        gx, gy = m.autograd.grad(out, (x, y), op_db.to_tensor(m, go, dev), create_graph=True)
        assert gx.requires_grad and gy.requires_grad
        s = (gx * op_db.to_tensor(m, v[0], dev)).sum() + (gy * op_db.to_tensor(m, v[1], dev)).sum()
        ggx, ggy = m.autograd.grad(s, (x, y))
        results[m.__name__] = (gx, gy, ggx, ggy)
    for k, (e, t) in enumerate(zip(results["ember"], results["torch"])):
        assert_same(e, t, SECOND_ORDER_TOL, f"{name}[{dtype}] {['dx', 'dy', 'd2x', 'd2y'][k]}", ember_device.type)


@pytest.mark.parametrize("name", list(_SECOND_ORDER))
def test_gradgradcheck(name, ember_device):
    require_data(ember_device, "finite differences")
    f = _SECOND_ORDER[name]
    dev = ember_device.name
    rng = np.random.default_rng(7)
    x = ember.tensor(make(rng, (2, 2), "float64", domain="positive"), requires_grad=True)
    y = ember.tensor(make(rng, (2,), "float64", domain="positive"), requires_grad=True)
    go = ember.tensor(make(rng, (2, 2), "float64"), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: f(ember, a.to(dev), b.to(dev)).cpu(), (x, y), (go,),
                                        eps=GRADCHECK_EPS, atol=GRADCHECK_ATOL, rtol=GRADCHECK_RTOL)
