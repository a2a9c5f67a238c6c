"""PyTorch's type promotion rules for Ember dtypes.

Every elementwise operator asks this module, on every call, which dtype its result has and
in which dtype it should compute. The answers must match PyTorch exactly (Ember is a
drop-in replacement), and they must be cheap (they sit on the per-call dispatch path), so:

* `promote_types` is a lookup in a table built once at import time;
* `result_type` handles the overwhelmingly common two-operand calls (tensor/tensor and
  tensor/Python scalar) with a few dict lookups before falling back to the general
  algorithm.

The general algorithm is ATen's (`aten/src/ATen/native/TypeProperties.cpp`:
`update_result_type_state` / `result_type`), restricted to Ember's real dtypes. Operands
fall into three priority tiers:

1. tensors with one or more dimensions,
2. zero-dimensional tensors,
3. "wrapped numbers": Python bool/int/float scalars. These are weakly typed: a bool is
   `bool`, an int is `int64`, a float is the default float dtype (`get_default_dtype()`),
   whatever its value.

Within a tier dtypes combine with `promote_types`. Across tiers a lower tier only matters
if its category (bool < integer < floating point) is higher than the category reached by
the higher tiers; then it supplies the result dtype. So `int8_tensor + 1` is int8,
`int8_tensor + 1.5` is float32, `float16_tensor + float64_0dim_tensor` is float16 and
`int32_tensor + float64_0dim_tensor` is float64.

`elementwise_dtypes` layers the `torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND`
rules on top (the "opmath" computation dtype and the int_to_float / always_bool /
bool_to_long variants), and `can_cast` gives the check in-place operators make
(`int_tensor += 1.5` is an error).

This module deliberately imports neither numpy nor torch.
"""
from __future__ import annotations

import numbers

from ember.core import dtype as _dt
from ember.core.symint import SymInt

__all__ = [
    "promote_types", "result_type", "elementwise_dtypes", "can_cast", "dtype_of_scalar",
    "computation_dtype", "ELEMENTWISE_RULES",
]

_Dtype = _dt.dtype

_BOOL = _dt.bool
_INT64 = _dt.int64
_FLOAT32 = _dt.float32
_get_default_dtype = _dt.get_default_dtype

# Category of each dtype: 0 bool, 1 integer, 2 floating point. Doubles as the set of
# valid Ember dtypes (a lookup that misses means "not an Ember dtype").
_CATEGORY: dict[_Dtype, int] = {d: d.category for d in _dt.ALL_DTYPES}

# Category of each exact Python scalar type ("wrapped numbers"). Keyed by `type(x)` so the
# fast paths avoid isinstance; note bool must not be confused with its base class int.
# a symbolic size (ember.core.symint, a dynamic-shape export) is an int operand
_SCALAR_CATEGORY: dict[type, int] = {bool: 0, int: 1, float: 2, SymInt: 1}
_scalar_category_of_type = _SCALAR_CATEGORY.get  # bound once: saves an attribute lookup per call

# The pairs PyTorch promotes to a type that is neither operand ("incomparable" dtypes of
# the same size and category); every other pair promotes to the higher-ranked operand.
_SPECIAL_PAIRS: dict[frozenset, _Dtype] = {
    frozenset((_dt.uint8, _dt.int8)): _dt.int16,
    frozenset((_dt.float16, _dt.bfloat16)): _dt.float32,
}


def _build_promotion_table() -> dict[_Dtype, dict[_Dtype, _Dtype]]:
    """Build `table[a][b] == torch.promote_types(a, b)` for every pair of Ember dtypes.

    The dtypes in ALL_DTYPES are ordered bool < uint8 < int8 < int16 < int32 < int64 <
    float16 < bfloat16 < float32 < float64, which is PyTorch's promotion lattice except for
    the two incomparable pairs in _SPECIAL_PAIRS. (The differential tests check the whole
    table against torch.) A nested dict is used because `table[a][b]` is two identity-hash
    lookups with no tuple to allocate.
    """
    rank = {d: i for i, d in enumerate(_dt.ALL_DTYPES)}
    table: dict[_Dtype, dict[_Dtype, _Dtype]] = {}
    for a in _dt.ALL_DTYPES:
        row: dict[_Dtype, _Dtype] = {}
        for b in _dt.ALL_DTYPES:
            special = _SPECIAL_PAIRS.get(frozenset((a, b)))
            if special is not None:
                row[b] = special
            else:
                row[b] = a if rank[a] >= rank[b] else b
        table[a] = row
    return table


_PROMOTE: dict[_Dtype, dict[_Dtype, _Dtype]] = _build_promotion_table()

# can_cast(from, to) (c10::canCast): no floating -> integer/bool and no non-bool -> bool.
# With categories bool 0 < integer 1 < floating 2 that is exactly "category does not drop".
_CAN_CAST: dict[_Dtype, dict[_Dtype, bool]] = {
    a: {b: a.category <= b.category for b in _dt.ALL_DTYPES} for a in _dt.ALL_DTYPES
}

