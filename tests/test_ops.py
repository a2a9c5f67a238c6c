"""Differential operator tests against PyTorch (torch==2.13.0, CPU build: the oracle).

Driven by tests/op_db.py, one OpInfo per registered op:

  test_values        cpu: values, dtype and shape of every sample, per dtype; in-place ops return
                     and modify self; out-of-place ops leave their inputs untouched
  test_meta          meta device: shape, dtype, strides (and storage offset of views) vs torch's meta
  test_grad          gradients of every differentiable op vs torch (float32, float64), random
                     grad_output, broadcast and non-contiguous inputs
  test_gradcheck     ember.autograd.gradcheck in float64 for every differentiable op
  test_second_order  grad of grad (create_graph=True) for pow, mul, tanh, exp, sigmoid vs torch
  test_errors        error inputs: torch's exception class, the op name in ember's message
  test_random_*      random ops: shape, dtype, range, statistics and determinism under manual_seed
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import ALL_OPS
from ember.errors import EmberError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_db  # noqa: E402
from op_db import (DEFAULT_TOL, EXCLUDED, GRAD_DTYPES, GRAD_TOL, OP_DB, OPS_BY_NAME, Sample, T, make,  # noqa: E402
                   materialize)

# numpy's floating-point warnings (sqrt of a negative, ...): PyTorch is silent, and the cpu
# plugin filters them, but pytest resets warning filters per test
pytestmark = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]

torch.set_num_threads(1)
torch.manual_seed(0)

# Known ember bugs outside the files this suite may fix; each is an xfail(strict=True) so the
# suite stays green and fails loudly once the bug is fixed. {(op, test, dtype or None): reason}
XFAIL: dict[tuple[str, str, str | None], str] = {
}


# ----------------------------------------------------------------------------- comparison
def dtype_str(dt) -> str:
    """'float32' for ember.float32 and torch.float32 alike."""
    return str(dt).split(".")[-1]


def ember_to_torch(t):
    arr = np.asarray(t.detach().numpy())
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(arr, copy=True))


def _flat(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def assert_same(e_out, t_out, tol: dict | None = None, where: str = ""):
    """Values, dtype and shape of ember outputs equal torch's (tolerances by dtype)."""
    e_list, t_list = _flat(e_out), _flat(t_out)
    assert len(e_list) == len(t_list), f"{where}: {len(e_list)} outputs, torch gives {len(t_list)}"
    if isinstance(t_out, tuple) and hasattr(t_out, "_fields"):
        assert getattr(e_out, "_fields", None) == t_out._fields, f"{where}: named fields {t_out._fields}"
    for k, (e, t) in enumerate(zip(e_list, t_list)):
        w = f"{where} output {k}"
        if not isinstance(t, torch.Tensor):
            assert not isinstance(e, ember.Tensor) and e == t, f"{w}: {e!r} != {t!r}"
            continue
        assert isinstance(e, ember.Tensor), f"{w}: expected a Tensor, got {type(e).__name__}"
        assert dtype_str(e.dtype) == dtype_str(t.dtype), f"{w}: dtype {e.dtype} != torch {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"{w}: shape {tuple(e.shape)} != torch {tuple(t.shape)}"
        assert e.device.type == t.device.type, f"{w}: device {e.device} != torch {t.device}"
        if t.device.type == "meta":
            continue
        rtol, atol = (tol or {}).get(dtype_str(t.dtype), DEFAULT_TOL.get(dtype_str(t.dtype), (0, 0)))
        torch.testing.assert_close(ember_to_torch(e), t.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                   check_stride=False, msg=lambda m: f"{w}: {m}")


