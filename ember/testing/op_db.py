"""An OpInfo-style database of sample inputs for every registered operator.

`OP_DB` holds one `OpInfo` per registry op (`ember.dispatcher.ALL_OPS`), in-place twins
included; ops left out are listed, with the reason, in `EXCLUDED`. The conformance tests
of this package (`pytest --pyargs ember.testing --ember-device=NAME`) run them differentially
against PyTorch (torch==2.13.0, CPU build, the oracle) on the device under test:

    values (value, dtype, shape) on a real device, layouts (shape, dtype, strides) on meta,
    gradients against torch, gradcheck in float64, second-order gradients, error inputs.

A sample's tensor arguments are `T` placeholders holding a numpy array of the values the op
sees and a layout ("c" contiguous, "t" a transposed view, "s" a strided slice, "e" an
expanded view); `materialize` builds the same tensors, from the same data, in either
framework and on any device, so ember and torch see identical inputs. Data comes from a
numpy RNG seeded per (op, dtype). Tolerances live in `ember.testing.tolerances`.
"""
from __future__ import annotations

import dataclasses
import operator as _operator
import zlib
from typing import Callable

import ml_dtypes
import numpy as np

from .tolerances import GRAD_TOL, LINALG_TOL, POW_GRAD_TOL, REDUCTION_TOL, SOFTMAX_TOL, VALUE_TOL  # noqa: F401

# ------------------------------------------------------------------------------------ dtypes
FLOAT = ("float32", "float64", "float16", "bfloat16")
LOWP = ("float16", "bfloat16")
ALL = FLOAT + ("int64", "int32", "uint8", "bool")
NUM = FLOAT + ("int64", "int32", "uint8")          # no bool
SIGNED = FLOAT + ("int64", "int32")
FLOAT_INT_BOOL = FLOAT + ("int64", "bool")
GRAD_DTYPES = ("float32", "float64")

NP_DTYPE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
            "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
            "bool": np.bool_}

# assert_close tolerances (rtol, atol) per result dtype: see ember.testing.tolerances
DEFAULT_TOL = VALUE_TOL


def is_float(dtype: str) -> bool:
    return dtype in FLOAT


# ------------------------------------------------------------------------- sample model
@dataclasses.dataclass
class T:
    """A tensor argument: the values the op sees, their layout, whether it is a grad input.

    layout: "c" contiguous; "t" a transposed view of a contiguous tensor; "s" every other
    element of the last dimension of a wider tensor; "e" `arr` expanded to `expand`.
    """
    arr: np.ndarray
    layout: str = "c"
    grad: bool = False
    expand: tuple | None = None

    @property
    def values(self) -> np.ndarray:
        return np.broadcast_to(self.arr, self.expand) if self.layout == "e" else self.arr

    @property
    def dtype(self) -> str:
        return dtype_name(self.arr.dtype)

    def base_array(self) -> np.ndarray:
        """The contiguous array the leaf tensor holds (the layout view is taken from it)."""
        a = self.arr
        if self.layout == "t":
            return np.array(np.swapaxes(a, -1, -2), copy=True, order="C")
        if self.layout == "s":
            base = np.empty(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
            base[..., ::2] = a
            base[..., 1::2] = a[..., ::-1] if a.shape[-1] else a
            return base
        return np.array(a, copy=True, order="C")     # (ascontiguousarray makes 0-d arrays 1-d)


@dataclasses.dataclass
class DT:
    """A dtype argument, translated to ember.<name> / torch.<name>."""
    name: str


class _Device:
    """The device argument of factories: the device under test."""

    def __repr__(self) -> str:
        return "DEVICE"


DEVICE = _Device()


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""
    gradcheck: bool = True          # no ties or kinks: finite differences are meaningful
    fn: Callable | None = None      # overrides OpInfo.call for this sample (operators, methods)
    meta: bool = True               # also run this sample on the meta device

    def tensors(self):
        return [a for a in _walk(self.args) if isinstance(a, T)] + \
               [a for a in _walk(tuple(self.kwargs.values())) if isinstance(a, T)]

    @property
    def has_grad(self) -> bool:
        return any(t.grad for t in self.tensors())

    def numel(self) -> int:
        return sum(int(np.prod(t.values.shape)) for t in self.tensors())


def _walk(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _walk(v)
        else:
            yield v


@dataclasses.dataclass
class ErrorInput:
    sample: Sample
    exc: type                                  # the exception class torch raises
    match: tuple[str, ...] = ()               # substrings of ember's message (the op name, the argument)


@dataclasses.dataclass
class OpInfo:
    name: str                                   # registry name, e.g. "add.Tensor"
    call: Callable                              # call(module, *args, **kwargs); module is ember or torch
    samples: Callable                           # samples(rng, dtype) -> list[Sample]
    dtypes: tuple = FLOAT
    torch_call: Callable | None = None         # when torch spells it differently
    grad: bool = False                          # differentiable: gradient, gradcheck tests
    inplace: bool = False                       # first argument is written in place
    kind: str = "values"                        # values | shape_only | random
    tol: dict = dataclasses.field(default_factory=dict)
    grad_tol: dict = dataclasses.field(default_factory=dict)
    errors: Callable | None = None              # errors(rng) -> list[ErrorInput]
    second_order: bool = False
    xfail: dict = dataclasses.field(default_factory=dict)   # {(test kind, dtype or None): reason}
    # leaves whose torch gradient is wrong ({leaf index: reason}); gradcheck covers them instead
    torch_grad_wrong: dict = dataclasses.field(default_factory=dict)

    def tcall(self):
        return self.torch_call or self.call

    def rng(self, dtype: str, salt: str = "") -> np.random.Generator:
        return np.random.default_rng(zlib.crc32(f"{self.name}:{dtype}:{salt}".encode()))


# ----------------------------------------------------------------------------- data helpers
def dtype_name(np_dtype) -> str:
    for name, d in NP_DTYPE.items():
        if np.dtype(d) == np.dtype(np_dtype):
            return name
    raise KeyError(np_dtype)


def make(rng, shape, dtype: str, *, low=-2.0, high=2.0, domain: str = "any") -> np.ndarray:
    """Random data of `dtype`; domain: any | positive | nonzero | unit (in (-1, 1)) | above1 (floats > 1)."""
    shape = tuple(shape)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("int64", "int32", "int16", "int8", "uint8"):
        lo, hi = (int(low) - 2, int(high) + 3)
        if dtype == "uint8" or domain == "positive":
            lo = 1 if domain in ("positive", "nonzero") else 0
        arr = rng.integers(lo, hi + 1, size=shape)
        if domain == "nonzero":
            arr = np.where(arr == 0, 1, arr)
        return arr.astype(NP_DTYPE[dtype])
    if domain == "positive":
        arr = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        arr = rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "unit":
        arr = rng.uniform(-0.9, 0.9, shape)
    elif domain == "above1":
        arr = rng.uniform(1.2, 3.0, shape)
    else:
        arr = rng.uniform(low, high, shape)
        # keep values away from 0 and from each other's kinks: spread, no exact zeros
        arr = np.where(np.abs(arr) < 0.05, 0.3, arr)
    return np.asarray(arr, dtype=np.float64).astype(NP_DTYPE[dtype])


def _modname(module) -> str:
    return module.__name__.split(".")[0]


def to_tensor(module, arr: np.ndarray, device: str = "cpu", requires_grad: bool = False):
    """A tensor of `module` (ember or torch) holding a copy of `arr`."""
    if _modname(module) == "torch":
        if arr.dtype == ml_dtypes.bfloat16:
            t = module.from_numpy(np.array(arr, dtype=np.float32)).to(module.bfloat16)
        else:
            t = module.from_numpy(np.array(arr, copy=True))
        t = t.to(device)
    else:
        t = module.tensor(np.array(arr, copy=True), device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def apply_layout(x, t: T):
    if t.layout == "t":
        return x.transpose(-1, -2)
    if t.layout == "s":
        return x[..., ::2]
    if t.layout == "e":
        return x.expand(*t.expand)
    return x


def materialize(module, sample: Sample, device: str = "cpu", *, requires_grad: bool = False,
                inplace: bool = False, leaves_in=None):
    """(args, kwargs, leaves) for `module`; leaves are the grad-requiring base tensors.

    `leaves_in` reuses given leaf tensors (gradcheck perturbs them in place).
    """
    leaves: list = []
    first = [True]
    supplied = iter(leaves_in) if leaves_in is not None else None

    def conv(v):
        if isinstance(v, T):
            is_first, first[0] = first[0], False
            rg = requires_grad and v.grad
            if rg and supplied is not None:
                leaf = next(supplied)
            else:
                leaf = to_tensor(module, v.base_array(), device, rg)
            x = leaf
            if rg:
                leaves.append(leaf)
            if inplace and is_first and rg:
                x = x.clone()        # a leaf that requires grad cannot be written in place
            return apply_layout(x, v)
        if isinstance(v, DT):
            return getattr(module, v.name)
        if v is DEVICE:
            return device
        if isinstance(v, list):
            return [conv(a) for a in v]
        if isinstance(v, tuple) and any(isinstance(a, (T, DT)) for a in v):
            return tuple(conv(a) for a in v)
        return v

    args = tuple(conv(a) for a in sample.args)
    kwargs = {k: conv(v) for k, v in sample.kwargs.items()}
    return args, kwargs, leaves


# --------------------------------------------------------------------------- call helpers
def fn(name: str) -> Callable:
    """module.name(*args, **kwargs)."""
    def call(m, *a, **k):
        return getattr(m, name)(*a, **k)
    call.__name__ = name
    return call


def method(name: str) -> Callable:
    """args[0].name(*args[1:], **kwargs)."""
    def call(m, x, *a, **k):
        return getattr(x, name)(*a, **k)
    call.__name__ = f"Tensor.{name}"
    return call


def aten(name: str) -> Callable:
    """torch.ops.aten.<name> (ops torch has no public function for)."""
    def call(m, *a, **k):
        packet, _, overload = name.partition(".")
        op = getattr(m.ops.aten, packet)
        return (getattr(op, overload) if overload else op)(*a, **k)
    call.__name__ = f"aten.{name}"
    return call


# ---------------------------------------------------------------------- sample generators
def _d(rng, dtype, domain):
    return lambda shape, dom=None: make(rng, shape, dtype, domain=dom or domain)


def mixed_dtype_pairs():
    """(lhs dtype, rhs dtype, rhs is 0-d) pairs exercising type promotion."""
    return [("int64", "float32", False), ("float16", "float32", True), ("int64", "float64", True),
            ("bool", "int64", False), ("float32", "float64", False), ("bfloat16", "float16", False),
            ("uint8", "int64", True), ("int32", "float16", False)]


def binary_samples(*, domain="any", rhs_domain=None, scalars=(2, 2.5, True), grad=True, mixed=True,
                   int_rhs_domain=None, ties=False, no_bool=False):
    """Samples of a broadcasting binary op (self, other): shapes, 0-d, empty, layouts, scalars."""
    def gen(rng, dtype):
        g = grad and is_float(dtype)
        rdom = rhs_domain or domain
        if not is_float(dtype) and int_rhs_domain:
            rdom = int_rhs_domain
        a = _d(rng, dtype, domain)
        b = _d(rng, dtype, rdom)
        S = [
            Sample((T(a((2, 3)), grad=g), T(b((2, 3)), grad=g)), desc="same shape"),
            Sample((T(a((2, 1, 3)), grad=g), T(b((4, 1)), grad=g)), desc="broadcast both"),
            Sample((T(a((3,)), grad=g), T(b((2, 3)), grad=g)), desc="broadcast self"),
            Sample((T(a(()), grad=g), T(b((2, 3)), grad=g)), desc="0-d self"),
            Sample((T(a((2, 3)), grad=g), T(b(()), grad=g)), desc="0-d other"),
            Sample((T(a(()), grad=g), T(b(()), grad=g)), desc="0-d both"),
            Sample((T(a((0, 3)), grad=g), T(b((3,)), grad=g)), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), T(b((3, 2)), "t", grad=g)), desc="both transposed"),
            Sample((T(a((2, 3)), "t", grad=g), T(b((2, 3)), grad=g)), desc="transposed and contiguous"),
            Sample((T(a((2, 3)), "s", grad=g), T(b((2, 3)), grad=g)), desc="strided slice"),
            Sample((T(a((3, 1)), "e", grad=g, expand=(3, 4)), T(b((3, 4)), grad=g)), desc="expanded self"),
            Sample((T(a((2, 1, 3)), "t", grad=g), T(b((2, 3, 1)), grad=g)), desc="transposed 3-d, broadcast"),
        ]
        for s in scalars:
            if isinstance(s, float) and not is_float(dtype) and rdom == "nonzero":
                continue
            S.append(Sample((T(a((2, 3)), grad=g), s), desc=f"python {type(s).__name__} other"))
        if ties and g:
            x = a((2, 3))
            S.append(Sample((T(x.copy(), grad=g), T(x.copy(), grad=g)), desc="all ties", gradcheck=False))
        if mixed and dtype == "float32":
            for lt, rt, zero_d in mixed_dtype_pairs():
                if no_bool and "bool" in (lt, rt):
                    continue
                ra = make(rng, (2, 3), lt, domain=domain)
                rb = make(rng, () if zero_d else (2, 3), rt, domain=rdom)
                S.append(Sample((T(ra, grad=grad and is_float(lt)), T(rb, grad=grad and is_float(rt))),
                                desc=f"mixed {lt} x {rt}{' 0-d' if zero_d else ''}"))
        return S
    return gen


def unary_samples(*, domain="any", grad=True, extra=None):
    def gen(rng, dtype):
        g = grad and is_float(dtype)
        a = _d(rng, dtype, domain)
        S = [
            Sample((T(a((2, 3)), grad=g),), desc="2-d"),
            Sample((T(a(()), grad=g),), desc="0-d"),
            Sample((T(a((0, 3)), grad=g),), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g),), desc="transposed"),
            Sample((T(a((2, 3)), "s", grad=g),), desc="strided slice"),
            Sample((T(a((3, 1)), "e", grad=g, expand=(3, 2)),), desc="expanded"),
            Sample((T(a((2, 1, 3)), grad=g),), desc="3-d"),
        ]
        if extra:
            S.extend(extra(rng, dtype))
        return S
    return gen


