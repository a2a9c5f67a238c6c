"""`ember.cuda`: torch.cuda's helpers for the cuda device, provided by a backend plugin.

Ember's core has no CUDA code: the `ember-cuda` plugin (backends/cuda) provides the device.
Without it (or without a GPU) this module behaves like torch.cuda in a CPU-only PyTorch, so
`device = "cuda" if ember.cuda.is_available() else "cpu"` and friends just work:
is_available() is False, device_count() is 0, memory counters read 0, seeding is a no-op,
and functions that need the device raise BackendUnavailableError saying why.
With the plugin, every function asks the plugin (its runtime helpers, else its Backend).
The shared implementation is ember/_device_module.py.
"""
from __future__ import annotations

from ember._device_module import DeviceModule, module_for
from ember.errors import OutOfMemoryError  # noqa: F401  (torch.cuda.OutOfMemoryError)

_MODULE = module_for("cuda")

# the torch.cuda-style functions (DeviceModule.EXPORTED), bound to this device type
globals().update({name: getattr(_MODULE, name) for name in DeviceModule.EXPORTED})
device = _MODULE.device_context()
reset_max_memory_allocated = _MODULE.reset_peak_memory_stats

__all__ = list(DeviceModule.EXPORTED) + ["device", "reset_max_memory_allocated", "amp", "OutOfMemoryError"]


def __getattr__(name: str):
    if name == "amp":               # torch.cuda.amp (deprecated aliases), imported on first use
        import importlib

        return importlib.import_module("ember.cuda.amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")