def assert_same_meta(e_out, t_out, where: str, view: bool, t_cpu_out=None):
    """Shape, dtype and strides of ember's meta outputs equal torch's meta outputs.

    Where torch's own meta and cpu layouts disagree (its meta kernels of float floor
    division are Python decompositions that return contiguous outputs where TensorIterator
    keeps the input layout), ember may match either: its meta device predicts real devices.
    """
    e_list, t_list = _flat(e_out), _flat(t_out)
    c_list = _flat(t_cpu_out) if t_cpu_out is not None else [None] * len(t_list)
    assert len(e_list) == len(t_list), f"{where}: {len(e_list)} outputs, torch gives {len(t_list)}"
    for k, (e, t, c) in enumerate(zip(e_list, t_list, c_list)):
        w = f"{where} output {k}"
        assert isinstance(e, ember.Tensor), f"{w}: expected a Tensor, got {type(e).__name__}"
        assert e.device.type == "meta", f"{w}: device {e.device}, expected meta"
        assert dtype_str(e.dtype) == dtype_str(t.dtype), f"{w}: dtype {e.dtype} != torch {t.dtype}"
        assert tuple(e.shape) == tuple(t.shape), f"{w}: shape {tuple(e.shape)} != torch {tuple(t.shape)}"
        if t.numel() > 0:      # strides of empty tensors are unobservable (torch is not consistent)
            if c is not None and tuple(c.stride()) != tuple(t.stride()) and tuple(e.stride()) == tuple(c.stride()):
                continue
            assert tuple(e.stride()) == tuple(t.stride()), \
                f"{w}: strides {tuple(e.stride())} != torch {tuple(t.stride())} (shape {tuple(t.shape)})"
            if view:
                assert e.storage_offset() == t.storage_offset(), \
                    f"{w}: storage offset {e.storage_offset()} != torch {t.storage_offset()}"


def _sample_where(op, dtype, s: Sample) -> str:
    return f"{op.name}[{dtype}] sample '{s.desc}'"


def _calls(op, s: Sample):
    return (s.fn or op.call), (s.fn or op.tcall())


def _params(kind: str, cases):
    out = []
    for op, dtype in cases:
        reason = XFAIL.get((op.name, kind, dtype)) or XFAIL.get((op.name, kind, None)) or \
            op.xfail.get((kind, dtype)) or op.xfail.get((kind, None))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(op, dtype, marks=marks, id=f"{op.name}-{dtype}"))
    return out


VALUE_CASES = [(op, d) for op in OP_DB for d in op.dtypes]
GRAD_CASES = [(op, d) for op in OP_DB if op.grad for d in GRAD_DTYPES if d in op.dtypes]


# ------------------------------------------------------------------------------- coverage
def test_every_registered_op_has_an_entry():
    registered = set(ALL_OPS)
    missing = sorted(registered - set(OPS_BY_NAME) - set(EXCLUDED))
    stale = sorted((set(OPS_BY_NAME) | set(EXCLUDED)) - registered)
    assert not missing, f"ops without an OpInfo or a justified exclusion: {missing}"
    assert not stale, f"OpInfos of ops that are not registered: {stale}"
    assert not set(OPS_BY_NAME) & set(EXCLUDED)
    assert all(isinstance(v, str) and len(v) > 20 for v in EXCLUDED.values()), "exclusions need a justification"


def test_differentiable_ops_are_marked():
    for name, op in ALL_OPS.items():
        if op.differentiable and name in OPS_BY_NAME:
            assert OPS_BY_NAME[name].grad, f"{name} has backward formulas but its OpInfo says grad=False"
    for info in OP_DB:
        if info.grad:
            assert any(d in info.dtypes for d in GRAD_DTYPES), info.name


def test_every_op_has_samples_and_errors():
    no_errors = {"contiguous": "a method only; every argument is a tensor that cannot be wrong"}
    for info in OP_DB:
        for d in info.dtypes:
            assert info.samples(info.rng(d), d), f"{info.name}[{d}] has no samples"
        if info.name not in no_errors:
            assert info.errors is not None and info.errors(np.random.default_rng(0)), f"{info.name}: no error inputs"