def _negatives(rng, dtype):
    """Inputs outside log/sqrt's domain (NaN results), values only."""
    if not is_float(dtype):
        return []
    return [Sample((T(make(rng, (2, 3), dtype)),), desc="negative inputs (nan)")]


# --------------------------------------------------------------------------- error helpers
def E(args, exc, *match, kwargs=None, fn=None, desc=""):
    return ErrorInput(Sample(tuple(args), kwargs or {}, desc=desc, fn=fn), exc, tuple(match))


def f32(rng, shape):
    return make(rng, shape, "float32")


def _broadcast_error(name, arg="other"):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))), T(f32(rng, (4,)))), RuntimeError, name, desc="shapes do not broadcast"),
                E((T(f32(rng, (2, 3))), "x"), TypeError, name, arg, desc="str operand")]
    return errors


def _inplace_errors(name):
    def errors(rng):
        return [E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, name, desc="output shape != broadcast shape"),
                E((T(make(rng, (2, 3), "int64")), T(f32(rng, (2, 3)))), RuntimeError, name,
                  desc="float result into int tensor")]
    return errors


def _unary_errors(name):
    def errors(rng):
        return [E(("x",), TypeError, name, desc="str input")]
    return errors


def _unary_inplace_errors(name, *, float_only=False):
    """In-place unary ops: a str self (through the unbound method), a result dtype self cannot hold."""
    def errors(rng):
        out = [E(("x",), TypeError, name, fn=lambda m, x: getattr(m.Tensor, name)(x), desc="str self")]
        if float_only:
            out.append(E((T(make(rng, (2, 3), "int64")),), RuntimeError, name, desc="float result into int64 self"))
        return out
    return errors


# ------------------------------------------------------------------------------- database
OP_DB: list[OpInfo] = []
# Ops without an OpInfo, each with the reason (test_every_registered_op_has_an_entry checks
# that every op in ember.dispatcher.ALL_OPS is in OP_DB or here). Today every op is covered.
EXCLUDED: dict[str, str] = {}


def add(info: OpInfo) -> OpInfo:
    OP_DB.append(info)
    return info


def _pointwise(name, public, *, dtypes=ALL, samples, grad=True, inplace=True, inplace_dtypes=None, tol=None,
               errors=None, inplace_errors=None, torch_name=None, second_order=False, grad_tol=None,
               inplace_samples=None, ioperator=None, inplace_xfail=None):
    """An out-of-place pointwise op and (inplace=True) its in-place twin `public_`."""
    base_op = name
    errs = errors or _broadcast_error(public)
    add(OpInfo(base_op, fn(public), samples, dtypes=dtypes, grad=grad, tol=tol or {}, errors=errs,
               torch_call=fn(torch_name) if torch_name else None, second_order=second_order,
               grad_tol=grad_tol or {}))
    if inplace:
        ip_name = base_op.replace(public, public + "_", 1)
        ip_samples = _inplace_only(inplace_samples or samples, public + "_")
        if ioperator is not None:
            ip_samples = _with_ioperator(ip_samples, ioperator)
        add(OpInfo(ip_name, method(public + "_"), ip_samples,
                   dtypes=inplace_dtypes or dtypes, grad=grad, inplace=True, xfail=inplace_xfail or {}, tol=tol or {},
                   errors=inplace_errors or _inplace_errors(public + "_"), grad_tol=grad_tol or {}))


def _inplace_only(gen, name):
    """Samples valid in place: self has the broadcast shape and a dtype the result casts to
    (torch decides: the sample must run through torch's `name` method)."""
    def inplace_gen(rng, dtype):
        out = []
        for s in gen(rng, dtype):
            ts = s.tensors()
            if not ts or s.args[0] is not ts[0]:
                continue
            self_t = s.args[0]
            shapes = [t.values.shape for t in ts]
            try:
                bshape = np.broadcast_shapes(*shapes)
            except ValueError:
                continue
            if self_t.values.shape != bshape or self_t.layout == "e":
                continue
            if not _runs_in_torch(s, name):
                continue
            out.append(dataclasses.replace(s, fn=None))
        return out
    return inplace_gen


def _runs_in_torch(sample: Sample, name: str) -> bool:
    """Whether torch accepts the in-place call (result dtype castable to self, ...)."""
    import torch

    args, kwargs, _ = materialize(torch, sample, inplace=True)
    try:
        getattr(args[0], name)(*args[1:], **kwargs)
    except (RuntimeError, TypeError):
        return False
    return True


def _with_ioperator(gen, iop):
    """In-place samples plus one through the augmented-assignment operator (`x += y`)."""
    def wrapped(rng, dtype):
        S = gen(rng, dtype)
        g = is_float(dtype)
        S.append(Sample((T(make(rng, (2, 3), dtype, domain="positive"), grad=g),
                         T(make(rng, (3,), dtype, domain="positive"), grad=g)), desc=f"operator {iop.__name__}",
                        fn=lambda m, x, y: iop(x, y)))
        return S
    return wrapped


# ---- arithmetic
def _alpha_samples(base):
    def gen(rng, dtype):
        S = base(rng, dtype)
        g = is_float(dtype)
        if dtype != "bool":
            S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)),
                            {"alpha": 2 if not is_float(dtype) else 0.5}, desc="alpha"))
        return S
    return gen


def _operator_samples(op_sym):
    """Python operators: reflected with a scalar on the left."""
    import operator as _o
    ops = {"+": (_o.add, lambda x, y: y + x), "-": (_o.sub, lambda x, y: y - x), "*": (_o.mul, lambda x, y: y * x),
           "/": (_o.truediv, lambda x, y: y / x), "**": (_o.pow, lambda x, y: y ** x),
           "//": (_o.floordiv, lambda x, y: y // x)}
    fwd, rev = ops[op_sym]

    def extra(rng, dtype, domain="any"):
        g = is_float(dtype)
        a = make(rng, (2, 3), dtype, domain=domain)
        b = make(rng, (2, 3), dtype, domain=domain)
        return [Sample((T(a, grad=g), T(b, grad=g)), desc=f"operator {op_sym}", fn=lambda m, x, y: fwd(x, y)),
                Sample((T(a, grad=g), 3), desc=f"reflected operator 3 {op_sym} t", fn=lambda m, x, y: rev(x, y))]
    return extra


def _with(base, *extras):
    def gen(rng, dtype):
        S = base(rng, dtype)
        for e in extras:
            S.extend(e(rng, dtype))
        return S
    return gen


def _sub_errors(rng):
    return _broadcast_error("sub")(rng) + [
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), RuntimeError, "sub", desc="bool - bool"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "int64"))), RuntimeError, "sub", desc="bool - int"),
        E((T(make(rng, (2,), "float32")), True), RuntimeError, "sub", desc="float - python bool")]


_pointwise("add.Tensor", "add", dtypes=ALL, second_order=False, ioperator=_operator.iadd,
           samples=_with(_alpha_samples(binary_samples()), _operator_samples("+")))
_pointwise("sub.Tensor", "sub", dtypes=NUM, errors=_sub_errors, ioperator=_operator.isub,
           samples=_with(_alpha_samples(binary_samples(scalars=(2, 2.5), no_bool=True)), _operator_samples("-")))
_pointwise("mul.Tensor", "mul", dtypes=ALL, second_order=True, ioperator=_operator.imul,
           samples=_with(binary_samples(), _operator_samples("*")))


def _div_samples(rng, dtype):
    S = binary_samples(rhs_domain="nonzero", scalars=(2, 2.5))(rng, dtype)
    S += _operator_samples("/")(rng, dtype, "nonzero")
    for mode in ("trunc", "floor") if dtype != "bool" else ():
        a = make(rng, (2, 3), dtype, low=-5, high=5)
        b = make(rng, (2, 3), dtype, domain="nonzero")
        S.append(Sample((T(a, grad=False), T(b, grad=False)), {"rounding_mode": mode}, desc=f"rounding {mode}"))
        S.append(Sample((T(make(rng, (3, 1), dtype, low=-5, high=5)), 2), {"rounding_mode": mode},
                        desc=f"rounding {mode} by scalar"))
    if is_float(dtype):
        S.append(Sample((T(make(rng, (3,), dtype)), T(np.zeros(3, NP_DTYPE[dtype]))), desc="division by zero"))
    return S


