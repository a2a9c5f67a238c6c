"""A device that implements only the primitive set: the proof that decompositions are complete.

Device "primdev" holds numpy arrays and registers a kernel for exactly the ops of
`ember.dispatcher.primitive_ops()` (taken from the shared array-kernel library, as a vendor
may call numpy), and has no fallback device. Every other op must reach it through an explicit
kernel or a decomposition; `tests/test_conformance.py` runs the whole conformance suite on it.
"""
import numpy as np

from ember.dispatcher import hookimpl, primitive_ops
from ember.core.numpy_interop import to_numpy_dtype
from ember_cpu.array_kernels import make_kernels
from ember_cpu.plugin import CPUBackend


class PrimitivesOnlyBackend(CPUBackend):
    """cpu's data movement and allocation, none of its kernels beyond the primitives."""
    device_type = "primdev"
    fallback_device = None

    def device_description(self, index: int = 0) -> str:
        return "numpy, primitive kernels only"

    def kernels(self):
        primitives = primitive_ops()
        return {name: k for name, k in make_kernels(np, to_numpy_dtype).items() if name in primitives}


@hookimpl
def ember_backend():
    return PrimitivesOnlyBackend()

