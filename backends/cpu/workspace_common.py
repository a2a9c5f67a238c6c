"""What the cpu kernels' scratch declarations (workspace.py, workspace_conv.py) share: element counts and the
bytes of the dtype a kernel computes in."""
from __future__ import annotations

import math

LOW_PRECISION = frozenset({"float16", "bfloat16"})
F32 = 4                     # bytes of the float32 the low-precision kernels compute in
#: numpy's ufunc and indexing buffer, in elements (numpy.getbufsize())
NUMPY_BUFFER = 8192


def _numel(a) -> int:
    return math.prod(a.shape)


def _acc_size(a) -> int:
    """Bytes of one element of `a`'s compute dtype (float32 for float16/bfloat16)."""
    return F32 if a.dtype.name in LOW_PRECISION else a.dtype.itemsize


def _lowp(a) -> bool:
    return a.dtype.name in LOW_PRECISION
