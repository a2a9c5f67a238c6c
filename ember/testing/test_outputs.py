"""Every op's outputs on the device under test, sample by sample, against torch.

  test_outputs       a real device: values, dtype and shape of every sample vs torch on cpu
                     (results moved with .cpu()), per dtype, including the Tensor-method
                     variant; in-place ops return and modify self; out-of-place ops leave
                     their inputs untouched; view ops alias their input exactly when torch's do.
                     meta: shape, dtype and strides (and the storage offset of views) vs
                     torch's meta device; in-place ops return self.
  test_requires_grad_matches_torch
                     outputs of ops without gradients agree with torch on requires_grad
  test_pointwise_output_strides_fuzz
                     meta: random layouts, broadcasting and dtypes: output strides of
                     pointwise ops vs torch's (TensorIterator's layout rules)
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import ALL_OPS

from . import op_db
from .compare import assert_same, assert_same_meta, calls, dtype_str, flat, host, sample_where
from .op_db import OP_DB, T, materialize
from .plugin import NUMPY_WARNINGS, failure_reason, known_failure

pytestmark = NUMPY_WARNINGS

VALUE_CASES = [pytest.param(op, d, id=f"{op.name}-{d}") for op in OP_DB for d in op.dtypes]


def _method_variant(op):
    """Tensor.<name> for an op called as module.<name>, when both frameworks have the method."""
    name = getattr(op.call, "__name__", "")
    if op.torch_call is not None or "." in name or not hasattr(ember.Tensor, name) or not hasattr(torch.Tensor, name):
        return None
    if ALL_OPS[op.name].arg_names[0] != "self":     # where(condition, self, other): self is not first
        return None
    return op_db.method(name)


@pytest.mark.parametrize("op,dtype", VALUE_CASES)
def test_outputs(op, dtype, ember_device):
    """Values on a real device; shapes, dtypes and strides on meta."""
    if ember_device.is_meta:
        with known_failure(failure_reason(op, "meta", dtype, ember_device)):
            _check_meta_layouts(op, dtype)
    else:
        with known_failure(failure_reason(op, "values", dtype, ember_device)):
            _check_values(op, dtype, ember_device)


def _check_values(op, dtype, device):
    dev = device.name
    samples = op.samples(op.rng(dtype), dtype)
    as_method = _method_variant(op)
    if as_method is not None:      # the Tensor method variant, on the first samples
        for s in [s for s in samples if s.fn is None and isinstance(s.args[0], T)][:3]:
            t_args, t_kw, _ = materialize(torch, s, "cpu")
            e_args, e_kw, _ = materialize(ember, s, dev)
            assert_same(as_method(ember, *e_args, **e_kw), as_method(torch, *t_args, **t_kw), op.tol,
                        sample_where(op, dtype, s) + " as a Tensor method", device.type)
    for s in samples:
        where = sample_where(op, dtype, s)
        call_e, call_t = calls(op, s)
        t_args, t_kw, _ = materialize(torch, s, "cpu", inplace=op.inplace)
        e_args, e_kw, _ = materialize(ember, s, dev, inplace=op.inplace)
        t_out = call_t(torch, *t_args, **t_kw)
        e_out = call_e(ember, *e_args, **e_kw)
        if op.kind == "values":
            assert_same(e_out, t_out, op.tol, where, device.type)
        else:                       # empty / random: shape, dtype and device only
            for e, t in zip(flat(e_out), flat(t_out)):
                assert dtype_str(e.dtype) == dtype_str(t.dtype), f"{where}: dtype {e.dtype} != {t.dtype}"
                assert tuple(e.shape) == tuple(t.shape), f"{where}: shape {tuple(e.shape)} != {tuple(t.shape)}"
                assert e.device.type == device.type, f"{where}: device {e.device}, expected {device.type}"
        if ALL_OPS[op.name].is_view:       # a view (or, for reshape/contiguous, maybe a copy) exactly when torch's is
            for e_o, t_o in zip(flat(e_out), flat(t_out)):     # split/unbind: a tuple of views
                t_alias = t_o.untyped_storage().data_ptr() == t_args[0].untyped_storage().data_ptr()
                e_alias = e_o.untyped_storage() is e_args[0].untyped_storage()
                assert e_alias == t_alias, f"{where}: shares its input's storage: {e_alias}, torch: {t_alias}"
        if op.inplace:
            assert e_out is e_args[0], f"{where}: an in-place op must return self"
            if op.kind == "values":
                assert_same(e_args[0], t_args[0], op.tol, where + " (self after the op)", device.type)
        else:
            for a, t in zip(e_args, s.args):        # inputs are never modified
                if isinstance(t, T):
                    after, before = np.asarray(host(a), dtype=np.float64), np.asarray(t.values, dtype=np.float64)
                    if not np.array_equal(after, before, equal_nan=True):     # (numpy's assertion: the report)
                        np.testing.assert_array_equal(after, before, err_msg=where + " input")


def _check_meta_layouts(op, dtype):
    view = ALL_OPS[op.name].is_view
    n = 0
    for s in op.samples(op.rng(dtype), dtype):
        if not s.meta:
            continue
        n += 1
        where = sample_where(op, dtype, s) + " on meta"
        call_e, call_t = calls(op, s)
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
    if not n and "data_dependent_shape" in ALL_OPS[op.name].tags:
        pytest.skip("a data-dependent output shape: torch's meta device and ember's raise NotImplementedError "
                    "(checked in tests/test_indexing.py)")
    assert n, f"{op.name}[{dtype}]: no sample runs on meta"


# ----------------------------------------------------------- non-differentiable outputs
NONDIFF_CASES = [op for op in OP_DB if not op.grad and op.kind == "values" and "float32" in op.dtypes
                 and any(op_db.is_float(t.dtype) for s in op.samples(op.rng("float32"), "float32")
                         for t in s.tensors())]


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in NONDIFF_CASES])
def test_requires_grad_matches_torch(op, ember_device):
    """Outputs of ops without gradients (comparisons, argmax, ...) agree with torch on requires_grad."""
    with known_failure(failure_reason(op, "requires_grad", None, ember_device)):
        n = 0
        for s in op.samples(op.rng("float32"), "float32"):
            ts = [t for t in s.tensors() if op_db.is_float(t.dtype)]
            if not ts or (ember_device.is_meta and not s.meta):
                continue
            for t in ts:
                t.grad = True
            call_e, call_t = calls(op, s)
            t_args, t_kw, _ = materialize(torch, s, requires_grad=True, inplace=op.inplace)
            e_args, e_kw, _ = materialize(ember, s, ember_device.name, requires_grad=True, inplace=op.inplace)
            t_out, e_out = call_t(torch, *t_args, **t_kw), call_e(ember, *e_args, **e_kw)
            for e, t in zip(flat(e_out), flat(t_out)):
                if t is None or not op_db.is_float(t.dtype):     # None: an output left out (output_mask)
                    continue     # torch lets e.g. an int64 self of eq_ "require grad"; ember keeps ints grad-free
                assert e.requires_grad == t.requires_grad, \
                    f"{sample_where(op, 'float32', s)}: requires_grad {e.requires_grad} != torch {t.requires_grad}"
            n += 1
        if not n and ember_device.is_meta and not any(s.meta for s in op.samples(op.rng("float32"), "float32")):
            pytest.skip("every sample has a data-dependent output shape, which meta tensors cannot compute")
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
def test_pointwise_output_strides_fuzz(seed, ember_device):
    """Random layouts, broadcasting and dtypes: ember's meta strides of pointwise ops equal torch's."""
    if not ember_device.is_meta:
        pytest.skip("output strides are compared on the meta device (--ember-device=meta), which predicts the "
                    "layouts of every device; values do not depend on them")
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