def _div_errors(rng):
    return _broadcast_error("div")(rng) + [
        E((T(f32(rng, (2,))), 2), RuntimeError, "div", "rounding_mode", kwargs={"rounding_mode": "bad"},
          desc="bad rounding mode"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "div",
          kwargs={"rounding_mode": "trunc"}, desc="bool with rounding")]


_pointwise("div.Tensor_mode", "div", dtypes=ALL, samples=_div_samples, errors=_div_errors, ioperator=_operator.itruediv,
           inplace_dtypes=FLOAT)


def _floor_divide_samples(rng, dtype):
    S = binary_samples(rhs_domain="nonzero", scalars=(2,), grad=False)(rng, dtype)
    S += [s for s in _operator_samples("//")(rng, dtype, "nonzero")]
    a = make(rng, (2, 3), dtype, low=-6, high=6)
    S.append(Sample((T(a), T(make(rng, (2, 3), dtype, domain="nonzero"))), desc="negative quotients"))
    return S


add(OpInfo("floor_divide", fn("floor_divide"), _floor_divide_samples, dtypes=NUM,
           errors=lambda rng: _broadcast_error("floor_divide")(rng) + [
               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "floor_divide",
                 desc="bool")]))


def _rsub_samples(rng, dtype):
    S = binary_samples(scalars=(2, 2.5), no_bool=True)(rng, dtype)
    g = is_float(dtype)
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), T(make(rng, (3,), dtype), grad=g)),
                    {"alpha": 2}, desc="alpha"))
    return S


add(OpInfo("rsub.Tensor", fn("rsub"), _rsub_samples, dtypes=NUM, grad=True,
           errors=lambda rng: _broadcast_error("rsub")(rng) + [
               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), RuntimeError, "sub", desc="bool")]))


def _neg_errors(rng):
    return _unary_errors("neg")(rng) + [E((T(make(rng, (2,), "bool")),), RuntimeError, "neg", desc="bool")]


def _unary_op_samples(op_sym):
    import operator as _o
    f = {"-": _o.neg, "abs": _o.abs}[op_sym]

    def extra(rng, dtype):
        return [Sample((T(make(rng, (2, 3), dtype), grad=is_float(dtype)),), desc=f"operator {op_sym}",
                       fn=lambda m, x: f(x))]
    return extra


_pointwise("neg", "neg", dtypes=SIGNED, samples=unary_samples(extra=_unary_op_samples("-")), errors=_neg_errors,
           inplace_errors=lambda rng: _unary_inplace_errors("neg_")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "neg", desc="bool")],
           inplace_samples=unary_samples())
_pointwise("abs", "abs", dtypes=SIGNED, samples=unary_samples(extra=_unary_op_samples("abs")),
           errors=lambda rng: _unary_errors("abs")(rng) + [
               E((T(make(rng, (2,), "bool")),), NotImplementedError, "abs", desc="bool")],
           inplace_errors=_unary_inplace_errors("abs_"), inplace_samples=unary_samples())


def _sign_extra(rng, dtype):
    if not is_float(dtype):
        return [Sample((T(np.array([-2, 0, 3], NP_DTYPE[dtype]) if dtype != "uint8" else np.array([0, 3], np.uint8)),),
                       desc="with zero")]
    return [Sample((T(np.array([-1.5, 0.0, 2.0, np.nan], NP_DTYPE[dtype])),), desc="zero and nan")]


_pointwise("sign", "sign", dtypes=ALL, samples=unary_samples(extra=_sign_extra), errors=_unary_errors("sign"),
           inplace_errors=_unary_inplace_errors("sign_"))


def _pow_samples(rng, dtype):
    if is_float(dtype):
        S = binary_samples(domain="positive", rhs_domain="any", scalars=(2, 0.5, 3, -1))(rng, dtype)
        S += _operator_samples("**")(rng, dtype, "positive")
        S.append(Sample((T(make(rng, (2, 3), dtype, domain="positive"), grad=True), 0), desc="exponent 0"))
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=False), T(make(rng, (2, 3), dtype), grad=False)),
                        desc="negative base (nan)", gradcheck=False))
        S.append(Sample((2.0, T(make(rng, (2, 3), dtype), grad=True)), desc="python scalar base",
                        fn=lambda m, x, y: m.pow(x, y)))
        S.append(Sample((T(np.array([0.0, 0.0, 2.0], NP_DTYPE[dtype]), grad=True),
                         T(np.array([0.0, 2.0, 0.0], NP_DTYPE[dtype]), grad=True)), desc="zeros", gradcheck=False))
        return S
    if dtype == "bool":
        return []
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)          # noqa: E731
    e = lambda shape: make(rng, shape, dtype, low=0, high=0).clip(0, 3)  # noqa: E731
    return [Sample((T(a((2, 3))), T(e((2, 3)))), desc="int"), Sample((T(a((2, 1))), T(e((3,)))), desc="broadcast"),
            Sample((T(a((2, 3))), T(make(rng, (2, 3), dtype, low=-1, high=-1).clip(-3, 3))),
                   desc="negative tensor exponents"),
            Sample((T(a(())), T(e((2, 3)))), desc="0-d"), Sample((T(a((2, 3))), 2), desc="scalar exponent"),
            Sample((T(a((2, 3))), 0.5), desc="float scalar exponent"),
            Sample((T(a((2, 3))), T(e((2, 3)))), desc="operator **", fn=lambda m, x, y: x ** y)]


def _pow_errors(rng):
    return _broadcast_error("pow", "exponent")(rng) + [
        E((T(make(rng, (2,), "int64")), -1), RuntimeError, "pow", "exponent", desc="int to negative int power"),
        E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, "pow", desc="bool")]


_pointwise("pow.Tensor_Tensor", "pow", dtypes=NUM, samples=_pow_samples, errors=_pow_errors, second_order=True,
           ioperator=_operator.ipow,
           inplace_dtypes=FLOAT, grad_tol=POW_GRAD_TOL)

for _nm in ("maximum", "minimum"):
    add(OpInfo(_nm, fn(_nm), binary_samples(scalars=(), ties=True), dtypes=ALL, grad=True,
               errors=_broadcast_error(_nm)))


def _where_samples(rng, dtype):
    g = is_float(dtype)
    c = lambda shape: make(rng, shape, "bool")       # noqa: E731
    a = lambda shape: make(rng, shape, dtype)        # noqa: E731
    S = [Sample((T(c((2, 3))), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="same shape"),
         Sample((T(c((2, 1, 3))), T(a((4, 1)), grad=g), T(a((3,)), grad=g)), desc="broadcast"),
         Sample((T(c(())), T(a((2, 3)), grad=g), T(a(()), grad=g)), desc="0-d"),
         Sample((T(c((0, 3))), T(a((3,)), grad=g), T(a((0, 3)), grad=g)), desc="empty"),
         Sample((T(c((3, 2)), "t"), T(a((3, 2)), "t", grad=g), T(a((3, 2)), "s", grad=g)), desc="non-contiguous"),
         Sample((T(c((2, 3))), T(a((2, 3)), grad=g), 0), desc="python int other"),
         Sample((T(c((2, 3))), 1.5, T(a((2, 3)), grad=g)), desc="python float self"),
         Sample((T(c((2, 3))), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="method",
                fn=lambda m, cond, x, y: x.where(cond, y))]
    if dtype == "float32":
        S.append(Sample((T(c((2, 3))), T(make(rng, (2, 3), "int64")), T(a((2, 3)), grad=True)),
                        desc="mixed int64/float32"))
        S.append(Sample((T(c((2, 3))), T(make(rng, (2, 3), "float16"), grad=True), T(a(()), grad=True)),
                        desc="mixed float16/0-d float32"))
    return S


add(OpInfo("where.self", fn("where"), _where_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2,))), T(f32(rng, (2,))), T(f32(rng, (2,)))), RuntimeError, "where", "condition",
                 desc="float condition"),
               E((T(make(rng, (2,), "bool")), T(f32(rng, (2,))), T(f32(rng, (3,)))), RuntimeError, "where",
                 desc="shapes")]))


def _clamp_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-3, high=3)   # noqa: E731
    lo = lambda shape: make(rng, shape, dtype, low=-1, high=-0.5)  # noqa: E731
    hi = lambda shape: make(rng, shape, dtype, low=0.5, high=1)   # noqa: E731
    if not is_float(dtype):
        lo = lambda shape: np.full(shape, -1 if dtype != "uint8" else 1, NP_DTYPE[dtype])  # noqa: E731
        hi = lambda shape: np.full(shape, 2, NP_DTYPE[dtype])  # noqa: E731
    S = [Sample((T(a((2, 3)), grad=g), T(lo((2, 3)), grad=g), T(hi((2, 3)), grad=g)), desc="tensor bounds"),
         Sample((T(a((2, 3)), grad=g), T(lo((3,)), grad=g), None), desc="min only, broadcast"),
         Sample((T(a((2, 3)), grad=g), None, T(hi(()), grad=g)), desc="max only, 0-d"),
         Sample((T(a((2, 3)), grad=g), -1, 2), desc="python int bounds"),
         Sample((T(a((0, 3)), grad=g), T(lo((3,)), grad=g), T(hi((3,)), grad=g)), desc="empty"),
         Sample((T(a((3, 2)), "t", grad=g), T(lo((3, 2)), "s", grad=g), T(hi((3, 2)), grad=g)), desc="non-contiguous"),
         Sample((T(a(()), grad=g), T(lo(()), grad=g), T(hi(()), grad=g)), desc="0-d")]
    if g:
        S.append(Sample((T(a((2, 3)), grad=g), 0.5, -0.5), desc="min > max"))
        S.append(Sample((T(a((2, 3)), grad=g), T(hi((2, 3)), grad=g), T(lo((2, 3)), grad=g)), desc="min > max tensors"))
        S.append(Sample((T(a((2, 3)), grad=g), -0.25, 0.75), desc="python float bounds"))
    if dtype == "float32":
        S.append(Sample((T(make(rng, (2, 3), "int64")), 0.5, None), desc="int self float bound"))
        S.append(Sample((T(a((2, 3)), grad=True), T(make(rng, (3,), "float64", low=-1, high=-0.5), grad=True), None),
                        desc="mixed float32 self, float64 min"))
    return S


_pointwise("clamp.Tensor", "clamp", dtypes=NUM, samples=_clamp_samples,
           errors=lambda rng: [E((T(f32(rng, (2,))), None, None), RuntimeError, "clamp", desc="no bounds"),
                               E((T(f32(rng, (2,))), "x", None), TypeError, "clamp", "min", desc="str bound"),
                               E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))),
                                 NotImplementedError, "clamp", desc="bool, both bounds"),
                               E((T(make(rng, (2,), "bool")), True, None), NotImplementedError, "clamp",
                                 desc="bool, python bool bound")],
           inplace_dtypes=NUM)

