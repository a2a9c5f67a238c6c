"""Small helpers shared by the tests that compare ember with torch (the oracle)."""
from __future__ import annotations

import numpy as np
import torch

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def dname(dtype) -> str:
    """'float32' for ember.float32 and torch.float32 alike."""
    return str(dtype).split(".")[-1]


def values(t):
    """Values of an ember or torch tensor as a float64 numpy array (NaN-safe for compare)."""
    if isinstance(t, torch.Tensor):
        return t.detach().to(torch.float64).numpy()
    return np.asarray(t.detach().to(ember.float64).numpy())