def test_samples_cover_the_required_kinds():
    """Pointwise ops see broadcasting, 0-d, empty, non-contiguous and mixed-dtype inputs."""
    for info in OP_DB:
        if ALL_OPS[info.name].family not in ("pointwise", "unary_float", "comparison") or info.inplace:
            continue
        samples = info.samples(info.rng("float32"), "float32")
        shapes = [t.values.shape for s in samples for t in s.tensors()]
        assert any(len(sh) == 0 for sh in shapes), f"{info.name}: no 0-d sample"
        assert any(0 in sh for sh in shapes), f"{info.name}: no empty sample"
        assert any(t.layout != "c" for s in samples for t in s.tensors()), f"{info.name}: no non-contiguous sample"
        if len(ALL_OPS[info.name].tensor_args) > 1:
            assert any(len({t.values.shape for t in s.tensors()}) > 1 for s in samples), f"{info.name}: no broadcast"
            assert any(len({t.dtype for t in s.tensors()}) > 1 for s in samples), f"{info.name}: no mixed dtypes"
            if info.name not in ("maximum", "minimum"):     # torch takes no Python scalars there
                assert any(isinstance(a, (int, float)) for s in samples for a in s.args), f"{info.name}: no scalars"


# ------------------------------------------------------------------------------ cpu values
def _method_variant(op):
    """Tensor.<name> for an op called as module.<name>, when both frameworks have the method."""
    name = getattr(op.call, "__name__", "")
    if op.torch_call is not None or "." in name or not hasattr(ember.Tensor, name) or not hasattr(torch.Tensor, name):
        return None
    if ALL_OPS[op.name].arg_names[0] != "self":     # where(condition, self, other): self is not first
        return None
    return op_db.method(name)


@pytest.mark.parametrize("op,dtype", _params("values", VALUE_CASES))
def test_values(op, dtype):
    samples = op.samples(op.rng(dtype), dtype)
    as_method = _method_variant(op)
    if as_method is not None:      # the Tensor method variant, on the first samples
        for s in [s for s in samples if s.fn is None and isinstance(s.args[0], T)][:3]:
            t_args, t_kw, _ = materialize(torch, s, "cpu")
            e_args, e_kw, _ = materialize(ember, s, "cpu")
            assert_same(as_method(ember, *e_args, **e_kw), as_method(torch, *t_args, **t_kw), op.tol,
                        _sample_where(op, dtype, s) + " as a Tensor method")
    for s in samples:
        where = _sample_where(op, dtype, s)
        call_e, call_t = _calls(op, s)
        t_args, t_kw, _ = materialize(torch, s, "cpu", inplace=op.inplace)
        e_args, e_kw, _ = materialize(ember, s, "cpu", inplace=op.inplace)
        t_out = call_t(torch, *t_args, **t_kw)
        e_out = call_e(ember, *e_args, **e_kw)
        if op.kind == "values":
            assert_same(e_out, t_out, op.tol, where)
        else:                       # empty / random: shape and dtype only
            for e, t in zip(_flat(e_out), _flat(t_out)):
                assert dtype_str(e.dtype) == dtype_str(t.dtype), f"{where}: dtype {e.dtype} != {t.dtype}"
                assert tuple(e.shape) == tuple(t.shape), f"{where}: shape {tuple(e.shape)} != {tuple(t.shape)}"
        if ALL_OPS[op.name].is_view:       # a view (or, for reshape/contiguous, maybe a copy) exactly when torch's is
            t_alias = t_out.untyped_storage().data_ptr() == t_args[0].untyped_storage().data_ptr()
            e_alias = e_out.untyped_storage() is e_args[0].untyped_storage()
            assert e_alias == t_alias, f"{where}: shares its input's storage: {e_alias}, torch: {t_alias}"
        if op.inplace:
            assert e_out is e_args[0], f"{where}: an in-place op must return self"
            if op.kind == "values":
                assert_same(e_args[0], t_args[0], op.tol, where + " (self after the op)")
        else:
            for a, t in zip(e_args, s.args):        # inputs are never modified
                if isinstance(t, T):
                    np.testing.assert_array_equal(np.asarray(a.numpy(), dtype=np.float64),
                                                  np.asarray(t.values, dtype=np.float64), err_msg=where + " input")


