"""`ember.cuda.amp`: torch.cuda.amp's deprecated aliases of ember.amp for device type "cuda"."""
from __future__ import annotations

import warnings

from ember.amp import GradScaler as _GradScaler
from ember.amp import autocast as _autocast
from ember.amp import custom_bwd as _custom_bwd
from ember.amp import custom_fwd as _custom_fwd
from ember.frontend import dtype as _dt

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]


class autocast(_autocast):
    """Deprecated: use ember.amp.autocast("cuda", ...)."""

    def __init__(self, enabled: bool = True, dtype=_dt.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`ember.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`ember.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """Deprecated: use ember.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`ember.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: use ember.amp.custom_fwd(device_type="cuda")."""
    warnings.warn("`ember.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`ember.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """Deprecated: use ember.amp.custom_bwd(device_type="cuda")."""
    warnings.warn("`ember.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`ember.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _custom_bwd(bwd, device_type="cuda")
