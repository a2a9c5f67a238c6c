"""`ember.backends.mps`: Apple's Metal device is not an ember backend (no plugin provides "mps")."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether an installed plugin provides an available "mps" device (none does today)."""
    from ember._device_module import module_for

    return module_for("mps").is_available()


def is_built() -> bool:
    """Whether a plugin providing "mps" is installed."""
    from ember.dispatcher.plugins import REGISTRY

    return "mps" in REGISTRY.records