# ---- unary floating
_UNARY_FLOAT = {"exp": "any", "log": "positive", "sqrt": "positive", "rsqrt": "positive", "tanh": "any",
                "sigmoid": "any", "sin": "any", "cos": "any"}
for _nm, _dom in _UNARY_FLOAT.items():
    _extra = _negatives if _dom == "positive" else None
    _pointwise(_nm, _nm, dtypes=FLOAT + ("int64", "bool") if _dom == "any" else FLOAT + ("int64",),
               samples=unary_samples(domain=_dom, extra=_extra), errors=_unary_errors(_nm),
               inplace_errors=_unary_inplace_errors(_nm + "_", float_only=True), inplace_dtypes=FLOAT,
               second_order=_nm in ("tanh", "exp", "sigmoid"),
               inplace_samples=unary_samples(domain=_dom))

# more unary floating ops (issue 3): name -> domain of the float samples
_UNARY_FLOAT_MORE = {"reciprocal": "nonzero", "log1p": "unit", "expm1": "any", "log2": "positive",
                     "log10": "positive", "exp2": "any", "sinh": "any", "cosh": "any", "asin": "unit",
                     "acos": "unit", "atan": "any", "asinh": "any", "acosh": "above1", "atanh": "unit",
                     "tan": "unit"}
for _nm, _dom in _UNARY_FLOAT_MORE.items():
    _pointwise(_nm, _nm, dtypes=ALL, samples=unary_samples(domain=_dom, extra=_negatives),
               errors=_unary_errors(_nm), inplace_errors=_unary_inplace_errors(_nm + "_", float_only=True),
               inplace_dtypes=FLOAT, second_order=_nm in ("reciprocal", "asin", "tan"),
               inplace_samples=unary_samples(domain=_dom),
               # torch 2.13 has no derivative for these in-place twins ("not implemented")
               inplace_xfail={("grad", None): f"torch 2.13 has no derivative for {_nm}_ (not implemented)"}
               if _nm in ("asinh", "acosh", "atanh") else None)


def _square_extra(rng, dtype):
    return [Sample((T(make(rng, (2, 3), dtype), grad=is_float(dtype)),), desc="method",
                   fn=lambda m, x: x.square())]


_pointwise("square", "square", dtypes=ALL, samples=unary_samples(extra=_square_extra), errors=_unary_errors("square"),
           inplace_errors=lambda rng: _unary_inplace_errors("square_")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "square_", desc="bool (int64 result)")],
           inplace_dtypes=NUM, second_order=True)

# ---- rounding
def _round_extra(rng, dtype):
    if not is_float(dtype):
        return [Sample((T(make(rng, (2, 3), dtype, low=-6, high=6)),), desc="wide ints")]
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan], NP_DTYPE[dtype])
    return [Sample((T(ties),), desc="halves, signed zeros, inf and nan"),
            Sample((T(make(rng, (2, 3), dtype, low=-40, high=40), grad=True),), desc="wide values")]


for _nm in ("floor", "ceil", "round", "trunc"):
    _pointwise(_nm, _nm, dtypes=NUM, samples=unary_samples(extra=_round_extra),
               errors=lambda rng, _nm=_nm: _unary_errors(_nm)(rng) + [
                   E((T(make(rng, (2,), "bool")),), NotImplementedError, _nm, desc="bool")],
               inplace_errors=lambda rng, _nm=_nm: _unary_inplace_errors(_nm + "_")(rng) + [
                   E((T(make(rng, (2,), "bool")),), NotImplementedError, _nm, desc="bool")],
               inplace_samples=unary_samples())

_pointwise("frac", "frac", dtypes=FLOAT, samples=unary_samples(extra=_round_extra),
           errors=lambda rng: _unary_errors("frac")(rng) + [
               E((T(make(rng, (2,), "int64")),), NotImplementedError, "frac", desc="int64")],
           inplace_errors=lambda rng: _unary_inplace_errors("frac_")(rng) + [
               E((T(make(rng, (2,), "int64")),), NotImplementedError, "frac", desc="int64")],
           inplace_samples=unary_samples())

# ---- binary math
_pointwise("atan2", "atan2", dtypes=ALL, samples=binary_samples(scalars=()), inplace_dtypes=FLOAT)
def _hypot_samples(rng, dtype):
    S = binary_samples(scalars=(), mixed=False)(rng, dtype)
    if dtype == "float32":
        S.append(Sample((T(make(rng, (2, 3), "float16"), grad=True), T(make(rng, (2, 3), "float32"), grad=True)),
                        desc="mixed float16 x float32"))
    return S


_pointwise("hypot", "hypot", dtypes=FLOAT, samples=_hypot_samples,
           errors=lambda rng: _broadcast_error("hypot")(rng) + [
               E((T(make(rng, (2,), "int64")), T(make(rng, (2,), "int64"))), NotImplementedError, "hypot",
                 desc="int64")])


def _mod_samples(op_sym):
    def gen(rng, dtype):
        S = binary_samples(rhs_domain="nonzero", scalars=(2, 2.5, -3))(rng, dtype)
        g = is_float(dtype)
        a = make(rng, (2, 3), dtype, low=-6, high=6)
        b = make(rng, (2, 3), dtype, domain="nonzero")
        S.append(Sample((T(a, grad=g), T(b, grad=g)), desc="mixed signs"))
        if op_sym:
            S.append(Sample((T(a, grad=g), T(b, grad=g)), desc="operator %", fn=lambda m, x, y: x % y))
            # torch 2.13 has no derivative for remainder.Scalar_Tensor: values only
            S.append(Sample((T(b), 7), desc="reflected operator 7 % t", fn=lambda m, x, y: y % x))
        return S
    return gen


def _mod_errors(name):
    def errors(rng):
        return _broadcast_error(name)(rng) + [
            # (an integer division by zero raises too, but only on a device with data: tests/test_errors.py)
            E((T(make(rng, (2,), "bool")), T(make(rng, (2,), "bool"))), NotImplementedError, name, desc="bool")]
    return errors


_pointwise("fmod.Tensor", "fmod", dtypes=NUM, samples=_mod_samples(None), errors=_mod_errors("fmod"),
           inplace_dtypes=NUM)
_pointwise("remainder.Tensor", "remainder", dtypes=NUM, samples=_mod_samples("%"), errors=_mod_errors("remainder"),
           inplace_dtypes=NUM, ioperator=_operator.imod)

_pointwise("relu", "relu", dtypes=NUM, samples=unary_samples(
               extra=lambda rng, d: [Sample((T(np.array([-1, 0, 2], NP_DTYPE[d])),), desc="zero")]
               if d != "uint8" else []),
           errors=lambda rng: _unary_errors("relu")(rng) + [
               E((T(make(rng, (2,), "bool")),), RuntimeError, "relu", desc="bool")],
           inplace_errors=_unary_inplace_errors("relu_"))

# ---- comparisons
for _nm in ("eq", "ne", "lt", "le", "gt", "ge"):
    import operator as _operator
    _pyop = getattr(_operator, _nm)

    def _cmp_samples(rng, dtype, _pyop=_pyop, _nm=_nm):
        S = binary_samples(grad=False)(rng, dtype)
        x = make(rng, (2, 3), dtype)
        S.append(Sample((T(x), T(x.copy())), desc="equal values"))
        S.append(Sample((T(x), T(make(rng, (2, 3), dtype))), desc=f"operator {_nm}", fn=lambda m, a, b: _pyop(a, b)))
        if is_float(dtype):
            S.append(Sample((T(np.array([np.nan, 1.0, np.inf], NP_DTYPE[dtype])),
                             T(np.array([np.nan, np.nan, np.inf], NP_DTYPE[dtype]))), desc="nan and inf"))
        return S

    def _cmp_inplace(rng, dtype, _nm=_nm):
        return [s for s in _inplace_only(binary_samples(grad=False), f"{_nm}_")(rng, dtype)]

    add(OpInfo(f"{_nm}.Tensor", fn(_nm), _cmp_samples, dtypes=ALL, errors=_broadcast_error(_nm)))
    add(OpInfo(f"{_nm}_.Tensor", method(f"{_nm}_"), _cmp_inplace, dtypes=ALL, inplace=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, f"{_nm}_", desc="output shape")]))


# ---- logical, bitwise and classification ops
INTS_BOOL = ("int64", "int32", "uint8", "bool")


def _special_values(rng, dtype):
    """Zeros (False), and for floats signed zeros, infinities and NaN."""
    if is_float(dtype):
        v = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], NP_DTYPE[dtype])
    elif dtype == "bool":
        v = np.array([False, True, False])
    else:
        v = np.array([0, 1, 3, 0] if dtype == "uint8" else [0, -1, 3, 0], NP_DTYPE[dtype])
    return [Sample((T(v),), desc="zeros and special values")]


def _no_nan(rng, dtype):
    """The special values but NaN, whose sign bit depends on how each framework converts it."""
    (s,) = _special_values(rng, dtype)
    v = s.args[0].values
    return [Sample((T(v[~np.isnan(v.astype(np.float64))] if is_float(dtype) else v),), desc="special values but NaN")]


for _nm in ("isnan", "isinf", "isfinite", "signbit"):
    add(OpInfo(_nm, fn(_nm), unary_samples(grad=False, extra=_no_nan if _nm == "signbit" else _special_values),
               dtypes=ALL,
               errors=_unary_errors(_nm)))

_pointwise("logical_not", "logical_not", dtypes=ALL, grad=False, samples=unary_samples(grad=False, extra=_special_values),
           errors=_unary_errors("logical_not"), inplace_errors=_unary_inplace_errors("logical_not_"),
           inplace_samples=unary_samples(grad=False))


def _logical_samples(rng, dtype):
    S = binary_samples(grad=False, scalars=())(rng, dtype)
    a = _special_values(rng, dtype)[0].args[0]
    S.append(Sample((a, T(a.values[::-1].copy())), desc="zeros and special values"))
    return S


for _nm in ("logical_and", "logical_or", "logical_xor"):
    _pointwise(_nm, _nm, dtypes=ALL, grad=False, samples=_logical_samples,
               inplace_samples=binary_samples(grad=False, scalars=()),
               inplace_errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, f"{_nm}_", desc="output shape")])


def _bitwise_samples(sym):
    import operator as _o
    fwd = {"&": _o.and_, "|": _o.or_, "^": _o.xor}[sym]

    def gen(rng, dtype):
        S = binary_samples(grad=False, scalars=(2, True), mixed=False)(rng, dtype)
        x, y = make(rng, (2, 3), dtype), make(rng, (2, 3), dtype)
        S.append(Sample((T(x), T(y)), desc=f"operator {sym}", fn=lambda m, a, b: fwd(a, b)))
        S.append(Sample((T(x), 3), desc=f"reflected operator 3 {sym} t", fn=lambda m, a, b: fwd(b, a)))
        if dtype in ("int64", "float32"):       # float32: the dtype the coverage test inspects
            for lt, rt, zero_d in (("int64", "int32", False), ("uint8", "int64", True), ("bool", "int64", False),
                                   ("int32", "uint8", False)):
                S.append(Sample((T(make(rng, (2, 3), lt)), T(make(rng, () if zero_d else (2, 3), rt))),
                                desc=f"mixed {lt} x {rt}{' 0-d' if zero_d else ''}"))
        return S
    return gen


