"""`ember.opencl`: torch.cuda-style helpers for the opencl device of the `ember-opencl` plugin.

    ember.opencl.is_available(); ember.opencl.device_count(); ember.opencl.synchronize()
    ember.opencl.memory_allocated(); ember.opencl.max_memory_allocated()
    print(ember.opencl.memory_summary()); ember.opencl.reset_peak_memory_stats(); ember.opencl.empty_cache()

Each function asks the backend registry for the opencl plugin and calls its runtime helpers
(ember_opencl.runtime); pyopencl is imported only then, never by `import ember`. Without the
plugin, or without an OpenCL device, it behaves as ember.cuda does without a GPU (and as
torch.cuda in a CPU-only PyTorch): is_available() False, device_count() 0, memory counters
0, and a BackendUnavailableError with the reason from the functions that need the device.
The shared implementation is ember/_device_module.py.
"""
from __future__ import annotations

from ember._device_module import DeviceModule, module_for

_MODULE = module_for("opencl")

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

__all__ = list(DeviceModule.EXPORTED) + ["device"]
