"""ember-cuda: the CUDA backend plugin of Ember (devices `cuda`, `cuda:N`), on cupy.

    pip install ./backends/cuda[cuda12]       # or [cuda13]: the cupy build for the driver's CUDA
    x = ember.ones(3, device="cuda")

Importing this package imports neither cupy nor ember's dispatcher: cupy is imported when the
backend loads (first use of a cuda device, `ember.backends.status()`, `python -m ember info`).
`ember_cuda.runtime` holds the helpers `ember.cuda` delegates to (is_available, device_count,
synchronize, memory_allocated, Stream, Event, ...; see backends/cuda/README.md).
"""
from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name):
    if name == "runtime":
        import importlib

        return importlib.import_module(".runtime", __name__)
    raise AttributeError(name)