def _bitwise_errors(name):
    def errors(rng):
        i64 = lambda shape: make(rng, shape, "int64")     # noqa: E731
        return [E((T(i64((2, 3))), T(i64((4,)))), RuntimeError, name, desc="shapes do not broadcast"),
                E((T(i64((2, 3))), "x"), TypeError, name, "other", desc="str operand"),
            E((T(f32(rng, (2,))), T(f32(rng, (2,)))), NotImplementedError, name, desc="float32"),
            E((T(make(rng, (2,), "int64")), 2.5), NotImplementedError, name, desc="python float operand")]
    return errors


for _nm, _sym, _iop in (("and", "&", _operator.iand), ("or", "|", _operator.ior), ("xor", "^", _operator.ixor)):
    _pointwise(f"bitwise_{_nm}.Tensor", f"bitwise_{_nm}", dtypes=INTS_BOOL, grad=False,
               samples=_bitwise_samples(_sym), errors=_bitwise_errors(f"bitwise_{_nm}"), ioperator=_iop,
               inplace_errors=lambda rng, _nm=_nm: [
                   E((T(make(rng, (3,), "int64")), T(make(rng, (2, 3), "int64"))), RuntimeError, f"bitwise_{_nm}_",
                     desc="output shape != broadcast shape"),
                   E((T(make(rng, (2, 3), "bool")), T(make(rng, (2, 3), "int64"))), RuntimeError, f"bitwise_{_nm}_",
                     desc="int64 result into bool self"),
                   E((T(f32(rng, (2,))), T(f32(rng, (2,)))), NotImplementedError, f"bitwise_{_nm}", desc="float32")])

_pointwise("bitwise_not", "bitwise_not", dtypes=INTS_BOOL, grad=False,
           samples=unary_samples(grad=False, extra=lambda rng, d: _special_values(rng, d) + [
               Sample((T(make(rng, (2, 3), d)),), desc="operator ~", fn=lambda m, x: ~x)]),
           errors=lambda rng: _unary_errors("bitwise_not")(rng) + [
               E((T(f32(rng, (2,))),), NotImplementedError, "bitwise_not", desc="float32")],
           inplace_errors=lambda rng: _unary_inplace_errors("bitwise_not_")(rng) + [
               E((T(f32(rng, (2,))),), NotImplementedError, "bitwise_not", desc="float32")],
           inplace_samples=unary_samples(grad=False))


# ---- reductions
def _reduce_inputs(rng, dtype, g, *, empty=True):
    a = lambda shape: make(rng, shape, dtype)   # noqa: E731
    ins = [(T(a((2, 3)), grad=g), "2-d"), (T(a((2, 1, 3)), grad=g), "3-d"), (T(a(()), grad=g), "0-d"),
           (T(a((3, 2)), "t", grad=g), "transposed"), (T(a((2, 4)), "s", grad=g), "strided"),
           (T(a((3, 1)), "e", grad=g, expand=(3, 2)), "expanded")]
    if empty:
        ins.append((T(a((0, 3)), grad=g), "empty"))
    return ins


def _dims_for(t: T, *, allow_multi=True):
    nd = t.values.ndim
    if nd == 0:
        return [None, 0, -1] + ([(0,)] if allow_multi else [])
    out = [None, 0, -1]
    if allow_multi and nd >= 2:
        out += [(0, 1), (-1, 0)]
    return out


def _sum_samples(rng, dtype, *, mean=False):
    g = is_float(dtype)
    S = []
    for t, desc in _reduce_inputs(rng, dtype, g):
        for dim in _dims_for(t):
            for keepdim in (False, True):
                if dim is None and keepdim:
                    continue
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g),), desc="default dim", fn=lambda m, x: x.sum() if not mean
                    else x.mean()))
    if dtype != "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype)), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    if dtype == "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=True), 1), {"dtype": DT("float32")}, desc="dtype=float32"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), []), desc="dim=[]"))
    return S


def _reduce_dim_errors(name):
    def errors(rng):
        return [E((T(f32(rng, (2, 3))), 2), IndexError, name, desc="dim out of range"),
                E(("x",), TypeError, name, desc="str input")]
    return errors


add(OpInfo("sum.dim_IntList", fn("sum"), _sum_samples, dtypes=ALL, grad=True,
           tol=REDUCTION_TOL,
           errors=lambda rng: _reduce_dim_errors("sum")(rng) + [
               E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "sum", "dim", desc="repeated dim")]))
add(OpInfo("mean.dim", fn("mean"), lambda rng, d: _sum_samples(rng, d, mean=True), dtypes=FLOAT, grad=True,
           tol=REDUCTION_TOL,
           errors=lambda rng: _reduce_dim_errors("mean")(rng) + [
               E((T(make(rng, (2, 3), "int64")),), RuntimeError, "mean", "dtype", desc="int input")]))


def _amax_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _reduce_inputs(rng, dtype, g, empty=False):
        for dim in ([()] + _dims_for(t)[1:]):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty, non-empty reduction dim"))
    x = np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype]) if dtype != "bool" else make(rng, (2, 3), "bool")
    S.append(Sample((T(x, grad=g), 1), desc="ties", gradcheck=False))
    S.append(Sample((T(x, grad=g),), desc="ties, all dims", gradcheck=False))
    if g:
        S.append(Sample((T(np.array([1.0, np.nan, 2.0], NP_DTYPE[dtype])), 0), desc="nan propagates"))
    return S


for _nm in ("amax", "amin"):
    add(OpInfo(_nm, fn(_nm), _amax_samples, dtypes=ALL, grad=True,
               errors=lambda rng, _nm=_nm: _reduce_dim_errors(_nm)(rng) + [
                   E((T(f32(rng, (0, 3))), 0), IndexError, _nm, desc="empty reduction dim"),
                   E((T(f32(rng, (0, 3))),), RuntimeError, _nm, desc="empty, all dims")]))


def _max_dim_samples(rng, dtype, name):
    g = is_float(dtype)
    S = []
    for t, desc in _reduce_inputs(rng, dtype, g, empty=False):
        for dim in (0, -1):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty, non-empty reduction dim"))
    x = np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype])
    S.append(Sample((T(x, grad=g), 1), desc="ties: first index", gradcheck=False))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 1), desc="method", fn=lambda m, x, d: getattr(x, name)(d)))
    return S


def _max_all_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((t,), desc=desc) for t, desc in _reduce_inputs(rng, dtype, g, empty=False)]


for _nm in ("max", "min"):
    add(OpInfo(f"{_nm}.dim", fn(_nm), lambda rng, dtype, _nm=_nm: _max_dim_samples(rng, dtype, _nm), dtypes=ALL,
               grad=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(f32(rng, (0, 3))), 0), IndexError, _nm, desc="empty reduction dim")]))
    add(OpInfo(_nm, fn(_nm), _max_all_samples, dtypes=ALL, grad=True,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (0, 3))),), RuntimeError, _nm, desc="empty"),
                   E(("x",), TypeError, _nm, desc="str input")]))


def _argmax_samples(rng, dtype):
    S = []
    for t, desc in _reduce_inputs(rng, dtype, False, empty=False):
        for dim in (None, 0, -1):
            for keepdim in (False, True):
                S.append(Sample((t, dim, keepdim), desc=f"{desc} dim={dim} keepdim={keepdim}"))
    S.append(Sample((T(np.array([[1, 3, 3], [2, 2, 0]]).astype(NP_DTYPE[dtype])), 1), desc="ties: first index"))
    S.append(Sample((T(make(rng, (0, 3), dtype)), 1), desc="empty, non-empty reduction dim"))
    return S


for _nm in ("argmax", "argmin"):
    add(OpInfo(_nm, fn(_nm), _argmax_samples, dtypes=NUM,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(f32(rng, (0, 3))),), IndexError, _nm, desc="empty, all dims"),
                   E((T(make(rng, (2,), "bool")),), RuntimeError, _nm, desc="bool")]))


def _softmax_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _reduce_inputs(rng, dtype, g):
        for dim in (0, -1):
            S.append(Sample((t, dim), desc=f"{desc} dim={dim}"))
    if dtype != "float64":
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 1), {"dtype": DT("float64")}, desc="dtype=float64"))
    S.append(Sample((T(make(rng, (2, 3), dtype, low=-30, high=30), grad=g), 1), desc="large values (stability)"))
    return S


for _nm in ("softmax", "log_softmax"):
    add(OpInfo(f"{_nm}.int", fn(_nm), _softmax_samples, dtypes=FLOAT, grad=True,
               tol=SOFTMAX_TOL,
               errors=lambda rng, _nm=_nm: [
                   E((T(f32(rng, (2, 3))), 2), IndexError, _nm, desc="dim out of range"),
                   E((T(make(rng, (2, 3), "int64")), 0), NotImplementedError, _nm, desc="int input"),
               E((T(make(rng, (2, 3), "int64")), -1), NotImplementedError, _nm, desc="int input, last dim")]))


# ---- views
def _layouts(rng, dtype, g, shape=(2, 3)):
    """The same values in several layouts."""
    a = make(rng, shape, dtype)
    return [(T(a, grad=g), "contiguous"), (T(make(rng, shape[::-1], dtype), "t", grad=g), "transposed"),
            (T(a.copy(), "s", grad=g), "strided")]


def _as_strided_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), (2, 2), (1, 2)), desc="transposed window"),
            Sample((T(a((2, 3)), grad=g), (2, 2), (3, 1), 1), desc="offset window"),
            Sample((T(a((6,)), grad=g), (3,), (2,)), desc="every other"),
            Sample((T(a((2, 3)), grad=g), (), (), 4), desc="0-d"),
            Sample((T(a((2, 3)), grad=g), (0, 2), (2, 1)), desc="empty"),
            Sample((T(a((2, 3)), grad=g), (2, 2), (1, 1)), desc="overlapping windows"),
            Sample((T(a((6,)), grad=g), (2, 3, 2), (3, 0, 1)), desc="stride 0 and overlap"),
            Sample((T(a((8,)), grad=g), (3, 2, 2), (2, 1, 2)), desc="sliding windows"),
            Sample((T(a((3, 2)), "t", grad=g), (2, 2), (1, 2), 1), desc="transposed input"),
            # reads storage the strided input does not cover: as a function of the leaf it is not
            # the composition autograd sees (torch agrees), so finite differences do not apply
            Sample((T(a((2, 4)), "s", grad=g), (2, 2), (4, 1)), desc="strided input", gradcheck=False),
            Sample((T(a((3, 1)), "e", grad=g, expand=(3, 2)), (2, 2), (1, 1)), desc="expanded input")]


add(OpInfo("as_strided", fn("as_strided"), _as_strided_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), (4, 4), (4, 1)), RuntimeError, "as_strided", desc="out of bounds"),
               E((T(f32(rng, (2, 3))), (2,), (1, 1)), RuntimeError, "as_strided", desc="len(size) != len(stride)")]))


