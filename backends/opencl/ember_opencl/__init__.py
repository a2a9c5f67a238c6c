"""ember-opencl: the OpenCL backend plugin of Ember (devices `opencl`, `opencl:N`).

    pip install ./backends/opencl[pocl]     # [pocl]: PoCL, an OpenCL implementation for CPUs
    x = ember.ones(3, device="opencl")

`devices()` lists the selected devices (`opencl:N` is the N-th; `EMBER_OPENCL_DEVICE` chooses
them, see ember_opencl.context), `devices(all=True)` every OpenCL device found with its
selector. `ember_opencl.runtime` holds the `ember.cuda`-style helpers (is_available,
device_count, synchronize, memory_allocated, max_memory_allocated, memory_summary).
"""
from __future__ import annotations

__version__ = "0.1.0"


def devices(all: bool = False):   # noqa: A002
    """The selected OpenCL devices (DeviceInfo: index, selector, platform, name, type, ...)."""
    from .context import devices as _devices

    return _devices(all=all)


def __getattr__(name):
    if name == "runtime":
        import importlib

        return importlib.import_module(".runtime", __name__)
    raise AttributeError(name)