# ------------------------------------------------------------------------------- meta device
@pytest.mark.parametrize("op,dtype", _params("meta", VALUE_CASES))
def test_meta(op, dtype):
    view = ALL_OPS[op.name].is_view
    for s in op.samples(op.rng(dtype), dtype):
        if not s.meta:
            continue
        where = _sample_where(op, dtype, s) + " on meta"
        call_e, call_t = _calls(op, s)
        t_args, t_kw, _ = materialize(torch, s, "meta", inplace=op.inplace)
        e_args, e_kw, _ = materialize(ember, s, "meta", inplace=op.inplace)
        t_out = call_t(torch, *t_args, **t_kw)
        e_out = call_e(ember, *e_args, **e_kw)
        t_cpu = None
        if op.kind != "random" and not view:
            c_args, c_kw, _ = materialize(torch, s, "cpu", inplace=op.inplace)
            t_cpu = call_t(torch, *c_args, **c_kw)
        assert_same_meta(e_out, t_out, where, view, t_cpu)
        if op.inplace:
            assert e_out is e_args[0], f"{where}: an in-place op must return self"


# ------------------------------------------------------------------------------- gradients
def _grad_outputs(outs, rng):
    return [make(rng, tuple(o.shape), dtype_str(o.dtype), domain="any") for o in outs]


def _diff_outputs(e_out, t_out, where):
    """The (ember, torch) output pairs torch differentiates; requires_grad must agree."""
    pairs = []
    for k, (e, t) in enumerate(zip(_flat(e_out), _flat(t_out))):
        if not isinstance(t, torch.Tensor):
            continue
        assert e.requires_grad == t.requires_grad, \
            f"{where} output {k}: requires_grad {e.requires_grad} != torch {t.requires_grad}"
        if t.requires_grad:
            pairs.append((e, t))
    return pairs


@pytest.mark.parametrize("op,dtype", _params("grad", GRAD_CASES))
def test_grad(op, dtype):
    rng = op.rng(dtype, "grad")
    n = 0
    for s in op.samples(op.rng(dtype), dtype):
        if not s.has_grad:
            continue
        where = _sample_where(op, dtype, s) + " gradient"
        call_e, call_t = _calls(op, s)
        t_args, t_kw, t_leaves = materialize(torch, s, requires_grad=True, inplace=op.inplace)
        e_args, e_kw, e_leaves = materialize(ember, s, requires_grad=True, inplace=op.inplace)
        t_out = call_t(torch, *t_args, **t_kw)
        e_out = call_e(ember, *e_args, **e_kw)
        assert_same(e_out, t_out, op.tol, where + " (forward)")
        pairs = _diff_outputs(e_out, t_out, where)
        if not pairs:          # e.g. a cast to an integer dtype: nothing to differentiate
            continue
        n += 1
        gos = _grad_outputs([t for _, t in pairs], rng)
        torch.autograd.backward([t for _, t in pairs], [op_db.to_tensor(torch, g) for g in gos])
        ember.autograd.backward([e for e, _ in pairs], [op_db.to_tensor(ember, g) for g in gos])
        lowest = min((t.dtype for t in s.tensors() if op_db.is_float(t.dtype)),
                     key=lambda d: {"bfloat16": 0, "float16": 1, "float32": 2, "float64": 3}[d])
        tol = {**GRAD_TOL, "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), **op.grad_tol}
        if lowest in ("float16", "bfloat16"):          # the gradients were computed in low precision
            tol = {d: tol[lowest] for d in tol}
        for k, (el, tl) in enumerate(zip(e_leaves, t_leaves)):
            w = f"{where} of leaf {k} {tuple(tl.shape)}"
            if k in op.torch_grad_wrong:
                assert el.grad is not None and tuple(el.grad.shape) == tuple(tl.shape), w
                continue
            if tl.grad is None:      # no gradient and a zero gradient are the same
                assert el.grad is None or not np.asarray(el.grad.numpy(), np.float64).any(), f"{w}: torch has none"
                continue
            if el.grad is None:
                assert not tl.grad.any(), f"{w}: ember gave no gradient, torch {tl.grad}"
                continue
            assert_same(el.grad, tl.grad, tol, w)
    assert n, f"{op.name}[{dtype}]: no differentiable samples"


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name, marks=[pytest.mark.xfail(
    strict=True, reason=XFAIL.get((op.name, "gradcheck", None)) or op.xfail.get(("gradcheck", None)))]
    if (XFAIL.get((op.name, "gradcheck", None)) or op.xfail.get(("gradcheck", None))) else [])
    for op in OP_DB if op.grad and "float64" in op.dtypes])
