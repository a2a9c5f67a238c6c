"""`ember.finfo` and `ember.iinfo`: the numeric limits of a dtype, as torch.finfo / torch.iinfo report them
(read from numpy's, and ml_dtypes' for bfloat16)."""
from __future__ import annotations

import numpy as np

from ember.core import dtype as _dt
from ember.core.errors import ArgumentTypeError
from ember.core.numpy_interop import to_numpy_dtype

__all__ = ["finfo", "iinfo"]


class finfo:
    """Machine limits of a floating dtype (the default dtype when none is given): bits, eps, max, min, tiny
    (= smallest_normal), resolution, dtype."""

    def __init__(self, type=None) -> None:
        dtype = _dt.get_default_dtype() if type is None else type
        if not isinstance(dtype, _dt.dtype) or not dtype.is_floating_point:
            raise ArgumentTypeError(f"finfo(): argument 'type' must be a floating point dtype, got {dtype!r}")
        if dtype is _dt.bfloat16:
            import ml_dtypes
            info = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = np.finfo(to_numpy_dtype(dtype))
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)        # (numpy rounds it into the dtype)
        self.dtype = dtype.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: bits, min, max, dtype."""

    def __init__(self, type) -> None:
        if not isinstance(type, _dt.dtype) or type.is_floating_point or type is _dt.bool:
            raise ArgumentTypeError(f"iinfo(): argument 'type' must be an integer dtype, got {type!r}")
        info = np.iinfo(to_numpy_dtype(type))
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), int(info.max), type.name

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
