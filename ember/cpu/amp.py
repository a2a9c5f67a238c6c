"""`ember.cpu.amp`: torch.cpu.amp's deprecated aliases of ember.amp for device type "cpu"."""
from __future__ import annotations

from ember.amp.deprecated import aliases
from ember.core import dtype as _dt

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = aliases("cpu", _dt.bfloat16)