def test_gradcheck(op):
    samples = [s for s in op.samples(op.rng("float64"), "float64") if s.has_grad and s.gradcheck and s.numel() <= 40
               and all(t.dtype in ("float64", "bool", "int64") for t in s.tensors())  # finite differences need float64
               and not any(isinstance(v, op_db.DT) and v.name != "float64" for v in s.kwargs.values())]
    assert samples, f"{op.name}: no gradcheck samples"
    for s in samples:
        call = s.fn or op.call
        _, _, leaves = materialize(ember, s, requires_grad=True, inplace=op.inplace)

        def f(*ls, s=s, call=call):
            args, kw, _ = materialize(ember, s, requires_grad=True, inplace=op.inplace, leaves_in=ls)
            return call(ember, *args, **kw)

        assert ember.autograd.gradcheck(f, tuple(leaves), eps=1e-6, atol=1e-5, rtol=1e-3), \
            f"{op.name} sample '{s.desc}': gradcheck failed"


def test_gradcheck_detects_a_wrong_formula():
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
    assert not ember.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError):
        ember.autograd.gradcheck(WrongSquare.apply, (x,))


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
def test_second_order(name, dtype):
    f = _SECOND_ORDER[name]
    rng = np.random.default_rng(abs(hash((name, dtype))) % 2 ** 32)
    xs = make(rng, (2, 3), dtype, domain="positive")
    ys = make(rng, (3,), dtype, domain="positive")         # broadcast second input
    go = make(rng, (2, 3), dtype)
    v = [make(rng, (2, 3), dtype), make(rng, (3,), dtype)]
    results = {}
    for m in (ember, torch):
        x = op_db.to_tensor(m, xs, requires_grad=True)
        y = op_db.to_tensor(m, ys, requires_grad=True)
        out = f(m, x, y)
        gx, gy = m.autograd.grad(out, (x, y), op_db.to_tensor(m, go), create_graph=True)
        assert gx.requires_grad and gy.requires_grad
        s = (gx * op_db.to_tensor(m, v[0])).sum() + (gy * op_db.to_tensor(m, v[1])).sum()
        ggx, ggy = m.autograd.grad(s, (x, y))
        results[m.__name__] = (gx, gy, ggx, ggy)
    tol = {**GRAD_TOL, "float32": (1e-4, 1e-4)}
    for k, (e, t) in enumerate(zip(results["ember"], results["torch"])):
        assert_same(e, t, tol, f"{name}[{dtype}] {['dx', 'dy', 'd2x', 'd2y'][k]}")


@pytest.mark.parametrize("name", list(_SECOND_ORDER))
def test_gradgradcheck(name):
    f = _SECOND_ORDER[name]
    rng = np.random.default_rng(7)
    x = ember.tensor(make(rng, (2, 2), "float64", domain="positive"), requires_grad=True)
    y = ember.tensor(make(rng, (2,), "float64", domain="positive"), requires_grad=True)
    go = ember.tensor(make(rng, (2, 2), "float64"), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a, b: f(ember, a, b), (x, y), (go,))


# ---------------------------------------------------------------------------------- errors
_BUILTIN = (NotImplementedError, IndexError, TypeError, ValueError, KeyError, RuntimeError)