def _view_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), (3, 2)), desc="(2,3)->(3,2)"),
            Sample((T(a((2, 3)), grad=g), (-1,)), desc="flatten -1"),
            Sample((T(a((2, 3)), grad=g), (1, 2, 3, 1)), desc="unit dims"),
            Sample((T(a(()), grad=g), (1,)), desc="0-d -> 1"),
            Sample((T(a((1,)), grad=g), ()), desc="1 -> 0-d"),
            Sample((T(a((0, 3)), grad=g), (3, 0)), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), (3, 2, 1)), desc="transposed, compatible"),
            Sample((T(a((2, 4)), "s", grad=g), (2, 2, 2)), desc="strided, splitting a dim"),
            Sample((T(a((2, 3)), grad=g), (6,)), desc="method with varargs", fn=lambda m, x, s: x.view(*s))]


add(OpInfo("view", method("view"), _view_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E((T(make(rng, (3, 2), "float32"), "t"), (6,)), RuntimeError, "view", desc="incompatible strides"),
               E((T(f32(rng, (2, 3))), (4,)), RuntimeError, "view", desc="wrong numel"),
               E((T(f32(rng, (2, 3))), (-1, -1)), RuntimeError, "view", desc="two -1")]))


def _reshape_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for t, desc in _layouts(rng, dtype, g):
        S.append(Sample((t, (-1,)), desc=f"{desc} -> flat"))
        S.append(Sample((t, (3, 1, 2)), desc=f"{desc} -> 3-d"))
    S.append(Sample((T(make(rng, (), dtype), grad=g), (1, 1)), desc="0-d"))
    S.append(Sample((T(make(rng, (0, 3), dtype), grad=g), (3, -1)), desc="empty with -1"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), (6,)), desc="method varargs",
                    fn=lambda m, x, s: x.reshape(*s)))
    return S


add(OpInfo("reshape", fn("reshape"), _reshape_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (4,)), RuntimeError, "reshape", desc="wrong numel")]))


def _permute_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 1, 3)), grad=g), (2, 0, 1)), desc="3-d"),
            Sample((T(a((2, 3)), grad=g), (-1, 0)), desc="negative dims"),
            Sample((T(a(()), grad=g), ()), desc="0-d"),
            Sample((T(a((0, 3)), grad=g), (1, 0)), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), (1, 0)), desc="transposed"),
            Sample((T(a((2, 1, 3)), grad=g), (1, 2, 0)), desc="method varargs", fn=lambda m, x, d: x.permute(*d))]


add(OpInfo("permute", fn("permute"), _permute_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (0,)), RuntimeError, "permute", desc="too few dims"),
                               E((T(f32(rng, (2, 3))), (0, 0)), RuntimeError, "permute", desc="repeated dim")]))


def _transpose_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0, 1), desc="2-d"), Sample((T(a((2, 1, 3)), grad=g), 0, -1), desc="3-d"),
            Sample((T(a(()), grad=g), 0, -1), desc="0-d"), Sample((T(a((0, 3)), grad=g), 0, 1), desc="empty"),
            Sample((T(a((2, 4)), "s", grad=g), 1, 0), desc="strided"),
            Sample((T(a((2, 3)), grad=g), 1, 1), desc="same dim")]


add(OpInfo("transpose.int", fn("transpose"), _transpose_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 0, 2), IndexError, "transpose", desc="dim out of range")]))


def _t_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g),), desc="2-d"), Sample((T(a((3,)), grad=g),), desc="1-d"),
            Sample((T(a(()), grad=g),), desc="0-d"), Sample((T(a((3, 2)), "t", grad=g),), desc="transposed"),
            Sample((T(a((0, 3)), grad=g),), desc="empty"),
            Sample((T(a((2, 3)), grad=g),), desc="method", fn=lambda m, x: x.t())]


add(OpInfo("t", fn("t"), _t_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 1, 3))),), RuntimeError, "t", desc="3-d")]))


def _expand_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((3, 1)), grad=g), (3, 4)), desc="size-1 dim"),
            Sample((T(a((3,)), grad=g), (2, 3)), desc="new leading dim"),
            Sample((T(a((3, 1)), grad=g), (-1, 2)), desc="-1 keeps a size"),
            Sample((T(a(()), grad=g), (2, 3)), desc="0-d"),
            Sample((T(a((1, 3)), grad=g), (0, 3)), desc="to empty"),
            Sample((T(a((2, 1)), "t", grad=g), (2, 2, 2)), desc="transposed"),
            Sample((T(a((3, 1)), grad=g), (2, 3, 1)), desc="method varargs", fn=lambda m, x, s: x.expand(*s))]


add(OpInfo("expand", method("expand"), _expand_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), (3, 3)), RuntimeError, "expand", desc="non-singleton"),
                               E((T(f32(rng, (2, 3))), (3,)), RuntimeError, "expand", desc="too few sizes")]))


def _squeeze_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 1, 3, 1)), grad=g),), desc="all"), Sample((T(a((2, 1, 3)), grad=g), 1), desc="dim 1"),
            Sample((T(a((2, 1, 3)), grad=g), 0), desc="non-unit dim: no-op"),
            Sample((T(a((1, 2, 1)), grad=g), (0, -1)), desc="dims"),
            Sample((T(a(()), grad=g), 0), desc="0-d"), Sample((T(a((0, 1)), grad=g),), desc="empty"),
            Sample((T(a((1, 3)), "t", grad=g),), desc="transposed")]


add(OpInfo("squeeze.dims", fn("squeeze"), _squeeze_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 1))), 2), IndexError, "squeeze", desc="dim out of range")]))


def _unsqueeze_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0), desc="front"), Sample((T(a((2, 3)), grad=g), -1), desc="back"),
            Sample((T(a((2, 3)), grad=g), 1), desc="middle"), Sample((T(a(()), grad=g), 0), desc="0-d"),
            Sample((T(a((0, 3)), grad=g), 1), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), 1), desc="transposed"),
            Sample((T(a((2, 4)), "s", grad=g), 2), desc="strided")]


add(OpInfo("unsqueeze", fn("unsqueeze"), _unsqueeze_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 3), IndexError, "unsqueeze", desc="dim out of range")]))


def _slice_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((4, 3)), grad=g), 0, 1, 3, 1), desc="rows 1:3"),
            Sample((T(a((4, 3)), grad=g), 1, 0, 3, 2), desc="cols ::2"),
            Sample((T(a((4, 3)), grad=g), 0, -3, None, 1), desc="negative start"),
            Sample((T(a((4, 3)), grad=g), -1, 1, 100, 1), desc="end past size"),
            Sample((T(a((4, 3)), grad=g), 0, 3, 1, 1), desc="empty result"),
            Sample((T(a((3, 4)), "t", grad=g), 0, 0, 4, 3), desc="transposed"),
            Sample((T(a((4, 3)), grad=g), 0, None, None, 1), desc="all"),
            Sample((T(a((4, 3)), grad=g), 0, 1, 3, 1), desc="indexing", fn=lambda m, x, d, s, e, st: x[s:e])]


add(OpInfo("slice.Tensor", fn("slice"), _slice_samples, dtypes=ALL, grad=True, torch_call=aten("slice.Tensor"),
           errors=lambda rng: [E((T(f32(rng, ())), 0, 0, 1, 1), IndexError, "slice", desc="0-d"),
                               E((T(f32(rng, (3,))), 0, 0, 2, 0), RuntimeError, "slice", "step", desc="step 0")]))


def _select_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), 0, 1), desc="row"), Sample((T(a((2, 3)), grad=g), -1, -1), desc="last col"),
            Sample((T(a((3,)), grad=g), 0, 2), desc="1-d -> 0-d"), Sample((T(a((0, 3)), grad=g), 1, 0), desc="empty"),
            Sample((T(a((3, 2)), "t", grad=g), 1, 0), desc="transposed"),
            Sample((T(a((2, 3)), grad=g), 0, 1), desc="indexing", fn=lambda m, x, d, i: x[i])]


add(OpInfo("select.int", fn("select"), _select_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), 0, 2), IndexError, "select", "index", desc="index out of range"),
                               E((T(f32(rng, ())), 0, 0), IndexError, "select", desc="0-d")]))


def _contiguous_samples(rng, dtype):
    g = is_float(dtype)
    return [Sample((t,), desc=desc) for t, desc in _layouts(rng, dtype, g)] + [
        Sample((T(make(rng, (), dtype), grad=g),), desc="0-d"),
        Sample((T(make(rng, (3, 1), dtype), "e", grad=g, expand=(3, 2)),), desc="expanded")]


add(OpInfo("contiguous", method("contiguous"), _contiguous_samples, dtypes=ALL, grad=True))


# ---- copies and joins
def _clone_samples(rng, dtype):
    g = is_float(dtype)
    return _contiguous_samples(rng, dtype) + [Sample((T(make(rng, (0, 3), dtype), grad=g),), desc="empty"),
                                               Sample((T(make(rng, (2, 1, 3), dtype), "t", grad=g),), desc="3-d t")]


add(OpInfo("clone", fn("clone"), _clone_samples, dtypes=ALL, grad=True, errors=_unary_errors("clone")))


def _cat_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    S = [Sample(([T(a((2, 3)), grad=g), T(a((1, 3)), grad=g)], 0), desc="dim 0"),
         Sample(([T(a((2, 3)), grad=g), T(a((2, 1)), grad=g), T(a((2, 2)), grad=g)], 1), desc="dim 1, three"),
         Sample(([T(a((2, 3)), grad=g), T(a((2, 2)), grad=g)], -1), desc="dim -1"),
         Sample(([T(a((3,)), grad=g)], 0), desc="single"),
         Sample(([T(a((2, 3)), grad=g), T(a((0,)), grad=g)], 0), desc="legacy empty 1-d"),
         Sample(([T(a((0, 3)), grad=g), T(a((2, 3)), grad=g)], 0), desc="empty"),
         Sample(([T(a((2, 3)), "t", grad=g), T(a((1, 3)), "s", grad=g)], 0), desc="non-contiguous")]
    if dtype == "float32":
        S.append(Sample(([T(a((2, 3)), grad=True), T(make(rng, (1, 3), "int64"))], 0), desc="mixed float32/int64"))
        S.append(Sample(([T(make(rng, (2, 3), "float16"), grad=True), T(a((1, 3)), grad=True)], 0),
                        desc="mixed float16/float32"))
    return S


add(OpInfo("cat", fn("cat"), _cat_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E(([T(f32(rng, (2, 3))), T(f32(rng, (2, 2)))], 0), RuntimeError, "cat", desc="sizes"),
               E(([T(f32(rng, ())), T(f32(rng, ()))], 0), RuntimeError, "cat", desc="0-d"),
               E(([T(f32(rng, (2, 3))), T(f32(rng, (3,)))], 0), RuntimeError, "cat", desc="ndim"),
               E(([], 0), ValueError, "cat", desc="empty list"),
               E(([T(f32(rng, (2, 3)))], 2), IndexError, "cat", desc="dim out of range")]))


