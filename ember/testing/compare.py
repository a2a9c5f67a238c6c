"""Comparing ember's results with torch's: values (on any real device), layouts (on meta)."""
from __future__ import annotations

import numpy as np
import torch

import ember

from .op_db import Sample
from .tolerances import value_tol

torch.set_num_threads(1)
torch.manual_seed(0)


def dtype_str(dt) -> str:
    """'float32' for ember.float32 and torch.float32 alike."""
    return str(dt).split(".")[-1]


def host(t) -> np.ndarray:
    """The values of ember tensor `t`, on any real device, as a numpy array (via `.cpu()`)."""
    return np.asarray(t.detach().cpu().numpy())


def ember_to_torch(t):
    """A cpu torch tensor holding the values of ember tensor `t` (moved to cpu first)."""
    return _as_torch(host(t), t.dtype)


def _as_torch(values: np.ndarray, dtype) -> torch.Tensor:
    """A cpu torch tensor holding `values`, the host copy of an ember tensor of `dtype`."""
    if dtype is ember.bfloat16:
        return torch.from_numpy(values.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(values, copy=True))


def flat(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def assert_same(e_out, t_out, tol: dict | None = None, where: str = "", device_type: str = "cpu"):
    """Values, dtype and shape of ember outputs (on `device_type`) equal torch's on cpu.

    Tolerances by result dtype (ember.testing.tolerances; `tol` holds an op's overrides).
    """
    e_list, t_list = flat(e_out), flat(t_out)
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
        assert e.device.type == device_type, f"{w}: device {e.device}, expected {device_type}"
        values = host(e)
        if _identical(values, t):       # passed below whatever the tolerance: skip that comparison's cost
            continue
        rtol, atol = value_tol(dtype_str(t.dtype), tol)
        torch.testing.assert_close(_as_torch(values, e.dtype), t.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                   check_stride=False, msg=lambda m: f"{w}: {m}")


def _identical(values: np.ndarray, t) -> bool:
    """Whether `values` (an ember result's host copy) are exactly torch tensor `t`'s (of the same dtype
    and shape, which the caller checked; NaN where torch has NaN). torch.testing.assert_close passes those
    whatever the tolerance, and most results of the suite are exact, so this numpy comparison (about a
    fifth of assert_close's cost on a small tensor) answers first. bfloat16 (no numpy dtype in torch) and
    complex results take assert_close."""
    if t.dtype in (torch.bfloat16, torch.complex64, torch.complex128):
        return False
    try:
        b = t.detach().numpy()
    except TypeError:           # a dtype numpy has no counterpart of (a float8)
        return False
    return np.array_equal(values, b, equal_nan=values.dtype.kind == "f")


def assert_same_meta(e_out, t_out, where: str, view: bool, t_cpu_out=None):
    """Shape, dtype and strides of ember's meta outputs equal torch's meta outputs.

    Where torch's own meta and cpu layouts disagree (its meta kernels of float floor
    division are Python decompositions that return contiguous outputs where TensorIterator
    keeps the input layout), ember may match either: its meta device predicts real devices.
    """
    e_list, t_list = flat(e_out), flat(t_out)
    c_list = flat(t_cpu_out) if t_cpu_out is not None else [None] * len(t_list)
    assert len(e_list) == len(t_list), f"{where}: {len(e_list)} outputs, torch gives {len(t_list)}"
    for k, (e, t, c) in enumerate(zip(e_list, t_list, c_list)):
        w = f"{where} output {k}"
        if t is None:           # an output left out (output_mask of the backward ops)
            assert e is None, f"{w}: expected None, got {type(e).__name__}"
            continue
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


def sample_where(op, dtype, s: Sample) -> str:
    return f"{op.name}[{dtype}] sample '{s.desc}'"


def calls(op, s: Sample):
    """(ember call, torch call) of sample `s` of `op`."""
    return (s.fn or op.call), (s.fn or op.tcall())
