"""The cpu backend's fast path (`Backend.fast_entry`): `a + b`, `a - b`, `a * b` on two tensors alike.

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
    """The entry of `op` answering two tensors alike with its ufunc (None when `op` has none)."""
    ufunc = UFUNCS.get(op.name)
    if ufunc is None or op.tensor_args != (0, 1) or op.mutated or op.n_outputs != 1:
        return None
    alpha_at = op.alpha_arg            # add's and sub's `Scalar alpha`: must be the int 1
    dtypes = DTYPES

    def run_ufunc(args):
        a, b = args[0], args[1]
        if a.__class__ is T and b.__class__ is T:
            dt = a._dtype
            da, db = a._data, b._data
            if (dt is b._dtype and dt in dtypes and da.shape == db.shape and da.ndim
                    and (alpha_at is None or (args[alpha_at].__class__ is int and args[alpha_at] == 1))
                    and (da.ndim == 1 or (da.flags.c_contiguous and db.flags.c_contiguous))):
                return wrap(ufunc(da, db), dt, dev, key, None)
        return body(args)
    return run_ufunc
