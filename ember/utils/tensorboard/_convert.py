"""Values given to the writer as numpy arrays: ember tensors, numpy arrays and Python numbers.

TensorBoard's protobufs are filled from numpy, so every `add_*` method first brings its value
here (torch's writer does the same with its tensors). A tensor is detached and copied to the
host; numpy dtypes numpy cannot compute with natively (bfloat16 and the other ml_dtypes floats)
become float32, which holds every value of theirs exactly.
"""
from __future__ import annotations

import numpy as np

from ember.frontend.tensor import Tensor

__all__ = ["make_np"]


def make_np(value, what: str = "value") -> np.ndarray:
    """`value` as a numpy array: a Python or numpy scalar becomes a 1-element array (as torch's)."""
    if isinstance(value, np.ndarray):
        return _native(value)
    if np.isscalar(value):
        return _native(np.array([value]))
    if isinstance(value, Tensor):
        if value.device.type == "meta":
            raise ValueError(f"SummaryWriter: {what} is a tensor on the meta device, which holds no data to log")
        return _native(value.detach().cpu().numpy())
    raise NotImplementedError(f"SummaryWriter: {what} must be an ember tensor, a numpy array or a Python number, "
                              f"got {type(value).__name__}")


def _native(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "V" or array.dtype.type.__module__.startswith("ml_dtypes"):
        return array.astype(np.float32)
    return array
