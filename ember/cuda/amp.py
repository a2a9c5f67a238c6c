"""`ember.cuda.amp`: torch.cuda.amp's deprecated aliases of ember.amp for device type "cuda"."""
from __future__ import annotations

from ember.amp import custom_bwd as _custom_bwd
from ember.amp import custom_fwd as _custom_fwd
from ember.amp.deprecated import aliases, warn
from ember.core import dtype as _dt

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]

autocast, GradScaler = aliases("cuda", _dt.float16)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: use ember.amp.custom_fwd(device_type="cuda")."""
    warn("cuda.amp", "custom_fwd", "ember.amp.custom_fwd(args..., device_type='cuda')")
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """Deprecated: use ember.amp.custom_bwd(device_type="cuda")."""
    warn("cuda.amp", "custom_bwd", "ember.amp.custom_bwd(args..., device_type='cuda')")
    return _custom_bwd(bwd, device_type="cuda")
