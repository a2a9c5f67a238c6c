"""`ember.cpu.amp`: torch.cpu.amp's deprecated aliases of ember.amp for device type "cpu"."""
from __future__ import annotations

import warnings

from ember.amp import GradScaler as _GradScaler
from ember.amp import autocast as _autocast
from ember.frontend import dtype as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """Deprecated: use ember.amp.autocast("cpu", ...)."""

    def __init__(self, enabled: bool = True, dtype=_dt.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`ember.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`ember.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: use ember.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`ember.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
