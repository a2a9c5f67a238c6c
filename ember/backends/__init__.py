"""Installed backend plugins: `ember.backends.status()` lists each with its state.

A plugin is available (its device works), unavailable (installed, but e.g. no GPU: the
reason says why) or broken (it failed to import or initialise: the error says how).
The submodules cuda, cudnn and mps hold torch.backends' flags (allow_tf32, benchmark, ...).
"""
from __future__ import annotations

from ember.dispatcher.plugins import REGISTRY

# torch.backends.<name>'s flags and queries (small modules, nothing heavy imported)
from . import cuda, cudnn, mps  # noqa: E402,F401


def status() -> list[dict]:
    """[{name, state, reason, source, devices, kernels}] for every installed plugin."""
    return REGISTRY.status()


def register(device_type: str, plugin) -> dict:
    """Register a plugin object or module without packaging it (tests, notebooks)."""
    return REGISTRY.register_plugin(device_type, plugin).as_dict()


def rediscover() -> None:
    """Read the `ember.backends` entry points again (after installing a plugin at run time)."""
    REGISTRY.discover()
