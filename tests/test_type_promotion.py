"""Differential tests of ember.core.type_promotion against PyTorch (the oracle).

Covers promote_types and can_cast over all dtype pairs, result_type over every pair of
operand kinds (tensor with ndim > 0, 0-dim tensor, Python bool/int/float) against
torch.result_type, longer operand lists and every elementwise rule against
torch._prims_common.elementwise_dtypes, and the effect of set_default_dtype.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import random
import sys

import pytest
import torch
import torch._prims_common as prims

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def _load(name: str, relpath: str):
    """Import `name`, or load it from its file if the packages cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError:
        spec = importlib.util.spec_from_file_location(name, os.path.join(_ROOT, relpath))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module


_dt = _load("ember.core.dtype", "ember/core/dtype.py")
tp = _load("ember.core.type_promotion", "ember/core/type_promotion.py")

DTYPES = _dt.ALL_DTYPES
TORCH_OF = {d: getattr(torch, d.name) for d in DTYPES}
EMBER_OF = {t: d for d, t in TORCH_OF.items()}

RULES = {
    "default": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT,
    "no_opmath": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.NO_OPMATH,
    "int_to_float": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT,
    "always_bool": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.ALWAYS_BOOL,
    "bool_to_long": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.BOOL_TO_LONG,
    "complex_to_float": prims.ELEMENTWISE_TYPE_PROMOTION_KIND.COMPLEX_TO_FLOAT,
}