# The "opmath" computation dtype (torch._prims_common.get_computation_dtype): low-precision
# floats compute in float32 for accuracy; every other dtype computes in itself.
_OPMATH: dict[_Dtype, _Dtype] = {d: d for d in _dt.ALL_DTYPES}
_OPMATH[_dt.float16] = _FLOAT32
_OPMATH[_dt.bfloat16] = _FLOAT32

# Names accepted by elementwise_dtypes' `rule` (torch's ELEMENTWISE_TYPE_PROMOTION_KIND,
# lower-cased). "complex_to_float" is accepted for parity with torch; Ember has no complex
# dtypes, so it behaves exactly like "default".
ELEMENTWISE_RULES: tuple[str, ...] = (
    "default", "no_opmath", "int_to_float", "always_bool", "bool_to_long", "complex_to_float",
)


# (computation dtype, result dtype) for each promoted dtype r, per rule: what
# elementwise_dtypes returns, precomputed so that a call is two dict lookups after
# result_type. "int_to_float" is missing because it depends on the default dtype.
_DEFAULT_RULE: dict[_Dtype, tuple[_Dtype, _Dtype]] = {d: (_OPMATH[d], d) for d in _dt.ALL_DTYPES}
_RULE_TABLES: dict[str, dict[_Dtype, tuple[_Dtype, _Dtype]]] = {
    "default": _DEFAULT_RULE,
    "complex_to_float": _DEFAULT_RULE,
    "no_opmath": {d: (d, d) for d in _dt.ALL_DTYPES},
    "always_bool": {d: (_OPMATH[d], _BOOL) for d in _dt.ALL_DTYPES},
    "bool_to_long": {**_DEFAULT_RULE, _BOOL: (_INT64, _INT64)},
}


def promote_types(a: _Dtype, b: _Dtype) -> _Dtype:
    """The smallest dtype both `a` and `b` convert to without losing category or range.

    Same as torch.promote_types: e.g. uint8 + int8 -> int16, float16 + bfloat16 -> float32,
    int64 + float16 -> float16, bool + x -> x. Symmetric, and a table lookup.
    """
    try:
        return _PROMOTE[a][b]
    except (KeyError, TypeError):
        raise TypeError(f"promote_types(): expected two ember dtypes, got {a!r} and {b!r}") from None


def can_cast(from_: _Dtype, to: _Dtype) -> bool:
    """Whether type promotion allows casting `from_` to `to` (torch.can_cast).

    This is the check in-place and `out=` operators make on their computed result dtype:
    floating -> integer/bool and integer -> bool are refused (`int_tensor += 1.5` raises),
    everything else, including narrowing within a category (float64 -> float16), is allowed.
    """
    try:
        return _CAN_CAST[from_][to]
    except (KeyError, TypeError):
        raise TypeError(f"can_cast(): expected two ember dtypes, got {from_!r} and {to!r}") from None


def computation_dtype(result_dtype: _Dtype) -> _Dtype:
    """The "opmath" dtype kernels compute in for `result_dtype`: float32 for float16 and
    bfloat16 (torch._prims_common.get_computation_dtype), otherwise the dtype itself."""
    return _OPMATH[result_dtype]


def _scalar_category(value: object) -> int | None:
    """Category (0 bool, 1 int, 2 float) of a Python number, or None if `value` is not one.

    Exact bool/int/float are handled by the callers' dict lookups; this is the slow path for
    subclasses and other registered numbers (e.g. numpy scalars, which would otherwise look
    like tensors because they have .dtype/.ndim of their own).
    """
    if isinstance(value, bool):
        return 0
    if isinstance(value, numbers.Integral):
        return 1
    if isinstance(value, numbers.Real):
        return 2
    return None


def dtype_of_scalar(value: bool | int | float) -> _Dtype:
    """The dtype PyTorch gives a Python scalar: bool -> bool, int -> int64, float -> the
    default float dtype (float32 unless changed with set_default_dtype)."""
    category = _SCALAR_CATEGORY.get(type(value))
    if category is None:
        category = _scalar_category(value)
        if category is None:
            raise TypeError(f"dtype_of_scalar(): expected a Python bool, int or float, got {type(value).__name__}")
    if category == 2:
        return _get_default_dtype()
    return _INT64 if category == 1 else _BOOL


def _bad_operand(x: object) -> TypeError:
    return TypeError(
        "result_type(): expected tensors (objects with an ember .dtype and .ndim) or Python "
        f"bool/int/float scalars, got {type(x).__name__}"
    )


