"""The cpu backend's fast path (`Backend.fast_entry`): `a + b`, `a - b`, `a * b` on two tensors alike (or a
float tensor and a Python number), and
the in-place arithmetic of optimizers and training loops (`p.mul_(0.9)`, `p.add_(g, alpha=-lr)`,
`v.addcmul_(g, g, value=0.1)`, `s.sqrt_()`) on float tensors.

For two float32/float64/int32/int64 tensors of one dtype and one shape, C-contiguous (or 1-D), with
an `alpha` of 1 where the op has one, numpy's ufunc is the whole op: the shape rule would find the
operands valid and the output of their shape, dtype and (contiguous) layout, and the kernel would
make exactly that call. The entry makes it directly and wraps the result; every other call takes
the full path (`body`). This is the commonest call of small programs (a tiny `a + b` in about two
thirds of the full path's instructions), and a breakpoint here sees it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember.core import dtype as _dt

#: op name -> the numpy ufunc that is the whole op for two arrays alike
UFUNCS = {"add.Tensor": np.add, "sub.Tensor": np.subtract, "mul.Tensor": np.multiply}
#: the dtypes for which it is
DTYPES = frozenset({_dt.float32, _dt.float64, _dt.int32, _dt.int64})


def fast_entry(op, body: Callable, T: type, wrap: Callable, dev, key: int) -> Callable | None:
    """The entry of `op` answering two tensors alike with its ufunc, or for an in-place op (reached
    without autograd to record) the calls `inplace_entry` takes; None when `op` has neither."""
    if op.mutated:
        return inplace_entry(op, body, T)
    if set(op.checks) - MOOT_CHECKS or op.dtypes is not None:     # checks the shape rule would make, skipped
        return None
    ufunc = UFUNCS.get(op.name)
    if ufunc is None or op.tensor_args != (0, 1) or op.mutated or op.n_outputs != 1:
        return None
    alpha_at = op.alpha_arg            # add's and sub's `Scalar alpha`: must be the int 1
    dtypes = DTYPES

    floats = FLOATS

    def run_ufunc(args):
        a, b = args[0], args[1]
        if a.__class__ is T and (alpha_at is None or (args[alpha_at].__class__ is int and args[alpha_at] == 1)):
            dt = a._dtype
            da = a._data
            if b.__class__ is T:
                db = b._data
                nd = da.ndim
                # one shape: for two vectors their lengths (no shape tuples made), else the shapes
                if (dt is b._dtype and dt in dtypes and nd and db.ndim == nd
                        and (len(da) == len(db) if nd == 1 else
                             da.shape == db.shape and da.flags.c_contiguous and db.flags.c_contiguous)):
                    return wrap(ufunc(da, db), dt, dev, key, None)
            elif dt in floats and _number(b) and da.ndim and (da.ndim == 1 or da.flags.c_contiguous):
                # a float tensor and a Python number: the number takes the tensor's dtype (numpy's weak
                # scalars, torch's wrapped numbers), the result its shape and layout
                return wrap(ufunc(da, b), dt, dev, key, None)
        return body(args)
    return run_ufunc


# ------------------------------------------------------------------------------------------ in place
# An in-place op is "compute out of place, then copy_" (ember.frontend.wiring): three shape rules and two
# kernels, several times the arithmetic on a parameter-sized tensor. For a C-contiguous float32/float64
# `self` (so no internal overlap) and operands that need no promotion, broadcasting or cast, the same
# ufuncs run in place, in the order the out-of-place kernels and decompositions use (so the same bits);
# every other call takes `body`.

#: in-place op -> the ufunc of its out-of-place kernel, self op other (times alpha where it has one)
INPLACE_BINARY = {"add_.Tensor": np.add, "sub_.Tensor": np.subtract, "mul_.Tensor": np.multiply,
                  "div_.Tensor_mode": np.true_divide}
#: in-place op -> its ufunc
INPLACE_UNARY = {"sqrt_": np.sqrt, "exp_": np.exp, "neg_": np.negative, "reciprocal_": np.reciprocal}
#: addcmul_/addcdiv_: self + value * (tensor1 op tensor2), as the decompositions compute it
INPLACE_PRODUCT = {"addcmul_": np.multiply, "addcdiv_": np.true_divide}
FLOATS = frozenset({_dt.float32, _dt.float64})
#: registry checks a fast call makes moot: no bool operands (sub_bool), no rounding mode (rounding_mode, in place)
MOOT_CHECKS = frozenset({"sub_bool", "rounding_mode"})
_EXACT_INT = 2 ** 53


def _number(x) -> bool:
    """A Python float, or an int a float64 holds exactly (a bool is neither: True promotes differently)."""
    return x.__class__ is float or (x.__class__ is int and -_EXACT_INT < x < _EXACT_INT)


def _same_array(self_data, dt, other, T):
    """`other`'s array when it is a C-contiguous tensor of `self`'s dtype and shape, or a 0-d one of its
    dtype (GradScaler's `grad.mul_(inv_scale)`: broadcast by the ufunc, no temporary of self's size), not
    partly overlapping it."""
    if other.__class__ is T and other._dtype is dt:
        d = other._data
        if (d.shape == self_data.shape or not d.ndim) and d.flags.c_contiguous and (d is self_data or
                                                                     not np.may_share_memory(d, self_data)):
            return d
    return None


def _self_array(a, T):
    """The array an in-place fast call writes: `a`'s, when it is a C-contiguous float tensor; else None."""
    if a.__class__ is T and a._dtype in FLOATS:
        da = a._data
        if da.flags.c_contiguous:
            return da
    return None


def inplace_entry(op, body: Callable, T: type) -> Callable | None:
    """The fast entry of an in-place twin (unary, binary with alpha, or addcmul_/addcdiv_), or None."""
    if set(op.checks) - MOOT_CHECKS or op.dtypes is not None:
        return None
    name = op.name
    if name in INPLACE_UNARY:
        ufunc = INPLACE_UNARY[name]

        def run_unary_(args):
            a = args[0]
            da = _self_array(a, T)
            if da is None:
                return body(args)
            ufunc(da, out=da)
            a._storage.version += 1
            return a
        return run_unary_
    if name in INPLACE_BINARY:
        ufunc = INPLACE_BINARY[name]
        alpha_at = op.alpha_arg
        mode_at = 2 if name == "div_.Tensor_mode" else None

        def run_binary_(args):
            a = args[0]
            da = _self_array(a, T)
            if da is not None and (mode_at is None or args[mode_at] is None):
                other = args[1]
                b = other if _number(other) else _same_array(da, a._dtype, other, T)
                alpha = 1 if alpha_at is None else args[alpha_at]
                if b is not None and (alpha.__class__ is int and alpha == 1
                                      or _number(alpha) and b.__class__ is np.ndarray):
                    if alpha != 1:                  # add/sub's kernel: other * alpha first, then the op
                        b = np.multiply(b, alpha)
                    ufunc(da, b, out=da)
                    a._storage.version += 1
                    return a
            return body(args)
        return run_binary_
    if name in INPLACE_PRODUCT:
        ufunc = INPLACE_PRODUCT[name]

        def run_product_(args):
            a = args[0]
            da = _self_array(a, T)
            if da is not None:
                t1, t2, value = _same_array(da, a._dtype, args[1], T), _same_array(da, a._dtype, args[2], T), args[3]
                if t1 is not None and t2 is not None and (value.__class__ is int and value == 1 or _number(value)):
                    part = ufunc(t1, t2)
                    if value != 1:
                        part *= value
                    np.add(da, part, out=da)
                    a._storage.version += 1
                    return a
            return body(args)
        return run_product_
    return None
