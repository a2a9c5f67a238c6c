"""torch.nn.functional.pad."""
from __future__ import annotations

from ember._generated import functions as _F


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims, last dim first: mode constant (with `value`), reflect,
    replicate or circular."""
    return _F.pad(input, list(pad), mode, value)
