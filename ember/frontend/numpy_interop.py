"""Host (numpy) dtypes: the common currency between backends and the frontend.

Backends move data to and from numpy arrays on the host, so the mapping between ember
dtypes and numpy dtypes (bfloat16 through ml_dtypes) lives here, shared by all of them.
numpy is imported on first use, keeping `import ember` light.
"""
from __future__ import annotations

from . import dtype as _dt

_TO_NUMPY: dict = {}
_FROM_NUMPY: dict = {}


def _build() -> None:
    import ml_dtypes
    import numpy as np

    pairs = [(_dt.bool, np.dtype(np.bool_)), (_dt.uint8, np.dtype(np.uint8)), (_dt.int8, np.dtype(np.int8)),
             (_dt.int16, np.dtype(np.int16)), (_dt.int32, np.dtype(np.int32)), (_dt.int64, np.dtype(np.int64)),
             (_dt.float16, np.dtype(np.float16)), (_dt.bfloat16, np.dtype(ml_dtypes.bfloat16)),
             (_dt.float32, np.dtype(np.float32)), (_dt.float64, np.dtype(np.float64))]
    for e, n in pairs:
        _TO_NUMPY[e] = n
        _FROM_NUMPY[n] = e


def to_numpy_dtype(dtype: _dt.dtype):
    """The numpy dtype holding values of an ember dtype."""
    if not _TO_NUMPY:
        _build()
    return _TO_NUMPY[dtype]


def from_numpy_dtype(np_dtype) -> _dt.dtype:
    """The ember dtype of a numpy dtype; TypeError naming it if ember has none."""
    if not _FROM_NUMPY:
        _build()
    import numpy as np

    key = np.dtype(np_dtype)
    if key.byteorder == ">":
        raise TypeError(f"numpy arrays with non-native byte order ({key}) are not supported")
    try:
        return _FROM_NUMPY[key.newbyteorder("=") if key.byteorder == "<" else key]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type numpy.{key}. The only supported types are: float64, "
                        "float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.") from None