def builtin_class(exc: BaseException) -> type:
    """The most specific built-in exception class `exc` is an instance of."""
    for cls in type(exc).__mro__:
        if cls in _BUILTIN:
            return cls
    return type(exc)


ERROR_CASES = [(op, i, err) for op in OP_DB if op.errors is not None
               for i, err in enumerate(op.errors(op.rng("errors")))]


def _error_params():
    out = []
    for op, i, err in ERROR_CASES:
        reason = XFAIL.get((op.name, f"errors:{err.sample.desc}", None))
        out.append(pytest.param(op, i, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [],
                                id=f"{op.name}-{err.sample.desc}"))
    return out


@pytest.mark.parametrize("op,index", _error_params())
def test_errors(op, index):
    err = op.errors(op.rng("errors"))[index]
    s = err.sample
    where = f"{op.name} error input '{s.desc}'"
    call_e, call_t = _calls(op, s)
    t_args, t_kw, _ = materialize(torch, s, "cpu")
    with pytest.raises(Exception) as t_info:
        call_t(torch, *t_args, **t_kw)
    assert builtin_class(t_info.value) is err.exc, \
        f"{where}: the expectation is stale: torch raises {type(t_info.value).__name__}: {t_info.value}"
    e_args, e_kw, _ = materialize(ember, s, "cpu")
    try:
        call_e(ember, *e_args, **e_kw)
    except Exception as exc:    # noqa: BLE001
        e = exc
    else:
        pytest.fail(f"{where}: ember raised nothing; torch raises {err.exc.__name__}: {t_info.value}")
    assert builtin_class(e) is err.exc, \
        f"{where}: ember raised {type(e).__name__} ({builtin_class(e).__name__}): {e}; torch raises " \
        f"{err.exc.__name__}: {t_info.value}"
    assert isinstance(e, EmberError), f"{where}: {type(e).__module__}.{type(e).__name__} is not an EmberError: {e}"
    for m in err.match:
        assert m in str(e), f"{where}: message {str(e)!r} does not name {m!r}"


# ----------------------------------------------------------------------------- random ops
N_STAT = 20000


def _draw(name, dtype, n=N_STAT, gen=None, **kw):
    dt = getattr(ember, dtype)
    if name == "rand":
        return ember.rand(n, dtype=dt, generator=gen)
    if name == "randn":
        return ember.randn(n, dtype=dt, generator=gen)
    if name == "randint":
        return ember.randint(kw.get("low", -5), kw.get("high", 5), (n,), dtype=dt, generator=gen)
    if name == "randint_high":
        return ember.randint(kw.get("high", 7), (n,), dtype=dt, generator=gen)
    x = ember.empty(n, dtype=dt)
    if name == "uniform_":
        return x.uniform_(kw.get("low", -2.0), kw.get("high", 3.0), generator=gen)
    if name == "normal_":
        return x.normal_(kw.get("mean", 2.0), kw.get("std", 0.5), generator=gen)
    if name == "random_":
        return x.random_(kw.get("low", 0), kw.get("high", 10), generator=gen)
    raise KeyError(name)


_RANDOM = [("rand", d) for d in op_db.FLOAT] + [("randn", d) for d in op_db.FLOAT] + \
    [("uniform_", d) for d in op_db.FLOAT] + [("normal_", d) for d in op_db.FLOAT] + \
    [("randint", d) for d in ("int64", "int32", "float32")] + [("randint_high", d) for d in ("int64", "uint8")] + \
    [("random_", d) for d in ("int64", "uint8", "float32")]


def _random_params():
    out = []
    for name, dtype in _RANDOM:
        out.append(pytest.param(name, dtype, id=f"{name}-{dtype}"))
    return out


