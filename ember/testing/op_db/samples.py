"""The sample model (T, Sample, OpInfo, ...), dtype sets, data and call helpers."""
from __future__ import annotations

import dataclasses
import zlib
from typing import Callable
import ml_dtypes
import numpy as np

from ..tolerances import VALUE_TOL


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


