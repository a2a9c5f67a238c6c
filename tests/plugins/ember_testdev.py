"""A vendor-style test plugin: device "testdev" backed by numpy, with two native kernels.

Every other op reaches it through explicit kernels, decompositions, or (for the
primitives it lacks) its fallback device, cpu.
"""
import numpy as np

from ember.dispatcher import Backend, hookimpl
from ember.core.numpy_interop import to_numpy_dtype


class TestDevBackend(Backend):
    device_type = "testdev"
    fallback_device = "cpu"

    def to_host(self, array):
        return array

    def from_host(self, ndarray, device_index=None):
        return np.array(ndarray, order="C", copy=True)

    def empty(self, shape, dtype, device_index=None):
        return np.empty(shape, dtype=to_numpy_dtype(dtype))


def _add(spec, a, b, alpha=1):
    return np.asarray(np.add(a, np.multiply(b, alpha)), dtype=to_numpy_dtype(spec[1]))


def _empty(spec, size, dtype=None, device=None, requires_grad=False):
    return np.empty(spec[0], dtype=to_numpy_dtype(spec[1]))


def _copy(spec, self, src, non_blocking=False):
    np.copyto(self, src, casting="unsafe")
    return self


@hookimpl
def ember_backend():
    return TestDevBackend()


@hookimpl
def ember_kernels(device_type):
    if device_type == "testdev":
        return {"add.Tensor": _add, "empty.memory_format": _empty, "copy_": _copy}
    return None