def _stack_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample(([T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)], 0), desc="dim 0"),
            Sample(([T(a((2, 3)), grad=g), T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)], -1), desc="dim -1"),
            Sample(([T(a(()), grad=g), T(a(()), grad=g)], 0), desc="0-d"),
            Sample(([T(a((0, 3)), grad=g)], 1), desc="empty"),
            Sample(([T(a((2, 3)), "t", grad=g), T(a((2, 3)), "s", grad=g)], 1), desc="non-contiguous")]


add(OpInfo("stack", fn("stack"), _stack_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [
               E(([T(f32(rng, (2, 3))), T(f32(rng, (3, 2)))], 0), RuntimeError, "stack", desc="sizes"),
               E(([T(f32(rng, (2, 3)))], 3), IndexError, "stack", desc="dim out of range")]))


def _slice_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((4, 3)), grad=g), T(a((2, 3)), grad=g), 0, 1, 3), desc="rows"),
            Sample((T(a((4, 3)), grad=g), T(a((4, 2)), grad=g), 1, 0, None, 2), desc="cols ::2"),
            Sample((T(a((4, 3)), grad=g), T(a((4, 3)), grad=g)), desc="all"),
            Sample((T(a((3, 4)), "t", grad=g), T(a((1, 4)), "t", grad=g), 0, 1, 2), desc="transposed")]


add(OpInfo("slice_scatter", fn("slice_scatter"), _slice_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (4, 3))), T(f32(rng, (3, 3))), 0, 1, 3), RuntimeError, "slice_scatter",
                                 desc="src shape")]))


def _select_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g), 0, 1), desc="row"),
            Sample((T(a((2, 3)), grad=g), T(a((2,)), grad=g), 1, -1), desc="col"),
            Sample((T(a((3,)), grad=g), T(a(()), grad=g), 0, 0), desc="1-d"),
            Sample((T(a((3, 2)), "t", grad=g), T(a((3,)), grad=g), 1, 0), desc="transposed")]


add(OpInfo("select_scatter", fn("select_scatter"), _select_scatter_samples, dtypes=ALL, grad=True,
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (2,))), 0, 0), RuntimeError, "select_scatter",
                                 desc="src shape")]))


def _as_strided_scatter_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((2, 2)), grad=g), (2, 2), (1, 2)), desc="transposed window"),
            Sample((T(a((2, 3)), grad=g), T(a((2, 2)), grad=g), (2, 2), (3, 1), 1), desc="offset"),
            Sample((T(a((6,)), grad=g), T(a((3,)), grad=g), (3,), (2,)), desc="every other")]


add(OpInfo("as_strided_scatter", fn("as_strided_scatter"), _as_strided_scatter_samples, dtypes=ALL, grad=True,
           torch_grad_wrong={0: "torch 2.13's as_strided_scatter_backward gives `self` the gradient of the "
                                "window it overwrote (its own gradcheck fails); ember zeroes it there"},
           errors=lambda rng: [E((T(f32(rng, (2, 3))), T(f32(rng, (3, 3))), (2, 2), (1, 2)), RuntimeError,
                                 "as_strided_scatter", desc="src shape")]))


def _copy_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape, d=dtype: make(rng, shape, d)  # noqa: E731
    S = [Sample((T(a((2, 3)), grad=g), T(a((2, 3)), grad=g)), desc="same"),
         Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g)), desc="broadcast src"),
         Sample((T(a((2, 3)), grad=g), T(a(()), grad=g)), desc="0-d src"),
         Sample((T(a((3, 2)), "t", grad=g), T(a((3, 2)), grad=g)), desc="into transposed"),
         Sample((T(a((2, 3)), grad=g), T(a((2, 3)), "s", grad=g)), desc="from strided"),
         Sample((T(a((0, 3)), grad=g), T(a((3,)), grad=g)), desc="empty")]
    for src in ("float64", "int64", "bool", "float16"):
        if src != dtype:
            S.append(Sample((T(a((2, 3)), grad=g), T(a((2, 3), src), grad=g and is_float(src))), desc=f"from {src}"))
    return S


add(OpInfo("copy_", method("copy_"), _copy_samples, dtypes=ALL, grad=True, inplace=True,
           errors=lambda rng: [E((T(f32(rng, (3,))), T(f32(rng, (2, 3)))), RuntimeError, "copy_", desc="shape"),
                               E((T(f32(rng, (3,))), "x"), TypeError, "copy_", "src", desc="str src")]))


def _to_copy_samples(rng, dtype):
    g = is_float(dtype)
    S = []
    for target in ("float32", "float64", "int64", "bool", "float16", "bfloat16", "uint8"):
        x = make(rng, (2, 3), dtype, low=-3, high=3)
        if target == "uint8":
            x = np.abs(x).astype(x.dtype)
        S.append(Sample((T(x, grad=g),), {"dtype": DT(target)}, desc=f"to {target}"))
    S.append(Sample((T(make(rng, (3, 2), dtype), "t", grad=g),), {"dtype": DT("float64")}, desc="transposed"))
    S.append(Sample((T(make(rng, (), dtype), grad=g),), {}, desc="0-d, same dtype"))
    S.append(Sample((T(make(rng, (2, 3), dtype), grad=g),), {"dtype": DT("float64")}, desc="Tensor.to",
                    fn=lambda m, x, dtype: x.to(dtype)))
    return S


add(OpInfo("_to_copy", fn("_to_copy"), _to_copy_samples, dtypes=ALL, grad=True, torch_call=aten("_to_copy"),
           errors=lambda rng: [E((T(f32(rng, (2,))),), TypeError, "_to_copy", "dtype",
                                 fn=lambda m, x: x.to(dtype="float"), desc="str dtype")]))


def _fill_samples(rng, dtype):
    g = is_float(dtype)
    S = [Sample((T(make(rng, (2, 3), dtype), grad=g), 2), desc="int"),
         Sample((T(make(rng, (2, 3), dtype), grad=g), True), desc="bool"),
         Sample((T(make(rng, (), dtype), grad=g), 1), desc="0-d"),
         Sample((T(make(rng, (0, 3), dtype), grad=g), 1), desc="empty"),
         Sample((T(make(rng, (3, 2), dtype), "t", grad=g), 3), desc="transposed"),
         Sample((T(make(rng, (2, 4), dtype), "s", grad=g), 3), desc="strided")]
    if is_float(dtype):
        S.append(Sample((T(make(rng, (2, 3), dtype), grad=g), 2.5), desc="float"))
    return S


add(OpInfo("fill_.Scalar", method("fill_"), _fill_samples, dtypes=ALL, grad=True, inplace=True,
           errors=lambda rng: [E((T(f32(rng, (2,))), "x"), TypeError, "fill_", desc="str value")]))


# ---- linear algebra
def _mm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="2x3 @ 3x4"),
            Sample((T(a((2, 3)), "t", grad=g), T(a((3, 4)), "s", grad=g)), desc="non-contiguous"),
            Sample((T(a((0, 3)), grad=g), T(a((3, 2)), grad=g)), desc="empty rows"),
            Sample((T(a((2, 0)), grad=g), T(a((0, 3)), grad=g)), desc="empty inner: zeros"),
            Sample((T(a((1, 1)), grad=g), T(a((1, 1)), grad=g)), desc="1x1")]


_LINALG_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64")
add(OpInfo("mm", fn("mm"), _mm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))), RuntimeError, "mm", desc="inner sizes"),
               E((T(f32(rng, (3,))), T(f32(rng, (3, 2)))), RuntimeError, "mm", desc="1-d"),
               E((T(f32(rng, (2, 3))), T(make(rng, (3, 2), "float64"))), RuntimeError, "mm", desc="dtypes differ"),
               E((T(make(rng, (2, 3), "bool")), T(make(rng, (3, 2), "bool"))), NotImplementedError, "mm",
                 desc="bool")]))


def _bmm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((2, 2, 3)), grad=g), T(a((2, 3, 2)), grad=g)), desc="batch 2"),
            Sample((T(a((2, 2, 3)), "t", grad=g), T(a((2, 3, 1)), grad=g)), desc="transposed"),
            Sample((T(a((0, 2, 3)), grad=g), T(a((0, 3, 2)), grad=g)), desc="empty batch")]


add(OpInfo("bmm", fn("bmm"), _bmm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 2, 3))), T(f32(rng, (3, 3, 2)))), RuntimeError, "bmm", desc="batch sizes"),
               E((T(f32(rng, (2, 3))), T(f32(rng, (3, 2)))), RuntimeError, "bmm", desc="2-d"),
               E((T(make(rng, (1, 2, 2), "bool")), T(make(rng, (1, 2, 2), "bool"))), NotImplementedError, "bmm",
                 desc="bool")]))


def _matmul_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    return [Sample((T(a((3,)), grad=g), T(a((3,)), grad=g)), desc="1-d . 1-d"),
            Sample((T(a((2, 3)), grad=g), T(a((3,)), grad=g)), desc="2-d @ 1-d"),
            Sample((T(a((3,)), grad=g), T(a((3, 2)), grad=g)), desc="1-d @ 2-d"),
            Sample((T(a((2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="2-d @ 2-d"),
            Sample((T(a((2, 2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="3-d @ 2-d"),
            Sample((T(a((2, 2, 3)), grad=g), T(a((3,)), grad=g)), desc="3-d @ 1-d"),
            Sample((T(a((3,)), grad=g), T(a((2, 3, 2)), grad=g)), desc="1-d @ 3-d"),
            Sample((T(a((2, 3)), grad=g), T(a((2, 3, 2)), grad=g)), desc="2-d @ 3-d"),
            Sample((T(a((2, 1, 2, 3)), grad=g), T(a((3, 3, 2)), grad=g)), desc="batch broadcast"),
            Sample((T(a((2, 3)), "t", grad=g), T(a((3, 2)), grad=g)), desc="transposed"),
            Sample((T(a((0, 3)), grad=g), T(a((3,)), grad=g)), desc="empty"),
            Sample((T(a((2, 3)), grad=g), T(a((3, 2)), grad=g)), desc="operator @", fn=lambda m, x, y: x @ y)]


add(OpInfo("matmul", fn("matmul"), _matmul_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 3))), T(f32(rng, (2, 3)))), RuntimeError, "matmul", desc="inner sizes"),
               E((T(f32(rng, ())), T(f32(rng, (3,)))), RuntimeError, "matmul", desc="0-d"),
               E((T(make(rng, (2, 2), "bool")), T(make(rng, (2, 2), "bool"))), NotImplementedError, "matmul",
                 desc="bool")]))


def _addmm_samples(rng, dtype):
    g = is_float(dtype)
    a = lambda shape: make(rng, shape, dtype, low=-1, high=1)  # noqa: E731
    S = [Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="plain"),
         Sample((T(a((4,)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), desc="broadcast self"),
         Sample((T(a((2, 4)), grad=g), T(a((2, 3)), "t", grad=g), T(a((3, 4)), grad=g)), desc="transposed")]
    S.append(Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)),
                    {"beta": 2, "alpha": 3} if not g else {"beta": 0.5, "alpha": 2.0}, desc="beta, alpha"))
    S.append(Sample((T(a((2, 4)), grad=g), T(a((2, 3)), grad=g), T(a((3, 4)), grad=g)), {"beta": 0},
                    desc="beta 0"))
    return S


