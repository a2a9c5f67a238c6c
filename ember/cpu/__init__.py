"""`ember.cpu`: torch.cpu's small helper module (the cpu is always there) and its `amp` aliases."""
from __future__ import annotations

__all__ = ["is_available", "device_count", "current_device", "synchronize", "amp"]


def is_available() -> bool:
    """Always True, as torch.cpu.is_available()."""
    return True


def device_count() -> int:
    """Always 1, as torch.cpu.device_count()."""
    return 1


def current_device() -> str:
    """"cpu", as torch.cpu.current_device()."""
    return "cpu"


def synchronize(device=None) -> None:
    """A no-op: the cpu backend runs synchronously."""


def __getattr__(name: str):
    if name == "amp":
        import importlib

        return importlib.import_module("ember.cpu.amp")
    raise AttributeError(f"module 'ember.cpu' has no attribute {name!r}")