def _result_type_general(operands: tuple) -> _Dtype:
    """ATen's three-tier algorithm, for any number of operands (see the module docstring).

    Each tier is folded separately: tensors with ndim > 0 and 0-dim tensors with
    promote_types, Python scalars by their highest category (wrapped numbers always take
    the canonical dtype of their category, so their promotion is just the maximum category).
    Then the highest-priority tier that reaches the overall highest category wins, which is
    what ATen's nested combine_categories(dim, combine_categories(zero, wrapped)) computes.
    """
    dim_result: _Dtype | None = None
    zero_result: _Dtype | None = None
    wrapped_category = -1
    promote = _PROMOTE
    for x in operands:
        if x is None:  # absent optional operands (e.g. a missing `out`) take no part
            continue
        category = _SCALAR_CATEGORY.get(type(x))
        if category is None:
            d = getattr(x, "dtype", None)
            if type(d) is _Dtype:
                if x.ndim == 0:
                    zero_result = d if zero_result is None else promote[zero_result][d]
                else:
                    dim_result = d if dim_result is None else promote[dim_result][d]
                continue
            category = _scalar_category(x)
            if category is None:
                raise _bad_operand(x)
        if category > wrapped_category:
            wrapped_category = category

    result = dim_result
    if zero_result is not None and (result is None or zero_result.category > result.category):
        result = zero_result
    if wrapped_category >= 0 and (result is None or wrapped_category > result.category):
        result = _get_default_dtype() if wrapped_category == 2 else (_INT64 if wrapped_category == 1 else _BOOL)
    if result is None:
        raise ValueError("result_type(): expected at least one tensor or scalar operand")
    return result


def result_type(*operands: object) -> _Dtype:
    """The dtype of an elementwise operation's result on `operands` (torch.result_type).

    Each operand is either a tensor-like object (an ember `.dtype` and an int `.ndim`) or a
    Python bool/int/float scalar; `None` operands are ignored. See the module docstring for
    the rules. Unlike torch.result_type, any number of operands is accepted.

    Fast paths (no loop, no isinstance, a handful of dict lookups) cover every two-operand
    call of Ember tensors and exact bool/int/float scalars; `.ndim` is only read for two
    tensors of different dtypes in the same category, the one case where 0-dim-ness matters:
    * same dtype -> that dtype;
    * different categories -> the dtype of the higher-category tensor;
    * tensor and scalar -> the tensor's dtype unless the scalar's category is higher, in which
      case int64 (int scalar, bool tensor) or the default float dtype (float scalar).
    """
    if len(operands) == 2:
        a, b = operands
        sb = _scalar_category_of_type(type(b))
        try:
            if sb is None:
                sa = _scalar_category_of_type(type(a))
                if sa is None:  # tensor, tensor
                    da = a.dtype
                    db = b.dtype
                    if da is db and type(da) is _Dtype:
                        return da
                    ca = _CATEGORY[da]
                    cb = _CATEGORY[db]
                    if ca != cb:
                        return da if ca > cb else db
                    a0 = a.ndim == 0
                    if a0 == (b.ndim == 0):
                        return _PROMOTE[da][db]
                    return db if a0 else da
                db = b.dtype  # scalar, tensor
                if sa <= _CATEGORY[db]:
                    return db
                return _get_default_dtype() if sa == 2 else _INT64
            if _scalar_category_of_type(type(a)) is None:  # tensor, scalar
                da = a.dtype
                if sb <= _CATEGORY[da]:
                    return da
                return _get_default_dtype() if sb == 2 else _INT64
        except (AttributeError, KeyError, TypeError):
            # not an Ember tensor-like after all (a numpy scalar, a bad operand, ...): the
            # general path classifies it properly or raises a clear error
            pass
    return _result_type_general(operands)


def elementwise_dtypes(*operands: object, rule: str) -> tuple[_Dtype, _Dtype]:
    """(computation dtype, result dtype) of an elementwise op under a promotion `rule`.

    Mirrors torch._prims_common.elementwise_dtypes; `rule` names an
    ELEMENTWISE_TYPE_PROMOTION_KIND in lower case. With r = result_type(*operands):
    * "default" (add, mul, ...): (opmath(r), r), where opmath maps float16/bfloat16 to
      float32 so low-precision inputs are computed accurately, then rounded once;
    * "no_opmath" (where, cat, ...: ops that do no arithmetic): (r, r);
    * "int_to_float" (sin, sqrt, ...): bool/integer r becomes the default float dtype f:
      (opmath(f), f); floating r as "default";
    * "always_bool" (eq, lt, ...): (opmath(r), bool): compare in the promoted type;
    * "bool_to_long" (pow): bool r becomes (int64, int64); otherwise as "default";
    * "complex_to_float": as "default" (Ember has no complex dtypes).
    """
    table = _RULE_TABLES.get(rule)
    if table is not None:
        return table[result_type(*operands)]
    if rule == "int_to_float":  # depends on the default dtype, so not tabulated
        r = result_type(*operands)
        if r.category != 2:
            r = _get_default_dtype()
        return _OPMATH[r], r
    raise ValueError(f"elementwise_dtypes(): unknown rule {rule!r}; expected one of {ELEMENTWISE_RULES}")
