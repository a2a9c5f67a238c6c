"""`ember.backends.cudnn`: torch.backends.cudnn's flags, kept so programs that set them run.

    ember.backends.cudnn.benchmark = True        # accepted; no ember kernel autotunes yet
    ember.backends.cudnn.deterministic = True    # ember's kernels are deterministic already

Ember has no cuDNN kernels, so is_available() is False and version() is None; the flags keep
the values programs give them (defaults as in PyTorch: enabled, allow_tf32 True; benchmark,
deterministic False) for a future cuda plugin to read.
"""
from __future__ import annotations

__all__ = ["is_available", "version", "enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32"]

enabled: bool = True
benchmark: bool = False
benchmark_limit: int = 10
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: no ember backend uses cuDNN."""
    return False


def version() -> int | None:
    """None: cuDNN is not available (as torch.backends.cudnn.version() without it)."""
    return None
