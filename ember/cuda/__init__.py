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

_MODULE = module_for("cuda")

is_available = _MODULE.is_available
device_count = _MODULE.device_count
is_initialized = _MODULE.is_initialized
init = _MODULE.init
current_device = _MODULE.current_device
set_device = _MODULE.set_device
device = _MODULE.device_context()
get_device_name = _MODULE.get_device_name
synchronize = _MODULE.synchronize
memory_stats = _MODULE.memory_stats
memory_allocated = _MODULE.memory_allocated
max_memory_allocated = _MODULE.max_memory_allocated
memory_reserved = _MODULE.memory_reserved
max_memory_reserved = _MODULE.max_memory_reserved
reset_peak_memory_stats = _MODULE.reset_peak_memory_stats
reset_max_memory_allocated = _MODULE.reset_peak_memory_stats
empty_cache = _MODULE.empty_cache
memory_summary = _MODULE.memory_summary
is_bf16_supported = _MODULE.is_bf16_supported
manual_seed = _MODULE.manual_seed
manual_seed_all = _MODULE.manual_seed_all
seed = _MODULE.seed
seed_all = _MODULE.seed_all
initial_seed = _MODULE.initial_seed
get_rng_state = _MODULE.get_rng_state
set_rng_state = _MODULE.set_rng_state

__all__ = list(DeviceModule.EXPORTED) + ["device", "reset_max_memory_allocated", "amp"]


def __getattr__(name: str):
    if name == "amp":               # torch.cuda.amp (deprecated aliases), imported on first use
        import importlib

        return importlib.import_module("ember.cuda.amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")