add(OpInfo("addmm", fn("addmm"), _addmm_samples, dtypes=_LINALG_DTYPES, grad=True, tol=LINALG_TOL,
           errors=lambda rng: [
               E((T(f32(rng, (2, 4))), T(f32(rng, (2, 3))), T(f32(rng, (2, 4)))), RuntimeError, "addmm",
                 desc="inner sizes"),
               E((T(f32(rng, (3, 3))), T(f32(rng, (2, 3))), T(f32(rng, (3, 4)))), RuntimeError, "addmm",
                 desc="self shape")]))


# ---- factories
def _factory_samples(rng, dtype):
    d = DT(dtype)
    return [Sample(((2, 3),), {"dtype": d, "device": DEVICE}, desc="tuple size"),
            Sample((2, 3), {"dtype": d, "device": DEVICE}, desc="varargs size"),
            Sample(((),), {"dtype": d, "device": DEVICE}, desc="0-d"),
            Sample(((0, 3),), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample(([4],), {"device": DEVICE}, desc="default dtype")]


def _factory_errors(name):
    def errors(rng):
        return [E(((-1, 2),), RuntimeError, name, desc="negative size"),
                E(((2, "a"),), TypeError, name, "size", desc="str size")]
    return errors


for _nm in ("zeros", "ones"):
    add(OpInfo(_nm, fn(_nm), _factory_samples, dtypes=ALL, errors=_factory_errors(_nm)))
add(OpInfo("empty.memory_format", fn("empty"), _factory_samples, dtypes=ALL, kind="shape_only",
           errors=_factory_errors("empty")))


def _full_samples(rng, dtype):
    d = DT(dtype)
    v = {"bool": True}.get(dtype, 3 if not is_float(dtype) else 2.5)
    return [Sample(((2, 3), v), {"dtype": d, "device": DEVICE}, desc="with dtype"),
            Sample(((2,), 2), {"device": DEVICE}, desc="int fill -> int64"),
            Sample(((2,), 2.5), {"device": DEVICE}, desc="float fill -> float32"),
            Sample(((2,), False), {"device": DEVICE}, desc="bool fill -> bool"),
            Sample(((0, 2), 1.0), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample(((), 7), {"dtype": d, "device": DEVICE}, desc="0-d")]


add(OpInfo("full", fn("full"), _full_samples, dtypes=ALL,
           errors=lambda rng: [E(((2,), "a"), TypeError, "full", "fill_value", desc="str fill"),
                               E(((-2,), 1.0), RuntimeError, "full", desc="negative size")]))


def _arange_samples(rng, dtype):
    d = DT(dtype)
    S = [Sample((5,), {"device": DEVICE}, desc="end -> int64"),
         Sample((1, 7, 2), {"device": DEVICE}, desc="start end step"),
         Sample((0.5, 2.0, 0.25), {"device": DEVICE}, desc="float -> float32"),
         Sample((5, 1, -1), {"device": DEVICE}, desc="negative step"),
         Sample((3, 3), {"device": DEVICE}, desc="empty"),
         Sample((1, 2.5, 0.5), {"device": DEVICE}, desc="mixed int/float")]
    if dtype != "bool":
        S.append(Sample((0, 6, 2), {"dtype": d, "device": DEVICE}, desc=f"dtype {dtype}"))
    return S


add(OpInfo("arange.start_step", fn("arange"), _arange_samples, dtypes=NUM,
           errors=lambda rng: [E((0, 5, 0), RuntimeError, "arange", "step", desc="zero step"),
                               E((5, 0, 1), RuntimeError, "arange", desc="wrong sign"),
                               E(("a",), TypeError, "arange", desc="str end")]))


def _eye_samples(rng, dtype):
    d = DT(dtype)
    return [Sample((3,), {"dtype": d, "device": DEVICE}, desc="square"),
            Sample((2, 4), {"dtype": d, "device": DEVICE}, desc="wide"),
            Sample((4, 2), {"dtype": d, "device": DEVICE}, desc="tall"),
            Sample((0,), {"dtype": d, "device": DEVICE}, desc="empty"),
            Sample((2,), {"device": DEVICE}, desc="default dtype")]


add(OpInfo("eye", fn("eye"), _eye_samples, dtypes=ALL,
           errors=lambda rng: [E((-1,), RuntimeError, "eye", "n", desc="negative n"),
                               E((2, -1), RuntimeError, "eye", "m", desc="negative m")]))


def _like_samples(fill=None):
    def gen(rng, dtype):
        S = []
        extra = () if fill is None else (fill(dtype),)
        for t, desc in _layouts(rng, dtype, False):
            t.grad = False
            S.append(Sample((t,) + extra, {"device": DEVICE}, desc=desc))
        S.append(Sample((T(make(rng, (2, 3), dtype)),) + extra, {"dtype": DT("float64"), "device": DEVICE},
                        desc="dtype float64"))
        S.append(Sample((T(make(rng, (), dtype)),) + extra, {"device": DEVICE}, desc="0-d"))
        S.append(Sample((T(make(rng, (0, 3), dtype)),) + extra, {"device": DEVICE}, desc="empty"))
        S.append(Sample((T(make(rng, (3, 1), dtype), "e", expand=(3, 2)),) + extra, {"device": DEVICE},
                        desc="expanded"))
        S.append(Sample((T(make(rng, (2, 1, 3), dtype), "t"),) + extra, {"device": DEVICE}, desc="3-d t"))
        return S
    return gen


add(OpInfo("empty_like", fn("empty_like"), _like_samples(), dtypes=ALL, kind="shape_only",
           errors=_unary_errors("empty_like")))
add(OpInfo("zeros_like", fn("zeros_like"), _like_samples(), dtypes=ALL, errors=_unary_errors("zeros_like")))
add(OpInfo("ones_like", fn("ones_like"), _like_samples(), dtypes=ALL, errors=_unary_errors("ones_like")))
add(OpInfo("full_like", fn("full_like"), _like_samples(lambda d: True if d == "bool" else 2), dtypes=ALL,
           errors=lambda rng: [E((T(f32(rng, (2,))), "a"), TypeError, "full_like", "fill_value", desc="str fill")]))


# ---- random numbers: statistics and determinism (ember/testing/test_random.py)
def _random_fill_samples(rng, dtype):
    return [Sample((T(np.zeros((2, 3), NP_DTYPE[dtype])),), desc="2-d"),
            Sample((T(np.zeros((3, 2), NP_DTYPE[dtype]), "t"),), desc="transposed"),
            Sample((T(np.zeros((0, 3), NP_DTYPE[dtype])),), desc="empty"),
            Sample((T(np.zeros((), NP_DTYPE[dtype])),), desc="0-d")]


add(OpInfo("uniform_", method("uniform_"), _random_fill_samples, dtypes=FLOAT, kind="random", inplace=True,
           errors=lambda rng: [E(("x",), TypeError, "uniform_", fn=lambda m, x: m.Tensor.uniform_(x), desc="str self"),
                               E((T(np.zeros(3, np.int64)),), NotImplementedError, "uniform_", desc="int64 self"),
                               E((T(np.zeros(3, np.float32)),), RuntimeError, "uniform_",
                                 fn=lambda m, x: x.uniform_(2, 1), desc="from > to")]))
add(OpInfo("normal_", method("normal_"), _random_fill_samples, dtypes=FLOAT, kind="random", inplace=True,
           errors=lambda rng: [E(("x",), TypeError, "normal_", fn=lambda m, x: m.Tensor.normal_(x), desc="str self"),
                               E((T(np.zeros(3, np.int64)),), NotImplementedError, "normal_", desc="int64 self"),
                               E((T(np.zeros(3, np.float32)),), RuntimeError, "normal_", "std",
                                 fn=lambda m, x: x.normal_(0, -1), desc="negative std")]))
add(OpInfo("random_.from", lambda m, x: x.random_(0, 2 if x.dtype == m.bool else 10), _random_fill_samples,
           dtypes=ALL,
           kind="random", inplace=True,
           errors=lambda rng: [E((T(np.zeros(3, np.int64)),), RuntimeError, "random_", fn=lambda m, x: x.random_(5, 2),
                                 desc="from >= to"),
                               E((T(np.zeros(3, np.bool_)),), RuntimeError, "random_", fn=lambda m, x: x.random_(0, 10),
                                 desc="to out of bounds for bool"),
                               E((T(np.zeros(3, np.uint8)),), RuntimeError, "random_",
                                 fn=lambda m, x: x.random_(-1, 10), desc="from out of bounds for uint8")]))


def _rand_samples(rng, dtype):
    return [Sample(((2, 3),), {"dtype": DT(dtype), "device": DEVICE}, desc="tuple size"),
            Sample((3,), {"dtype": DT(dtype), "device": DEVICE}, desc="varargs"),
            Sample(((0, 3),), {"dtype": DT(dtype), "device": DEVICE}, desc="empty"),
            Sample(((),), {"dtype": DT(dtype), "device": DEVICE}, desc="0-d")]


add(OpInfo("rand", fn("rand"), _rand_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [E(((2,),), NotImplementedError, "rand", kwargs={"dtype": DT("int64")}, desc="int dtype"),
                               E(((-1,),), RuntimeError, "rand", desc="negative size")]))
add(OpInfo("randn", fn("randn"), _rand_samples, dtypes=FLOAT, kind="random",
           errors=lambda rng: [E(((2,),), NotImplementedError, "randn", kwargs={"dtype": DT("int64")},
                                 desc="int dtype"),
                               E(((-1,),), RuntimeError, "randn", desc="negative size")]))


def _randint_samples(rng, dtype):
    return [Sample((0, 10, (2, 3)), {"dtype": DT(dtype), "device": DEVICE}, desc="with dtype"),
            Sample((-5, 5, (4,)), {"device": DEVICE}, desc="default int64"),
            Sample((0, 3, (0, 2)), {"device": DEVICE}, desc="empty")]


add(OpInfo("randint.low", fn("randint"), _randint_samples, dtypes=("int64", "int32", "float32", "uint8"),
           kind="random",
           errors=lambda rng: [E((5, 2, (3,)), RuntimeError, "randint", desc="high <= low")]))



def _randint_high_samples(rng, dtype):
    return [Sample((10, (2, 3)), {"dtype": DT(dtype), "device": DEVICE}, desc="with dtype"),
            Sample((5, (4,)), {"device": DEVICE}, desc="default int64"),
            Sample((3, (0, 2)), {"device": DEVICE}, desc="empty")]


add(OpInfo("randint", fn("randint"), _randint_high_samples, dtypes=("int64", "int32", "float32", "uint8"),
           kind="random",
           errors=lambda rng: [E((0, (3,)), RuntimeError, "randint", desc="high <= 0")]))

OPS_BY_NAME = {op.name: op for op in OP_DB}
assert len(OPS_BY_NAME) == len(OP_DB), "duplicate OpInfo names"
