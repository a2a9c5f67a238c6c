"""Ember's differential fuzzer: mutated op calls, run by ember and by torch, compared.

    python -m ember.testing.fuzz --device cpu --seed 0 --cases 5000     # a run, with its summary
    python -m ember.testing.fuzz --device cpu --seed 0 --case 1234      # one case again, in full
    pytest --pyargs ember.testing --ember-device=NAME --fuzz=N          # N cases per seed (0, 1, 2)

A case starts from a sample (or an error input) of the operator database (`ember.testing.op_db`,
one entry per registry op) and changes one to three of its arguments at random: a tensor's dtype,
shape (a dimension more or less, one of size 0, a 0-d tensor), layout (transposed, strided), a tensor
made a Python number or None, a number made another kind of number, out of range, negative or a
list, a list made shorter or longer, an unknown keyword. Most mutated calls are invalid, which is
the point: ember must then raise an error of the builtin class torch raises, never leak a numpy,
pyopencl or Python-internal exception, and never crash or hang; a valid one must give torch's
values, dtypes and shapes (on meta: torch's meta device's shapes and dtypes).

Each case is reproducible alone from (seed, index), its numbers from `numpy.random.default_rng((seed, index))`.

Outcomes: `same` (same result, or an error of the same builtin class), `crash` (ember leaked an
exception that is not an EmberError, or overran `CASE_TIMEOUT`), `differs` (any other disagreement).
A difference that is a deliberate choice is listed in `DELIBERATE` with its reason (docs/architecture.md,
"Choices, and differences from PyTorch", names each) and is reported as `deliberate`, still counted
among the differences.
"""
from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import os
import re
import sys
import warnings
from typing import Callable

import numpy as np

from .op_db import DT, OP_DB, Sample, T, materialize
from .op_db.samples import DEVICE, NP_DTYPE

__all__ = ["Case", "Outcome", "Report", "public_ops", "make_case", "run_case", "fuzz", "DELIBERATE", "SEEDS"]

SEEDS = (0, 1, 2)
#: seconds a case may take before the run is stopped with every thread's traceback (a hang is a crash)
CASE_TIMEOUT = 120
FUZZ_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")


# ------------------------------------------------------------------------------------------ cases
@dataclasses.dataclass
class Case:
    """One fuzz case: an op of the database, the dtype its sample was drawn for, the mutated sample."""
    seed: int
    index: int
    op: object                      # the OpInfo
    dtype: str
    sample: Sample
    mutations: list[str]

    def reproducer(self, device: str) -> str:
        return f"python -m ember.testing.fuzz --device {device} --seed {self.seed} --case {self.index}"

    def describe(self) -> str:
        return (f"{self.op.name}[{self.dtype}] {_render(self.sample.args)}"
                f"{' ' + _render(self.sample.kwargs) if self.sample.kwargs else ''}  <- {'; '.join(self.mutations)}")


