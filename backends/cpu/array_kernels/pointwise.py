"""Pointwise kernels against the array-module API (numpy on cpu, cupy on cuda).

Each kernel receives the output spec `(shape, dtype)` computed by the shared shape rule
and computes in the "opmath" type: float16/bfloat16 in float32, then rounds once to the
result dtype, as PyTorch does. Operands may be Python scalars (wrapped numbers).

Most ops are one array function applied by a generic kernel: `binary` (arithmetic in the
result dtype), `unary_float`, `compare` (computes in the operands' common dtype, gives bool),
`rounding`, `int_checked` (fmod/remainder) and `classify` (isnan...); the table names the
array function of each op through `Family` (context.py).
"""
from __future__ import annotations

from ember.core import dtype as _dt
from ember.core.type_promotion import promote_types

from .context import ArrayModule, Family, out


def cast_in(am: ArrayModule, x, dt):
    """Operand `x` (an array or a Python scalar) in compute dtype `dt`: an array is cast unless
    it already has it, a Python int wraps to an integer dtype, other scalars are left to the
    array function (they do not widen an array's dtype)."""
    if isinstance(x, am.ndarray):
        return x if x.dtype == dt else x.astype(dt)
    if dt.kind in "iu" and type(x) is int:
        # a Python int wraps to the integer dtype as in PyTorch (uint8 + -1 is 255), where
        # numpy would raise OverflowError
        return am.xp.asarray((x + 2**63) % 2**64 - 2**63, dtype=am.xp.int64).astype(dt)
    return x


def common_dtype(am: ArrayModule, a, b):
    """PyTorch's common dtype of two operands (comparisons compute in it), as a native dtype.

    Tiers: arrays with dimensions > 0-d arrays > Python scalars; a lower tier counts
    only when its category (bool < int < float) is higher.
    """
    tiers = []
    for x in (a, b):
        if isinstance(x, am.ndarray):
            d = am.to_ember[x.dtype]
            tiers.append((0 if x.ndim else 1, d.category, d))
        elif isinstance(x, bool):
            tiers.append((2, 0, _dt.bool))
        elif isinstance(x, int):
            tiers.append((2, 1, _dt.int64))
        else:
            tiers.append((2, 2, _dt.get_default_dtype()))
    tiers.sort(key=lambda t: t[0])
    (ta, ca, da), (tb, cb, db) = tiers
    if ta == tb:
        return am.native_of[promote_types(da, db)]
    return am.native_of[db if cb > ca else da]


# ---------------------------------------------------------------- generic kernels (Family entries)

def binary(am: ArrayModule, ufunc, spec, a, b, *rest):
    """`ufunc(a, b)` computed in the result dtype's compute dtype (mul, maximum, atan2, bitwise ops...)."""
    dt = am.native_of[spec[1]]
    ndarray = am.ndarray
    if a.__class__ is ndarray and b.__class__ is ndarray and a.dtype is dt and b.dtype is dt \
            and spec[1] not in am.lowp_dtypes:
        # the common case: operands already in the result dtype, which is also the
        # compute dtype; what follows would cast nothing
        r = ufunc(a, b)
        if r.__class__ is ndarray:      # 0-d operands give a numpy scalar
            return r
    cdt = am.f32 if dt in am.lowp else dt
    return out(am, ufunc(cast_in(am, a, cdt), cast_in(am, b, cdt)), dt)


def unary_float(am: ArrayModule, ufunc, spec, a):
    """`ufunc(a)` in the compute dtype, rounded once to the result dtype (exp, log, sin...)."""
    dt = am.native_of[spec[1]]
    cdt = am.f32 if dt in am.lowp else dt
    return out(am, ufunc(cast_in(am, a, cdt)), dt)


def compare(am: ArrayModule, ufunc, spec, a, b):
    """A bool result of `ufunc` over both operands in their common dtype (eq, lt, logical_and...)."""
    dt = common_dtype(am, a, b)
    return out(am, ufunc(cast_in(am, a, dt), cast_in(am, b, dt)), am.bool_)


def rounding(am: ArrayModule, ufunc, spec, a):
    """floor/ceil/round/trunc: a copy for integer and bool dtypes, `ufunc` in the compute dtype otherwise."""
    dt = am.native_of[spec[1]]
    xp = am.xp
    if xp.dtype(dt).kind in "iub":
        return out(am, xp.copy(a), dt)            # integers are already rounded
    cdt = am.f32 if dt in am.lowp else dt
    return out(am, ufunc(cast_in(am, a, cdt)), dt)


