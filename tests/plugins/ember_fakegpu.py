"""Vendor-style stand-ins for an accelerator, to run the conformance suite off the cpu.

`fakegpu`: numpy arrays with every cpu kernel, but a device of its own whose memory the host
reaches only through copies (`to_host` copies), so a test that forgot `.cpu()` or read a
device tensor's memory in place would notice. `badgpu`: the same with a subtly wrong `exp`
(off by 1e-4 relative) and a random stream that differs from cpu's, which the suite must catch.
"""
import numpy as np

from ember.dispatcher import hookimpl
from ember_cpu.plugin import CPUBackend


class FakeGPUBackend(CPUBackend):
    device_type = "fakegpu"

    def device_description(self, index: int = 0) -> str:
        return f"{self.device_type} (numpy, separate memory)"

    def to_host(self, array):
        return np.array(array, copy=True)


class BadGPUBackend(FakeGPUBackend):
    device_type = "badgpu"

    def kernels(self):
        k = dict(super().kernels())
        exp, uniform_ = k["exp"], k["uniform_"]

        def wrong_exp(spec, x, *a, **kw):
            out = exp(spec, x, *a, **kw)
            return (out * 1.0001).astype(out.dtype)

        def wrong_uniform_(spec, self, *a, **kw):
            out = uniform_(spec, self, *a, **kw)
            out[...] = 1 - out      # the same distribution, but not the numbers cpu draws
            return out

        k["exp"], k["uniform_"] = wrong_exp, wrong_uniform_
        return k


class FakeGPU:
    @hookimpl
    def ember_backend(self):
        return FakeGPUBackend()


class BadGPU:
    @hookimpl
    def ember_backend(self):
        return BadGPUBackend()


@hookimpl
def ember_backend():          # as an entry point module: fakegpu
    return FakeGPUBackend()
