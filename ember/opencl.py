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

# the torch.cuda-style functions (DeviceModule.EXPORTED), bound to this device type
globals().update({name: getattr(_MODULE, name) for name in DeviceModule.EXPORTED})
device = _MODULE.device_context()

__all__ = list(DeviceModule.EXPORTED) + ["device"]