@pytest.mark.parametrize("name,dtype", _random_params())
def test_random_statistics(name, dtype):
    ember.manual_seed(1234)
    x = _draw(name, dtype)
    assert dtype_str(x.dtype) == dtype and tuple(x.shape) == (N_STAT,)
    a = np.asarray(x.numpy(), dtype=np.float64)
    assert np.isfinite(a).all()
    lowp = dtype in op_db.LOWP
    if name in ("rand", "uniform_"):
        lo, hi = (0.0, 1.0) if name == "rand" else (-2.0, 3.0)
        assert a.min() >= lo and a.max() < hi, (a.min(), a.max())
        width = hi - lo
        assert abs(a.mean() - (lo + hi) / 2) < 0.01 * width * (3 if lowp else 1)
        assert abs(a.std() - width / np.sqrt(12)) < 0.01 * width * (3 if lowp else 1)
        counts, _ = np.histogram(a, bins=10, range=(lo, hi))
        assert counts.min() > N_STAT / 10 * 0.85, counts          # roughly flat
    elif name in ("randn", "normal_"):
        mean, std = (0.0, 1.0) if name == "randn" else (2.0, 0.5)
        tol = 0.03 * (3 if lowp else 1)
        assert abs(a.mean() - mean) < tol * std and abs(a.std() - std) < tol * std, (a.mean(), a.std())
        assert abs(np.mean(np.abs(a - mean) < std) - 0.6827) < 0.02      # the shape of the bell
    else:
        lo, hi = {"randint": (-5, 5), "randint_high": (0, 7)}.get(name, (0, 10))
        assert a.min() >= lo and a.max() < hi
        assert set(np.unique(a).astype(int)) == set(range(lo, hi)), "every value in [low, high) appears"
        assert abs(a.mean() - (lo + hi - 1) / 2) < 0.1


@pytest.mark.parametrize("name", ["rand", "randn", "randint", "uniform_", "normal_", "random_"])
def test_random_determinism(name):
    dtype = "int64" if name in ("randint", "random_") else "float32"
    ember.manual_seed(7)
    a = _draw(name, dtype, 64).numpy().copy()
    b = _draw(name, dtype, 64).numpy().copy()
    ember.manual_seed(7)
    c = _draw(name, dtype, 64).numpy().copy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b), "consecutive draws must differ"
    ember.manual_seed(8)
    assert not np.array_equal(a, _draw(name, dtype, 64).numpy())
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    np.testing.assert_array_equal(_draw(name, dtype, 32, gen=g1).numpy(), _draw(name, dtype, 32, gen=g2).numpy())
    ember.manual_seed(7)       # an explicit generator leaves the default one alone
    np.testing.assert_array_equal(_draw(name, dtype, 64).numpy(), a)


def test_random_fills_write_in_place_through_views():
    ember.manual_seed(0)
    base = ember.zeros(4, 6)
    view = base.t()[::2]
    out = view.uniform_()
    assert out is view
    arr = base.numpy()
    assert (arr[:, ::2] > 0).all() and (arr[:, 1::2] == 0).all()


# ----------------------------------------------------------- non-differentiable outputs
NONDIFF_CASES = [op for op in OP_DB if not op.grad and op.kind == "values" and "float32" in op.dtypes
                 and any(op_db.is_float(t.dtype) for s in op.samples(op.rng("float32"), "float32")
                         for t in s.tensors())]


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name, marks=[pytest.mark.xfail(strict=True, reason=r)]
                                             if (r := XFAIL.get((op.name, "requires_grad", None))) else [])
                                for op in NONDIFF_CASES])
def test_requires_grad_matches_torch(op):
    """Outputs of ops without gradients (comparisons, argmax, ...) agree with torch on requires_grad."""
    n = 0
    for s in op.samples(op.rng("float32"), "float32"):
        ts = [t for t in s.tensors() if op_db.is_float(t.dtype)]
        if not ts:
            continue
        for t in ts:
            t.grad = True
        call_e, call_t = _calls(op, s)
        t_args, t_kw, _ = materialize(torch, s, requires_grad=True, inplace=op.inplace)
        e_args, e_kw, _ = materialize(ember, s, requires_grad=True, inplace=op.inplace)
        t_out, e_out = call_t(torch, *t_args, **t_kw), call_e(ember, *e_args, **e_kw)
        for e, t in zip(_flat(e_out), _flat(t_out)):
            if not op_db.is_float(t.dtype):
                continue     # torch lets e.g. an int64 self of eq_ "require grad"; ember keeps ints grad-free
            assert e.requires_grad == t.requires_grad, \
                f"{_sample_where(op, 'float32', s)}: requires_grad {e.requires_grad} != torch {t.requires_grad}"
        n += 1
    assert n