def int_checked(am: ArrayModule, ufunc, name, spec, a, b):
    """fmod/remainder: an integer division by zero raises, as in PyTorch."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    cdt = am.f32 if dt in am.lowp else dt
    a, b = cast_in(am, a, cdt), cast_in(am, b, cdt)
    if xp.dtype(cdt).kind in "iu" and bool(xp.any(xp.asarray(b) == 0)):
        from ember.core.errors import ArgumentValueError

        raise ArgumentValueError(f"{name}(): ZeroDivisionError (an integer division by zero)")
    return out(am, ufunc(a, b), dt)


def classify(am: ArrayModule, ufunc, spec, a):
    """isnan/isinf/isfinite/signbit: a bool result of one input, computed in its own dtype."""
    if a.dtype in am.lowp:
        a = a.astype(am.f32)
    elif a.dtype == am.bool_:
        a = a.astype(am.xp.uint8)
    return out(am, ufunc(a), am.bool_)


# ---------------------------------------------------------------- arithmetic

def add(am: ArrayModule, spec, a, b, alpha=1):
    dt = am.native_of[spec[1]]
    xp = am.xp
    ndarray = am.ndarray
    if alpha == 1 and a.__class__ is ndarray and b.__class__ is ndarray and a.dtype is dt and b.dtype is dt \
            and spec[1] not in am.lowp_dtypes:
        r = xp.add(a, b)                    # the common case, as in `binary`
        if r.__class__ is ndarray:
            return r
    cdt = am.f32 if dt in am.lowp else dt
    b = cast_in(am, b, cdt)
    if alpha != 1:
        b = xp.multiply(b, cast_in(am, alpha, cdt))
    return out(am, xp.add(cast_in(am, a, cdt), b), dt)


def sub(am: ArrayModule, spec, a, b, alpha=1):
    dt = am.native_of[spec[1]]
    xp = am.xp
    cdt = am.f32 if dt in am.lowp else dt
    b = cast_in(am, b, cdt)
    if alpha != 1:
        b = xp.multiply(b, alpha)
    return out(am, xp.subtract(cast_in(am, a, cdt), b), dt)


def div(am: ArrayModule, spec, a, b, rounding_mode=None):
    """True division, or floor/trunc division (an integer division by zero raises, as in PyTorch)."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    cdt = am.f32 if dt in am.lowp else dt
    a, b = cast_in(am, a, cdt), cast_in(am, b, cdt)
    if rounding_mode is None:
        return out(am, xp.true_divide(a, b), dt)
    if xp.dtype(cdt).kind in "iub" and bool(xp.any(xp.asarray(b) == 0)):
        from ember.core.errors import ArgumentValueError

        raise ArgumentValueError(f"div(rounding_mode={rounding_mode!r}): ZeroDivisionError (an integer "
                                 "division by zero)")
    if rounding_mode == "floor":
        return out(am, xp.floor_divide(a, b), dt)
    if xp.dtype(cdt).kind == "f":
        return out(am, xp.trunc(xp.true_divide(a, b)), dt)
    q = xp.floor_divide(a, b)
    fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
    return out(am, q + fix, dt)


def neg(am: ArrayModule, spec, a):
    return out(am, am.xp.negative(a), am.native_of[spec[1]])


def abs_(am: ArrayModule, spec, a):
    return out(am, am.xp.abs(a), am.native_of[spec[1]])


def pow_(am: ArrayModule, spec, a, b):
    xp = am.xp
    dt = am.native_of[spec[1]]
    cdt = am.f32 if dt in am.lowp else dt
    a, b = cast_in(am, a, cdt), cast_in(am, b, cdt)
    if xp.dtype(cdt).kind in "iu" and isinstance(b, am.ndarray):
        negative = b < 0
        if bool(xp.any(negative)):
            # PyTorch's integer pow: a ** -n is 1 for a == 1, +-1 for a == -1, else 0
            # (a negative Python-int exponent is rejected by the shape rule)
            r = xp.power(a, xp.where(negative, 0, b))
            a_b = xp.broadcast_to(a, r.shape)
            odd = (xp.broadcast_to(b, r.shape) % 2) != 0
            fix = xp.where(a_b == 1, 1, xp.where(a_b == -1, xp.where(odd, -1, 1), 0)).astype(r.dtype)
            return out(am, xp.where(negative, fix, r), dt)
    return out(am, xp.power(a, b), dt)


def where(am: ArrayModule, spec, c, a, b):
    dt = am.native_of[spec[1]]
    return out(am, am.xp.where(c, cast_in(am, a, dt), cast_in(am, b, dt)), dt)


# ---------------------------------------------------------------- unary ops of more than one array call

def frac(am: ArrayModule, spec, a):
    """a - trunc(a), in the compute dtype."""
    xp = am.xp
    dt = am.native_of[spec[1]]
    x = cast_in(am, a, am.f32 if dt in am.lowp else dt)
    return out(am, xp.subtract(x, xp.trunc(x)), dt)