class FakeTensor:
    """Stand-in for an Ember tensor: just the attributes type promotion reads."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, dtype, ndim: int):
        self.dtype = dtype
        self.ndim = ndim

    def __repr__(self) -> str:
        return f"FakeTensor({self.dtype!r}, ndim={self.ndim})"


# Operands as (ember operand, torch operand) pairs: a 1-d and a 0-dim tensor of every dtype,
# and one Python scalar of each kind (the same object serves both frameworks).
OPERANDS = (
    [(FakeTensor(d, 1), torch.zeros(2, dtype=TORCH_OF[d])) for d in DTYPES]
    + [(FakeTensor(d, 0), torch.zeros((), dtype=TORCH_OF[d])) for d in DTYPES]
    + [(True, True), (2, 2), (2.5, 2.5)]
)


@pytest.fixture
def default_float64():
    """Run a test with float64 as both frameworks' default float dtype, then restore."""
    old_ember, old_torch = _dt.get_default_dtype(), torch.get_default_dtype()
    _dt.set_default_dtype(_dt.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        _dt.set_default_dtype(old_ember)
        torch.set_default_dtype(old_torch)


def test_promote_types_all_pairs():
    for a, b in itertools.product(DTYPES, DTYPES):
        expected = EMBER_OF[torch.promote_types(TORCH_OF[a], TORCH_OF[b])]
        assert tp.promote_types(a, b) is expected, (a, b)


def test_promote_types_examples():
    assert tp.promote_types(_dt.uint8, _dt.int8) is _dt.int16
    assert tp.promote_types(_dt.float16, _dt.bfloat16) is _dt.float32
    assert tp.promote_types(_dt.int64, _dt.float16) is _dt.float16
    for d in DTYPES:
        assert tp.promote_types(_dt.bool, d) is d
        assert tp.promote_types(d, _dt.bool) is d
    with pytest.raises(TypeError):
        tp.promote_types(_dt.int8, "float32")


def test_can_cast_all_pairs():
    for a, b in itertools.product(DTYPES, DTYPES):
        assert tp.can_cast(a, b) is torch.can_cast(TORCH_OF[a], TORCH_OF[b]), (a, b)
    assert not tp.can_cast(_dt.float32, _dt.int64)
    assert tp.can_cast(_dt.int64, _dt.float16)
    assert not tp.can_cast(_dt.uint8, _dt.bool)
    assert tp.can_cast(_dt.bool, _dt.bool)


def test_dtype_of_scalar():
    assert tp.dtype_of_scalar(True) is _dt.bool
    assert tp.dtype_of_scalar(3) is _dt.int64
    assert tp.dtype_of_scalar(3.0) is _dt.get_default_dtype()
    with pytest.raises(TypeError):
        tp.dtype_of_scalar(1j)
    with pytest.raises(TypeError):
        tp.dtype_of_scalar("1")


def _check_result_type_pairs():
    for (ea, ta), (eb, tb) in itertools.product(OPERANDS, OPERANDS):
        expected = EMBER_OF[torch.result_type(ta, tb)]
        # the public function (two operands: the fast paths) and the general algorithm
        assert tp.result_type(ea, eb) is expected, (ea, eb)
        assert tp._result_type_general((ea, eb)) is expected, (ea, eb)


def test_result_type_pairs():
    _check_result_type_pairs()


def test_result_type_pairs_default_float64(default_float64):
    _check_result_type_pairs()


def test_set_default_dtype_changes_python_float_result():
    int_tensor, bool_0d = FakeTensor(_dt.int32, 2), FakeTensor(_dt.bool, 0)
    assert tp.result_type(int_tensor, 2.0) is _dt.float32
    assert tp.result_type(2.0, bool_0d, 1) is _dt.float32
    assert tp.elementwise_dtypes(int_tensor, rule="int_to_float") == (_dt.float32, _dt.float32)
    old = _dt.get_default_dtype()
    _dt.set_default_dtype(_dt.float64)
    try:
        assert tp.result_type(int_tensor, 2.0) is _dt.float64
        assert tp.result_type(2.0, int_tensor) is _dt.float64
        assert tp.result_type(2.0, bool_0d, 1) is _dt.float64
        assert tp.dtype_of_scalar(2.0) is _dt.float64
        assert tp.elementwise_dtypes(int_tensor, rule="int_to_float") == (_dt.float64, _dt.float64)
        # a floating tensor keeps its own dtype: Python floats are weak
        assert tp.result_type(FakeTensor(_dt.float16, 1), 2.0) is _dt.float16
    finally:
        _dt.set_default_dtype(old)
    assert tp.result_type(int_tensor, 2.0) is _dt.float32


def test_result_type_examples():
    t = FakeTensor
    assert tp.result_type(t(_dt.int8, 1), 1) is _dt.int8
    assert tp.result_type(t(_dt.int8, 1), 1.5) is _dt.float32
    assert tp.result_type(t(_dt.bool, 1), 1) is _dt.int64
    assert tp.result_type(t(_dt.float16, 1), t(_dt.float64, 0)) is _dt.float16
    assert tp.result_type(t(_dt.int32, 1), t(_dt.float64, 0)) is _dt.float64
    assert tp.result_type(t(_dt.uint8, 0), t(_dt.int8, 0)) is _dt.int16
    assert tp.result_type(t(_dt.uint8, 1), t(_dt.int8, 0)) is _dt.uint8
    assert tp.result_type(True, False) is _dt.bool
    assert tp.result_type(1, 2.0) is _dt.float32
    # None operands are skipped, a single operand is its own result
    assert tp.result_type(t(_dt.int16, 3), None, 4) is _dt.int16
    assert tp.result_type(t(_dt.bfloat16, 0)) is _dt.bfloat16


def test_result_type_errors():
    with pytest.raises(ValueError):
        tp.result_type()
    with pytest.raises(ValueError):
        tp.result_type(None)
    with pytest.raises(TypeError):
        tp.result_type(FakeTensor(_dt.int8, 1), "x")
    with pytest.raises(TypeError):
        tp.result_type(object(), FakeTensor(_dt.int8, 1))
    with pytest.raises(TypeError):
        tp.result_type(FakeTensor(torch.float32, 1), 1.0)


def test_result_type_number_subclasses():
    """bool/int/float subclasses and other numbers.Real are weak scalars, not tensors."""
    import enum

    class Small(enum.IntEnum):
        ONE = 1

    class MyFloat(float):
        pass

    i8 = FakeTensor(_dt.int8, 1)
    assert tp.result_type(i8, Small.ONE) is _dt.int8
    assert tp.result_type(i8, MyFloat(1.0)) is _dt.float32
    assert tp.result_type(MyFloat(1.0), i8, Small.ONE) is _dt.float32
    assert tp.dtype_of_scalar(Small.ONE) is _dt.int64


def test_result_type_numpy_scalars():
    """numpy scalars carry a numpy .dtype and .ndim == 0 but are weak Python-like numbers to
    torch; they must take the numbers path, not be mistaken for tensors."""
    np = pytest.importorskip("numpy")
    for value in (np.float64(1.5), np.float32(1.0), np.int64(3), np.int32(3)):
        for e, t in OPERANDS[:20]:
            expected = EMBER_OF[torch.result_type(t, value)]
            assert tp.result_type(e, value) is expected, (e, value)
            assert tp.result_type(value, e) is expected, (value, e)


def _prims_dtypes(torch_operands, rule):
    compute, result = prims.elementwise_dtypes(*torch_operands, type_promotion_kind=RULES[rule])
    return EMBER_OF[compute], EMBER_OF[result]


def _operand_lists():
    """All pairs, plus a fixed random sample of triples and quadruples."""
    yield from itertools.product(OPERANDS, OPERANDS)
    rng = random.Random(1234)
    for n in (3, 4):
        for _ in range(600):
            yield tuple(rng.choice(OPERANDS) for _ in range(n))
    yield OPERANDS[:1]
    yield OPERANDS[-1:]


OPERAND_LISTS = list(_operand_lists())


def test_result_type_many_operands_against_prims():
    """More than two operands (the general algorithm) against the Python reference."""
    for ops in OPERAND_LISTS:
        ember_ops = [e for e, _ in ops]
        torch_ops = [t for _, t in ops]
        expected = _prims_dtypes(torch_ops, "no_opmath")[1]
        assert tp.result_type(*ember_ops) is expected, ember_ops


def test_pairs_against_aten_where():
    """torch.where(cond, x, y) promotes x and y in ATen's TensorIterator: a second oracle."""
    cond = torch.zeros(2, dtype=torch.bool)
    for (ea, ta), (eb, tb) in itertools.product(OPERANDS, OPERANDS):
        expected = EMBER_OF[torch.where(cond, ta, tb).dtype]
        assert tp.result_type(ea, eb) is expected, (ea, eb)


def test_tensor_triples_against_aten_addcmul():
    """Three tensors (the general algorithm) against ATen's multi-operand promotion, as
    torch.addcmul computes it; combinations whose kernel does not exist (bool) are skipped."""
    tensors = OPERANDS[:20]
    checked = 0
    for (ea, ta), (eb, tb), (ec, tc) in itertools.product(tensors, tensors, tensors):
        try:
            expected = EMBER_OF[torch.addcmul(ta, tb, tc).dtype]
        except RuntimeError:
            continue
        assert tp.result_type(ea, eb, ec) is expected, (ea, eb, ec)
        checked += 1
    assert checked > 7000


@pytest.mark.parametrize("rule", sorted(RULES))
def test_elementwise_dtypes_against_prims(rule):
    for ops in OPERAND_LISTS:
        ember_ops = [e for e, _ in ops]
        torch_ops = [t for _, t in ops]
        assert tp.elementwise_dtypes(*ember_ops, rule=rule) == _prims_dtypes(torch_ops, rule), (rule, ember_ops)


@pytest.mark.parametrize("rule", ["default", "int_to_float", "always_bool"])
def test_elementwise_dtypes_default_float64(rule, default_float64):
    for ops in OPERAND_LISTS[:: 7]:
        ember_ops = [e for e, _ in ops]
        torch_ops = [t for _, t in ops]
        assert tp.elementwise_dtypes(*ember_ops, rule=rule) == _prims_dtypes(torch_ops, rule), (rule, ember_ops)


def test_elementwise_dtypes_examples():
    h = FakeTensor(_dt.float16, 1)
    b = FakeTensor(_dt.bool, 1)
    i = FakeTensor(_dt.int32, 1)
    assert tp.elementwise_dtypes(h, h, rule="default") == (_dt.float32, _dt.float16)
    assert tp.elementwise_dtypes(h, h, rule="no_opmath") == (_dt.float16, _dt.float16)
    assert tp.elementwise_dtypes(i, rule="int_to_float") == (_dt.float32, _dt.float32)
    assert tp.elementwise_dtypes(h, 1, rule="always_bool") == (_dt.float32, _dt.bool)
    assert tp.elementwise_dtypes(b, b, rule="bool_to_long") == (_dt.int64, _dt.int64)
    assert tp.elementwise_dtypes(b, 2.0, rule="bool_to_long") == (_dt.float32, _dt.float32)
    assert tp.computation_dtype(_dt.bfloat16) is _dt.float32
    with pytest.raises(ValueError):
        tp.elementwise_dtypes(h, rule="nope")


def test_unary_pointwise_fast_path_agrees_with_the_general_rule():
    """The pointwise shape rule's fast path for one contiguous tensor (relu, neg, ...) gives the shape,
    dtype or error that the general rule gives for the same values laid out transposed."""
    import ember
    from ember.dispatcher.operator import ALL_OPS
    from ember.shape_rules.pointwise import pointwise_on_args

    ops = [op for op in ALL_OPS.values() if getattr(op.shape_rule, "on_args", None) is pointwise_on_args
           and len(op.arg_names) == 1 and op.inplace_of is None]
    assert {"relu", "neg", "abs", "square"} <= {op.name for op in ops}

    def outcome(op, t):
        try:
            spec = pointwise_on_args(op, (t,))
        except Exception as exc:            # noqa: BLE001 - the error itself is what is compared
            return type(exc), str(exc)
        return tuple(spec[0]), spec[1]

    for op in ops:
        for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                     "float64"):
            dtype = getattr(ember, name)
            contiguous = ember.ones((2, 3), dtype=dtype)
            transposed = ember.ones((3, 2), dtype=dtype).t()
            assert outcome(op, contiguous) == outcome(op, transposed), (op.name, name)
