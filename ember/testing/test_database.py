"""The sample database itself: every registered op is covered, with samples and error inputs.

These checks do not depend on the device: they guard the suite against silently testing
less (an op without an OpInfo, a differentiable op whose gradients are never compared, a
pointwise op never fed broadcasting, 0-d, empty, non-contiguous or mixed-dtype inputs).
"""
from __future__ import annotations

import numpy as np

from ember.dispatcher import ALL_OPS

from .op_db import EXCLUDED, GRAD_DTYPES, OP_DB, OPS_BY_NAME


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
    no_errors = {"contiguous": "a method only; every argument is a tensor that cannot be wrong",
                 "alias": "its one argument is a tensor; torch's aten.alias raises RuntimeError for a non-tensor"}
    for info in OP_DB:
        for d in info.dtypes:
            assert info.samples(info.rng(d), d), f"{info.name}[{d}] has no samples"
        if info.name not in no_errors:
            assert info.errors is not None and info.errors(np.random.default_rng(0)), f"{info.name}: no error inputs"


# pointwise ops whose tensor operands must share one dtype in PyTorch (no mixed-dtype sample exists)
SAME_DTYPE_ONLY = {"lerp.Scalar": "torch.lerp requires `end` to have the dtype of `self`",
                   "heaviside": "torch.heaviside requires `values` to have the dtype of `self`",
                   "isclose": "torch.isclose requires `other` to have the dtype of `self`"}


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
            if info.name not in SAME_DTYPE_ONLY:
                assert any(len({t.dtype for t in s.tensors()}) > 1 for s in samples), f"{info.name}: no mixed dtypes"
            if info.name not in ("maximum", "minimum", "atan2", "hypot", "logical_and", "logical_or",
                                 "logical_xor", "lerp.Tensor", "addcmul", "addcdiv", "isclose", "logaddexp",
                                 "logaddexp2", "fmax", "fmin", "heaviside", "gcd", "lcm", "ldexp"):  # torch: no Python scalars
                assert any(isinstance(a, (int, float)) for s in samples for a in s.args), f"{info.name}: no scalars"
