"""OP_DB itself, the helpers that add entries, and the shared sample and error generators."""
from __future__ import annotations

import dataclasses

import numpy as np

from .samples import ALL, ErrorInput, OpInfo, Sample, T, fn, is_float, make, materialize, method


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


def negatives(rng, dtype):
    """Inputs outside log/sqrt's domain (NaN results), values only."""
    if not is_float(dtype):
        return []
    return [Sample((T(make(rng, (2, 3), dtype)),), desc="negative inputs (nan)")]


# --------------------------------------------------------------------------- error helpers
def E(args, exc, *match, kwargs=None, fn=None, desc=""):
    return ErrorInput(Sample(tuple(args), kwargs or {}, desc=desc, fn=fn), exc, tuple(match))


def f32(rng, shape):
    return make(rng, shape, "float32")


def off_meta(samples):
    """The samples of `samples(rng, dtype)`, none of them run on meta: for an op whose torch counterpart has no
    meta kernel to compare with (its OpInfo marks the meta test an expected failure, saying why)."""
    def gen(rng, dtype):
        return [dataclasses.replace(s, meta=False) for s in samples(rng, dtype)]
    return gen


def broadcast_error(name, arg="other"):
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


def unary_errors(name):
    def errors(rng):
        return [E(("x",), TypeError, name, desc="str input")]
    return errors


def unary_inplace_errors(name, *, float_only=False):
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


def add_pointwise(name, public, *, dtypes=ALL, samples, grad=True, inplace=True, inplace_dtypes=None, tol=None,
               errors=None, inplace_errors=None, torch_name=None, second_order=False, grad_tol=None,
               inplace_samples=None, ioperator=None, inplace_xfail=None):
    """An out-of-place pointwise op and (inplace=True) its in-place twin `public_`."""
    base_op = name
    errs = errors or broadcast_error(public)
    add(OpInfo(base_op, fn(public), samples, dtypes=dtypes, grad=grad, tol=tol or {}, errors=errs,
               torch_call=fn(torch_name) if torch_name else None, second_order=second_order,
               grad_tol=grad_tol or {}))
    if inplace:
        ip_name = base_op.replace(public, public + "_", 1)
        ip_samples = inplace_only(inplace_samples or samples, public + "_")
        if ioperator is not None:
            ip_samples = _with_ioperator(ip_samples, ioperator)
        add(OpInfo(ip_name, method(public + "_"), ip_samples,
                   dtypes=inplace_dtypes or dtypes, grad=grad, inplace=True, xfail=inplace_xfail or {}, tol=tol or {},
                   errors=inplace_errors or _inplace_errors(public + "_"), grad_tol=grad_tol or {}))


def inplace_only(gen, name):
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


def layouts(rng, dtype, g, shape=(2, 3)):
    """The same values in several layouts."""
    a = make(rng, shape, dtype)
    return [(T(a, grad=g), "contiguous"), (T(make(rng, shape[::-1], dtype), "t", grad=g), "transposed"),
            (T(a.copy(), "s", grad=g), "strided")]


def reduce_inputs(rng, dtype, g, *, empty=True, domain="any"):
    """(T, description) inputs of reductions: 2-d, 3-d, 0-d, transposed, strided, expanded, empty."""
    a = lambda shape: make(rng, shape, dtype, domain=domain)   # noqa: E731
    ins = [(T(a((2, 3)), grad=g), "2-d"), (T(a((2, 1, 3)), grad=g), "3-d"), (T(a(()), grad=g), "0-d"),
           (T(a((3, 2)), "t", grad=g), "transposed"), (T(a((2, 4)), "s", grad=g), "strided"),
           (T(a((3, 1)), "e", grad=g, expand=(3, 2)), "expanded")]
    if empty:
        ins.append((T(a((0, 3)), grad=g), "empty"))
    return ins