# ------------------------------------------------------- output layouts (TensorIterator)
def _random_layout(rng, module, shape, dtype, device="meta"):
    """A tensor of `shape` viewed through a random permutation, step slicing and expansion."""
    nd = len(shape)
    expand = [bool(rng.random() < 0.2) for _ in range(nd)]
    src = tuple(1 if e else n for e, n in zip(expand, shape))
    perm = [int(p) for p in rng.permutation(nd)]         # dimension j of the result is base dimension perm[j]
    steps = [int(rng.choice([1, 1, 2])) for _ in range(nd)]
    base_shape, index = [0] * nd, [slice(None)] * nd
    for j in range(nd):
        base_shape[perm[j]] = src[j] * steps[j]
        index[perm[j]] = slice(None, None, steps[j])
    x = module.empty(tuple(base_shape), dtype=getattr(module, dtype), device=device)
    if nd:
        x = x[tuple(index)].permute(*perm).expand(*shape)
    return x


N_FUZZ_SEEDS = int(os.environ.get("EMBER_FUZZ_SEEDS", "4"))


@pytest.mark.parametrize("seed", range(N_FUZZ_SEEDS))
def test_pointwise_output_strides_fuzz(seed):
    """Random layouts, broadcasting and dtypes: ember's meta strides of pointwise ops equal torch's."""
    rng = np.random.default_rng(seed)
    for case in range(60):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(s) for s in rng.integers(1, 4, nd))
        other = tuple(1 if rng.random() < 0.3 else s for s in shape)[int(rng.integers(0, nd + 1)):]
        dts = [str(rng.choice(["float32", "float16", "int64"])) for _ in range(2)]
        outs = {}
        for m, dev in ((torch, "meta"), (torch, "cpu"), (ember, "meta")):
            sub = np.random.default_rng(seed * 1000 + case)
            a = _random_layout(sub, m, shape, dts[0], dev)
            b = _random_layout(sub, m, other, dts[1], dev)
            c = m.empty(other, dtype=m.bool, device=dev)
            outs[m.__name__ + dev] = (m.add(a, b), m.mul(b, a), m.exp(a), m.where(c, a, b), m.clone(a),
                                      m.empty_like(b), a.to(m.float64), m.lt(a, b), m.add(a, 2.5),
                                      m.clamp(a, min=b) if dts[0] != "float16" or dts[1] != "int64" else m.exp(b),
                                      m.sub(b, a), (a.stride(), b.stride()))
        t_in = outs["torchmeta"][-1]
        assert outs["embermeta"][-1] == t_in, f"case {case}: input layouts differ {outs['embermeta'][-1]} vs {t_in}"
        for k, (e, t, c) in enumerate(zip(outs["embermeta"][:-1], outs["torchmeta"][:-1], outs["torchcpu"][:-1])):
            assert tuple(e.shape) == tuple(t.shape) and dtype_str(e.dtype) == dtype_str(t.dtype)
            if t.numel() == 0:
                continue
            if tuple(t.stride()) != tuple(c.stride()) and tuple(e.stride()) == tuple(c.stride()):
                continue         # torch's meta (a Python decomposition) and cpu disagree; ember follows cpu
            assert tuple(e.stride()) == tuple(t.stride()), \
                f"case {case} result {k}: shape {shape} {dts[0]} strides {t_in[0]} with {other} {dts[1]} strides " \
                f"{t_in[1]}: ember {tuple(e.stride())} != torch {tuple(t.stride())}"
