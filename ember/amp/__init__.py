"""Automatic mixed precision (torch.amp): `autocast`, `GradScaler`, `custom_fwd`, `custom_bwd`.

`ember.amp.autocast` is `ember.autocast` (the Autocast dispatch key, ember/frontend/autocast.py);
`GradScaler` does dynamic loss scaling with PyTorch's defaults (ember/amp/grad_scaler.py).
"""
from __future__ import annotations

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
