"""torch.cpu.amp / torch.cuda.amp: the deprecated per-device spellings of ember.amp.

`aliases(device_type, default_dtype)` builds the `autocast` and `GradScaler` subclasses that
`ember.cpu.amp` and `ember.cuda.amp` export: torch's signatures (no device argument), a
FutureWarning naming the replacement, then ember.amp with the device type filled in.
"""
from __future__ import annotations

import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def warn(module: str, name: str, replacement: str) -> None:
    warnings.warn(f"`ember.{module}.{name}(args...)` is deprecated. Please use `{replacement}` instead.",
                  FutureWarning, stacklevel=3)


def aliases(device_type: str, default_dtype) -> tuple[type, type]:
    """(autocast, GradScaler) for `ember.<device_type>.amp`."""
    module = f"{device_type}.amp"

    class autocast(_autocast):
        __doc__ = f'Deprecated: use ember.amp.autocast("{device_type}", ...).'

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True) -> None:
            warn(module, "autocast", f"ember.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = f'Deprecated: use ember.amp.GradScaler("{device_type}", ...).'

        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            warn(module, "GradScaler", f"ember.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__ = f"ember.{module}"
        cls.__qualname__ = cls.__name__
    return autocast, GradScaler