def rsqrt(am: ArrayModule, spec, a):
    """1 / sqrt(a), in the compute dtype (not a primitive, but one array call on cpu/cuda)."""
    dt = am.native_of[spec[1]]
    x = cast_in(am, a, am.f32 if dt in am.lowp else dt)
    return out(am, 1.0 / am.xp.sqrt(x), dt)


def sigmoid(am: ArrayModule, spec, a):
    """1 / (1 + exp(-a)), in the compute dtype (not a primitive, but one array call on cpu/cuda)."""
    dt = am.native_of[spec[1]]
    x = cast_in(am, a, am.f32 if dt in am.lowp else dt)
    return out(am, 1.0 / (1.0 + am.xp.exp(-x)), dt)


def relu(am: ArrayModule, spec, a):
    """max(a, 0) keeping -0.0 and NaN, as torch's relu does.

    maximum(0, a) does so on numpy's x86 float32/64 and integer loops (`am.exact_maximum`);
    float16, other machines (ARM's max orders -0 below +0) and other array modules take the select.
    """
    dt = am.native_of[spec[1]]
    if a.dtype in am.exact_maximum:
        return out(am, am.xp.maximum(a.dtype.type(0), a), dt)
    return out(am, am.xp.where(a < 0, am.xp.zeros((), a.dtype), a), dt)


def logical_not(am: ArrayModule, spec, a):
    return out(am, am.xp.logical_not(a), am.bool_)


def bitwise_not(am: ArrayModule, spec, a):
    return out(am, am.xp.invert(a), am.native_of[spec[1]])


KERNELS = {
    "add.Tensor": add, "sub.Tensor": sub, "mul.Tensor": Family(binary, "multiply"),
    "div.Tensor_mode": div, "neg": neg, "abs": abs_, "pow.Tensor_Tensor": pow_,
    "maximum": Family(binary, "maximum"), "minimum": Family(binary, "minimum"), "where.self": where,
    "eq.Tensor": Family(compare, "equal"), "ne.Tensor": Family(compare, "not_equal"),
    "lt.Tensor": Family(compare, "less"), "le.Tensor": Family(compare, "less_equal"),
    "gt.Tensor": Family(compare, "greater"), "ge.Tensor": Family(compare, "greater_equal"),
    "exp": Family(unary_float, "exp"), "log": Family(unary_float, "log"), "sqrt": Family(unary_float, "sqrt"),
    "tanh": Family(unary_float, "tanh"), "sin": Family(unary_float, "sin"), "cos": Family(unary_float, "cos"),
    "reciprocal": Family(unary_float, "reciprocal"), "log1p": Family(unary_float, "log1p"),
    "expm1": Family(unary_float, "expm1"), "log2": Family(unary_float, "log2"),
    "log10": Family(unary_float, "log10"), "exp2": Family(unary_float, "exp2"),
    "sinh": Family(unary_float, "sinh"), "cosh": Family(unary_float, "cosh"),
    "asin": Family(unary_float, "arcsin"), "acos": Family(unary_float, "arccos"),
    "atan": Family(unary_float, "arctan"), "asinh": Family(unary_float, "arcsinh"),
    "acosh": Family(unary_float, "arccosh"), "atanh": Family(unary_float, "arctanh"),
    "tan": Family(unary_float, "tan"),
    "floor": Family(rounding, "floor"), "ceil": Family(rounding, "ceil"), "round": Family(rounding, "round"),
    "trunc": Family(rounding, "trunc"), "frac": frac,
    "atan2": Family(binary, "arctan2"), "hypot": Family(binary, "hypot"),
    "fmod.Tensor": Family(int_checked, "fmod", ("fmod",)),
    "remainder.Tensor": Family(int_checked, "remainder", ("remainder",)),
    "logical_not": logical_not, "logical_and": Family(compare, "logical_and"),
    "logical_or": Family(compare, "logical_or"), "logical_xor": Family(compare, "logical_xor"),
    "bitwise_and.Tensor": Family(binary, "bitwise_and"), "bitwise_or.Tensor": Family(binary, "bitwise_or"),
    "bitwise_xor.Tensor": Family(binary, "bitwise_xor"), "bitwise_not": bitwise_not,
    "isnan": Family(classify, "isnan"), "isinf": Family(classify, "isinf"),
    "isfinite": Family(classify, "isfinite"), "signbit": Family(classify, "signbit"),
    # not primitives, but one array call each on cpu/cuda
    "rsqrt": rsqrt, "sigmoid": sigmoid, "relu": relu,
}