def _render(v) -> str:
    if isinstance(v, T):
        layout = {"c": "", "t": " transposed", "s": " strided", "e": f" expanded to {v.expand}"}[v.layout]
        return f"T({v.dtype}{list(v.arr.shape)}{layout})"
    if isinstance(v, DT):
        return v.name
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_render(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_render(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def public_ops() -> list:
    """The database's ops a program calls by name: ember.X, Tensor.X or ember.nn.functional.X, neither private
    (`_softmax`) nor a backward (`convolution_backward`), that torch's public API has too (torch.X, Tensor.X,
    torch.nn.functional.X, ...: ember's own extras, such as `ember.copy`, have no public counterpart to
    compare with). Internal ops trust their callers: torch's own crash its process on some mutated arguments."""
    import torch

    import ember

    theirs = (torch, torch.Tensor, torch.nn.functional, torch._C._nn, torch.linalg, torch.special, torch.fft)

    def public(name: str) -> bool:
        base = name.split(".")[0]
        return not base.startswith("_") and not base.endswith("_backward") and \
            any(hasattr(m, base) for m in (ember, ember.Tensor, ember.nn.functional)) and \
            any(hasattr(m, base) for m in theirs)
    return [op for op in OP_DB if public(op.name)]


_PUBLIC: list = []


def make_case(seed: int, index: int, *, meta: bool = False) -> Case:
    """Case `index` of `seed`: a sample or error input of a random public op, mutated one to three times (a
    mutation that would kill torch's own process, `_crashes_torch`, is drawn again)."""
    if not _PUBLIC:
        _PUBLIC.extend(public_ops())
    rng = np.random.default_rng((seed, index))
    while True:
        op = _PUBLIC[int(rng.integers(len(_PUBLIC)))]
        dtype = str(rng.choice(op.dtypes))
        pool = list(op.samples(op.rng(dtype), dtype))
        if op.errors is not None and rng.random() < 0.2:
            pool += [e.sample for e in op.errors(op.rng("errors"))]
        pool = [s for s in pool if s.meta or not meta]
        if not pool:
            continue
        sample = pool[int(rng.integers(len(pool)))]
        args, kwargs, done = list(sample.args), dict(sample.kwargs), []
        for _ in range(1 + int(rng.integers(3))):
            done.append(_mutate_one(rng, args, kwargs))
        case = Case(seed, index, op, dtype, dataclasses.replace(sample, args=tuple(args), kwargs=kwargs), done)
        if not _crashes_torch(case):
            return case


def _crashes_torch(case: Case) -> bool:
    """Whether the case's call kills torch's own process (a segfault in its kernel), so that torch has no answer
    to compare with: torch.native_batch_norm in eval mode without running statistics, or with fewer statistics
    than channels (read past their end); an embedding bag of 1-d indices with no offsets at all."""
    a = case.sample.args
    if case.op.name.lstrip("_").startswith("embedding_bag") and len(a) > 2 and all(isinstance(x, T) for x in a[1:3]):
        last = a[7] if len(a) > 7 else case.sample.kwargs.get("include_last_offset", False)
        return a[1].values.ndim == 1 and a[1].values.size > 0 and a[2].values.size == 0 and not last
    if not (case.op.name in ("native_batch_norm", "batch_norm") and len(a) > 5 and not a[5]):
        return False
    channels = a[0].values.shape[1] if isinstance(a[0], T) and a[0].values.ndim > 1 else None
    return any(s is None or isinstance(s, T) and (channels is None or s.values.size < channels) for s in a[3:5])


def _slots(args: list, kwargs: dict) -> list[tuple]:
    """Every place an argument can be changed: (container, key) pairs, nested lists included."""
    found = [(args, i) for i in range(len(args))] + [(kwargs, k) for k in kwargs]
    for box, key in list(found):
        if isinstance(box[key], list) and any(isinstance(x, T) for x in box[key]):
            found += [(box[key], i) for i in range(len(box[key]))]
    return found


def _mutate_one(rng, args: list, kwargs: dict) -> str:
    slots = _slots(args, kwargs)
    if not slots or rng.random() < 0.04:
        kwargs["bogus"] = 1
        return UNKNOWN_KEYWORD + " bogus=1"
    box, key = slots[int(rng.integers(len(slots)))]
    before = box[key]
    after, what = _mutated(rng, before)
    if isinstance(box, dict) and after is _DROP:
        del box[key]
        return f"keyword {key} left out"
    if after is _DROP:
        after, what = None, "None"
    box[key] = after
    return f"argument {key}: {_render(before)} -> {what}"


_DROP = object()
UNKNOWN_KEYWORD = "an unknown keyword"


def _mutated(rng, v):
    """A changed argument and a description of it."""
    if isinstance(v, T):
        return _mutated_tensor(rng, v)
    if isinstance(v, DT):
        name = str(rng.choice(FUZZ_DTYPES))
        return DT(name), name
    if isinstance(v, bool):
        choice = [not v, int(v), None, 2.5][int(rng.integers(4))]
    elif isinstance(v, int):
        choice = [v + 1, v - 1, -v - 1, 0, -1, 7, float(v) + 0.5, True, [v], None][int(rng.integers(10))]
    elif isinstance(v, float):
        choice = [-v, 0.0, float("nan"), float("inf"), int(v) if np.isfinite(v) else 1, 1e-3, True, None][int(rng.integers(8))]
    elif isinstance(v, str):
        choice = ["bogus", "", None][int(rng.integers(3))]
    elif isinstance(v, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        options = [list(v)[:-1], list(v) + [1], [-x - 1 for x in v], [], list(v) + list(v)[:1], 3]
        choice = options[int(rng.integers(len(options)))]
        choice = type(v)(choice) if isinstance(choice, list) else choice
    elif v is None:
        choice = [0, 1.5, True, T(np.ones((2,), np.float32))][int(rng.integers(4))]
    else:
        return _DROP, "dropped"
    return choice, _render(choice)


def _mutated_tensor(rng, t: T):
    arr = t.values
    kind = int(rng.integers(9))
    if kind == 0:                               # another dtype
        name = str(rng.choice(FUZZ_DTYPES))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            src = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=3.0, neginf=-3.0)
            new = (src != 0) if name == "bool" else np.clip(src, -100, 100).astype(NP_DTYPE[name])
        return T(new), f"T({name}{list(arr.shape)})"
    if kind == 1:                               # a dimension more
        return T(np.array(arr)[None].repeat(2, 0)), f"T({t.dtype}{[2, *arr.shape]})"
    if kind == 2 and arr.ndim:                  # a dimension less
        less = np.array(arr[0]) if arr.shape[0] else np.zeros(arr.shape[1:], arr.dtype)
        return T(less), f"T({t.dtype}{list(less.shape)})"
    if kind == 3 and arr.ndim:                  # a dimension of size 0
        d = int(rng.integers(arr.ndim))
        return T(np.array(np.take(arr, [], axis=d))), f"T({t.dtype} size 0 in dim {d})"
    if kind == 4:                               # 0-d
        flat = arr.reshape(-1)
        return T(np.array(flat[0] if flat.size else np.zeros((), arr.dtype))), f"T({t.dtype}[] 0-d)"
    if kind == 5:                               # a Python number
        flat = arr.reshape(-1)
        x = flat[0].item() if flat.size else 1
        if isinstance(x, float) and not np.isfinite(x):
            x = 1.5
        return x, f"the Python number {x!r}"
    if kind == 6:
        return None, "None"
    if kind == 7 and arr.ndim >= 2:
        return T(np.array(arr), layout="t"), f"T({t.dtype}{list(arr.shape)} transposed)"
    if kind == 8 and arr.ndim >= 1:
        return T(np.array(arr), layout="s"), f"T({t.dtype}{list(arr.shape)} strided)"
    return T(np.array(arr).reshape(-1)), f"T({t.dtype}[{arr.size}] flattened)"


# ------------------------------------------------------------------------------------------ running
@dataclasses.dataclass
class Outcome:
    status: str                     # same | differs | deliberate | crash
    detail: str = ""


def builtin_class(exc: BaseException) -> type:
    """The builtin exception class an exception is first an instance of (torch's and ember's alike)."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return type(exc)


def _call(fn: Callable, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs), None
        except Exception as exc:        # noqa: BLE001 - every exception is an outcome here
            return None, exc


def run_case(case: Case, device: str) -> Outcome:
    """Run `case` with ember on `device` and with torch on cpu, and compare.

    On meta the oracle is torch's meta device, and torch's cpu where the two disagree: torch's meta
    device lacks kernels for some ops and skips checks its cpu kernels make, while ember's meta device
    predicts what a real device does. Either agreeing is agreement."""
    import torch

    import ember
    from ember.core.errors import EmberError

    meta = device == "meta"
    op, s = case.op, case.sample
    e_in, e_err = _call(materialize, ember, s, device, inplace=op.inplace)
    e_out = None
    if e_err is None:
        e_out, e_err = _call(_ember_call(s.fn or op.call, s.fn or op.tcall(), e_in[0], ember), ember, *e_in[0],
                             **e_in[1])
    outcome = None
    for torch_device in (("meta", "cpu") if meta else ("cpu",)):
        t_in, t_err = _call(materialize, torch, s, torch_device, inplace=op.inplace)
        if t_err is not None:       # torch refuses the inputs themselves (an odd layout): nothing to compare
            return Outcome("same", f"inputs refused by torch: {t_err}")
        t_out, t_err = _call(_torch_call(s.fn or op.tcall(), torch), torch, *t_in[0], **t_in[1])
        # an AttributeError from Python code (a method of a number) is what torch's Python code leaks too
        # so is an error of torch's very class and message (a Size indexed out of range: the tuple's own error)
        if e_err is not None and _leaked(e_err, EmberError) and not type(e_err) is AttributeError is type(t_err) \
                and not (type(e_err) is type(t_err) and str(e_err) == str(t_err)):
            return Outcome("crash", f"leaked {type(e_err).__module__}.{type(e_err).__name__}: {_first_line(e_err)} "
                                    f"(torch: {_describe(t_err)})")
        if e_err is not None or t_err is not None:
            problem = _error_difference(case, e_err, t_err)
        else:
            # a call with no tensor argument and no device keyword (a factory's left out, an error sample's call,
            # `add(1, 2)`) makes its result on the default device, the cpu
            placed = device if s.kwargs.get("device") is DEVICE or _holds_tensor(s.args) \
                or _holds_tensor(s.kwargs.values()) else "cpu"
            problem = _compare(e_out, t_out, op, meta, placed)
            if problem is None and op.inplace and s.args and isinstance(s.args[0], T):
                problem = _compare(e_in[0][0], t_in[0][0], op, meta, device)
        if problem is None:
            return Outcome("same")
        outcome = outcome or _deliberate(case, problem)
    return outcome


#: where torch's public functions live, searched in this order, and where ember's counterparts do
_PUBLIC_TORCH = (("", ("",)), ("_C._nn", ("nn.functional", "_generated.functions")), ("_C._linalg", ("linalg",)),
                 ("_C._special", ("special",)))


def _attribute(root, path: str):
    for part in filter(None, path.split(".")):
        root = getattr(root, part)
    return root


def _ember_call(call: Callable, torch_call: Callable, args: tuple, ember) -> Callable:
    """What the fuzzer calls on ember's side: the database's `call`, unless that is a method and the case's
    first argument is no Tensor to call it on (a mutation made it a number or None), where torch's side calls
    the op's public function (`_torch_call`): then ember's public function of that name, so that both sides
    meet the same argument parser."""
    if not getattr(call, "__name__", "").startswith("Tensor.") or args and isinstance(args[0], ember.Tensor):
        return call
    import torch

    pair = _public_bindings(torch_call, torch)
    return call if pair is None else lambda m, *a, **kwargs: pair[1](*a, **kwargs)


def _torch_call(call: Callable, torch) -> Callable:
    """What the fuzzer calls on torch's side for the database's `call`: the op's public binding where the
    database reaches it through torch.ops.aten and both torch and ember have one by that name
    (torch._C._nn.avg_pool2d, what torch.nn.functional calls), since its argument parser, not the schema
    matcher's conversions (an int for a bool, a number for a Tensor), is what a program meets; `call` itself
    otherwise (the op has no public binding, or the database's call is a public function already: ctc_loss)."""
    pair = _public_bindings(call, torch)
    return call if pair is None else lambda m, *args, **kwargs: pair[0](*args, **kwargs)


def _public_bindings(call: Callable, torch) -> tuple[Callable, Callable] | None:
    """torch's and ember's public bindings of the op the database reaches through torch.ops.aten (`call`), the
    first place in `_PUBLIC_TORCH` where both have one; None when it is no aten call or either lacks one."""
    import ember

    name = getattr(call, "__name__", "")
    if not name.startswith("aten."):
        return None
    packet = name[len("aten."):].split(".")[0]
    for path, ember_paths in _PUBLIC_TORCH:
        theirs = getattr(_attribute(torch, path), packet, None)
        ours = next((getattr(_attribute(ember, p), packet) for p in ember_paths
                     if callable(getattr(_attribute(ember, p), packet, None))), None)
        if callable(theirs) and ours is not None:
            return theirs, ours
    return None


def _leaked(exc: BaseException, ember_error: type) -> bool:
    """Whether `exc` escaped from inside ember or a library under it without becoming an EmberError.

    An exception Python raises at the call itself (an unknown keyword, a method of a Python number,
    `None * tensor`) is the language's, as it is for torch: its innermost frame is the caller's, here
    in ember.testing."""
    if isinstance(exc, ember_error) or isinstance(exc, TypeError) and _CALL_SIGNATURE.search(str(exc)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is None or not tb.tb_frame.f_code.co_filename.startswith(_TESTING_DIR)


#: Python's own errors for a call that does not fit a function's signature (torch's Python functions raise them too)
_CALL_SIGNATURE = re.compile(r"got an unexpected keyword argument|missing \d+ required|takes \d+ positional argument|"
                             r"got multiple values for argument")
_TESTING_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _error_difference(case: Case, e_err, t_err) -> str | None:
    """None when ember's and torch's errors agree, else the difference."""
    if e_err is None:
        return f"ember returned a result; torch raised {_describe(t_err)}"
    if t_err is None:
        return f"ember raised {_describe(e_err)}; torch returned a result"
    if builtin_class(e_err) is not builtin_class(t_err) and not _schema_mismatch(case, e_err, t_err):
        return f"ember raised {_describe(e_err)}; torch raised {_describe(t_err)}"
    return None


#: the messages of torch's schema matcher: ops torch has no public binding for are called through
#: torch.ops.aten, which reports arguments of the wrong type or number as RuntimeError, where torch's
#: public bindings (and ember's, for every op) raise TypeError
_SCHEMA_MATCHER = re.compile(r"failed to match any schema|Expected a value of type|is missing value for argument|"
                             r"Expected a proper Tensor but got None|expected at most \d+ argument")


def _schema_mismatch(case: Case, e_err, t_err) -> bool:
    """Whether both refused the arguments' types or number, ember with TypeError as torch's public bindings
    do, torch with the schema matcher's RuntimeError (ops reached through torch.ops.aten). An unknown
    keyword is such a refusal on either path."""
    if not isinstance(e_err, TypeError) or not isinstance(t_err, (TypeError, RuntimeError)):
        return False
    return any(m.startswith(UNKNOWN_KEYWORD) for m in case.mutations) or bool(_SCHEMA_MATCHER.search(str(t_err)))


def _describe(exc) -> str:
    if exc is None:
        return "nothing"
    return f"{builtin_class(exc).__name__} ({type(exc).__name__}: {_first_line(exc)})"


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _holds_tensor(values) -> bool:
    """Whether a call's arguments hold a tensor (in a list too): without one, and without a device keyword, a
    result is made on the default device, the cpu (a factory, `add(1, 2)`)."""
    return any(isinstance(v, T) or isinstance(v, (list, tuple)) and _holds_tensor(v) for v in values)


def _compare(e_out, t_out, op, meta: bool, device: str) -> str | None:
    """None when ember's outputs are torch's, else what differs."""
    from .compare import assert_same, dtype_str, flat

    if meta or op.kind != "values":
        e_list, t_list = flat(e_out), flat(t_out)
        if len(e_list) != len(t_list):
            return f"{len(e_list)} outputs, torch gives {len(t_list)}"
        for k, (e, t) in enumerate(zip(e_list, t_list)):
            if hasattr(t, "shape") != hasattr(e, "shape"):
                return f"output {k}: {type(e).__name__}, torch gives {type(t).__name__}"
            if hasattr(t, "shape") and (dtype_str(e.dtype) != dtype_str(t.dtype) or tuple(e.shape) != tuple(t.shape)):
                return f"output {k}: {dtype_str(e.dtype)}{list(e.shape)}, torch gives {dtype_str(t.dtype)}{list(t.shape)}"
            if not hasattr(t, "shape") and not meta and e != t:
                return f"output {k}: {e!r}, torch gives {t!r}"
        return None
    try:
        assert_same(e_out, t_out, op.tol, "", device.split(":")[0])
    except AssertionError as exc:
        return " ".join(str(exc).split())[:300]
    return None


# deliberate differences: (a test of the case and the difference's text, the reason) -- see docs/architecture.md
DELIBERATE: list[tuple[Callable[[Case, str], bool], str]] = [
    (lambda case, detail: detail.startswith("ember raised TypeError") and "torch raised AttributeError" in detail,
     "torch's Python functions (torch.nn.functional) use an argument's methods before checking it, so a number "
     "or None given for a Tensor is an AttributeError there; ember's TypeError names the argument"),
    (lambda case, detail: detail.startswith("ember raised RuntimeError (ArgumentValueError")
     and ("torch returned" in detail or "is not a valid value for reduction" in detail)
     and re.search(r"argument 'reduction' must be 0 \(none\)|padding_mode must be 0|interpolation_mode must be 0", detail),
     "an integer reduction or grid-sampling mode out of range is refused (a RuntimeError); torch's cpu kernels read "
     "some as no reduction (or a default mode) and assert on others, and its meta functions raise ValueError"),
    (lambda case, detail: case.op.name == "squeeze.dims" and "torch raised TypeError" in detail and "NoneType" in detail,
     "squeeze's dim is optional (one op for torch's squeeze() and squeeze(dims)): squeeze(t, None) squeezes every "
     "size-1 dimension, where torch's parser refuses None"),
    (lambda case, detail: case.op.name.startswith("index_put") and "expected Tensor as element" in detail,
     "index_put takes None entries in `indices` (its schema's Tensor?[], which ember's own indexing uses), where "
     "torch's Python binding refuses them"),
    (lambda case, detail: case.op.name == "take_along_dim" and "is out of bounds for dimension" in detail
     and "torch returned" in detail,
     "take_along_dim checks its indices' bounds; torch's cpu kernel reads past the dimension"),
    (lambda case, detail: case.op.name == "take_along_dim" and detail.startswith("ember returned")
     and "view size is not compatible with input tensor's size and stride" in detail,
     "take_along_dim without a dim flattens a non-contiguous input as reshape does; torch's views it and fails"),
    (lambda case, detail: detail.startswith("ember returned") and re.search(
        r"INTERNAL ASSERT FAILED|could not create a primitive descriptor|Expected X.is_contiguous", detail),
     "torch's cpu kernel fails inside (an internal assertion, a oneDNN primitive it cannot create for a zero-size "
     "kernel, a layout it requires) where ember computes the result"),
    (lambda case, detail: case.op.name == "logsumexp" and len(case.sample.args) > 1
     and isinstance(case.sample.args[1], (tuple, list)) and len(case.sample.args[1]) == 0,
     "logsumexp over dim=() reduces every dimension, as sum does; torch's cpu kernel fails writing its result "
     "and its meta function reduces none"),
    (lambda case, detail: case.op.name.startswith("fractional_max_pool") and "torch returned" in detail
     and "kernel_size must be greater than zero" in detail,
     "fractional max pooling refuses a kernel size below 1; torch's kernel pools empty windows into -inf"),
    (lambda case, detail: case.op.name == "as_strided_scatter" and detail.startswith("output 0")
     and case.sample.args and isinstance(case.sample.args[0], T) and case.sample.args[0].layout != "c",
     "as_strided_scatter reads its size/stride window over a non-contiguous input's elements in contiguous order "
     "(its result is contiguous); torch reads it over a copy of the input's own strided storage"),
    (lambda case, detail: case.op.name == "einsum" and "torch raised RuntimeError (RuntimeError: Boolean value of "
     "Tensor" in detail, "einsum's equation must be a str (ember's TypeError names it); torch's Python function "
     "takes a Tensor there for an operand and fails later"),
    (lambda case, detail: case.op.name == "binary_cross_entropy" and detail.startswith("output 0") and len(
        case.sample.args) > 1 and isinstance(case.sample.args[1], T) and isinstance(case.sample.args[0], T)
     and case.sample.args[1].arr.size > case.sample.args[0].arr.size,
     "binary_cross_entropy (the op) broadcasts a target larger than its input; torch's cpu kernel resizes its "
     "output mid-call (deprecated) and reduces the wrong elements (torch.nn.functional.binary_cross_entropy "
     "refuses the call, as ember's does)"),
    (lambda case, detail: case.op.name.startswith(("addcmul", "addcdiv")) and detail.startswith("output 0")
     and any(isinstance(a, T) and a.dtype in ("float16", "bfloat16") for a in case.sample.args[1:3]),
     "addcmul/addcdiv round the product (quotient) of float16/bfloat16 operands to their dtype before the add, "
     "as the fused optimizer updates do; torch computes the whole expression in float32 and rounds once"),
    (lambda case, detail: case.op.name == "native_group_norm" and detail.startswith("output 0")
     and any(isinstance(a, T) and a.layout != "c" for a in case.sample.args[1:3]),
     "native_group_norm reads a strided weight or bias through its strides; torch's cpu kernel reads them as "
     "contiguous memory (wrong values; torch.nn.functional.group_norm passes contiguous ones)"),
    (lambda case, detail: "batch_norm" in case.op.name and "torch returned" in detail
     and re.search(r"(weight|bias|running_mean|running_var) should contain \d+ elements", detail),
     "native_batch_norm checks its weight, bias and running statistics hold one value per channel; torch's cpu "
     "kernel reads them unchecked (past their end when they are shorter)"),
    (lambda case, detail: case.op.name in ("bmm", "baddbmm", "matmul") and "torch returned" in detail
     and "same dtype" in detail,
     "a batched matrix product of operands of different dtypes is refused when it is empty too, as torch's meta "
     "function and its cpu kernel for non-empty operands refuse it; torch's cpu kernel returns an empty result "
     "of the second operand's dtype"),
    (lambda case, detail: case.op.name == "scaled_dot_product_attention" and detail.startswith("output 0")
     and any(isinstance(a, T) and 0 in a.arr.shape[:-2] for a in case.sample.args[:3]),
     "scaled_dot_product_attention broadcasts the batch dimensions of query, key and value as matmul does (a "
     "batch of 0 against 1 is 0); torch's cpu kernel sizes its result by the query's"),
    (lambda case, detail: case.op.name in ("cdist", "_cdist_forward") and re.search(
        r"not implemented for '(Half|BFloat16)'|expected x2 to have scalar type", detail) and any(
        isinstance(a, T) and a.dtype in ("float16", "bfloat16") for a in case.sample.args[:2]),
     "cdist computes float16 and bfloat16 (torch's cpu kernel has none), so a float16 operand with another dtype "
     "is the dtype mismatch's RuntimeError where torch's is the missing kernel's NotImplementedError"),
    (lambda case, detail: _past_the_last_offset(case) and detail.startswith("output 0"),
     "embedding_bag with include_last_offset: indices past the last offset belong to no bag; torch's cpu kernels "
     "count them into the last bag in some modes and not in others"),
]


def _past_the_last_offset(case: Case) -> bool:
    """An embedding_bag case with include_last_offset whose indices run past the last offset."""
    a = case.sample.args
    return (case.op.name.startswith("embedding_bag") and len(a) > 7 and a[7] is True and isinstance(a[1], T)
            and isinstance(a[2], T) and a[2].arr.size > 0 and int(a[2].arr.reshape(-1)[-1]) < a[1].arr.size)


def _deliberate(case: Case, detail: str) -> Outcome:
    for applies, reason in DELIBERATE:
        if applies(case, detail):
            return Outcome("deliberate", f"{detail} [deliberate: {reason}]")
    return Outcome("differs", detail)


# ------------------------------------------------------------------------------------------ runs
@dataclasses.dataclass
class Report:
    device: str
    seed: int
    cases: int = 0
    counts: dict = dataclasses.field(default_factory=lambda: {"same": 0, "differs": 0, "deliberate": 0, "crash": 0})
    failures: list = dataclasses.field(default_factory=list)         # (case, outcome) of crash and differs
    deliberate: list = dataclasses.field(default_factory=list)       # (case, outcome) of deliberate differences

    @property
    def differing(self) -> int:
        return self.counts["differs"] + self.counts["deliberate"]

    def summary(self) -> str:
        pct = 100.0 * self.differing / max(self.cases, 1)
        return (f"ember fuzz on {self.device}, seed {self.seed}: {self.cases} cases, {self.counts['crash']} crashes, "
                f"{self.differing} differ from torch ({pct:.2f}%; {self.counts['deliberate']} deliberate)")

    def lines(self, deliberate: bool = False) -> list[str]:
        """The failures (crashes and differences), each with its reproducer; `deliberate`: those too."""
        shown = self.failures + (self.deliberate if deliberate else [])
        return [f"{o.status}: {c.reproducer(self.device)}\n    {c.describe()}\n    {o.detail}" for c, o in shown]


def fuzz(device: str, seed: int, cases: int, start: int = 0) -> Report:
    """Run cases start .. start+cases-1 of `seed` on `device`."""
    report = Report(device, seed)
    for index in range(start, start + cases):
        case = make_case(seed, index, meta=device == "meta")
        faulthandler.dump_traceback_later(CASE_TIMEOUT, exit=True)
        try:
            outcome = run_case(case, device)
        finally:
            faulthandler.cancel_dump_traceback_later()
        report.cases += 1
        report.counts[outcome.status] += 1
        if outcome.status in ("crash", "differs"):
            report.failures.append((case, outcome))
        elif outcome.status == "deliberate":
            report.deliberate.append((case, outcome))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.testing.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=1000, help="cases to run (default 1000)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--case", type=int, default=None, help="run this one case and show it in full")
    parser.add_argument("--show-deliberate", action="store_true", help="also list the deliberate differences")
    args = parser.parse_args(argv)
    if args.case is not None:
        case = make_case(args.seed, args.case, meta=args.device == "meta")
        print(case.describe())
        print(run_case(case, args.device))
        return 0
    report = fuzz(args.device, args.seed, args.cases, args.start)
    for line in report.lines(args.show_deliberate):
        print(line)
    print(report.summary())
    return 1 if report.counts["crash"] or report.counts["differs"] else 0


if __name__ == "__main__":
    sys.exit(main())
