"""Sizes past what memory can hold: a storage whose byte size overflows is refused by the shared shape rules
as torch refuses it (RuntimeError, its message), on every device, meta included; an allocation the device
cannot make raises ember.OutOfMemoryError (a RuntimeError, as torch.OutOfMemoryError) naming the op and the
device with its allocator's counters, changes nothing, and the process goes on working."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

OVERFLOWS = {   # call -> torch's message
    "empty(2**62, 4)": (lambda m, d: m.empty(2**62, 4, device=d), "Storage size calculation overflowed with sizes="),
    "zeros(2**31, 2**31)": (lambda m, d: m.zeros(2**31, 2**31, device=d), "Storage size calculation overflowed"),
    "ones(2**61) float64": (lambda m, d: m.ones(2**61, dtype=m.float64, device=d), "Storage size calculation overflowed"),
    "full((2**62, 4), 1.0)": (lambda m, d: m.full((2**62, 4), 1.0, device=d), "Storage size calculation overflowed"),
    "eye(2**40)": (lambda m, d: m.eye(2**40, device=d), "numel: integer multiplication overflow"),
}


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("case", sorted(OVERFLOWS))
def test_storage_size_overflow_is_torchs_runtime_error(case, device):
    call, message = OVERFLOWS[case]
    with pytest.raises(RuntimeError, match=message):
        call(torch, device)
    with pytest.raises(RuntimeError, match=message):
        call(ember, device)


def test_meta_sizes_up_to_the_limit_are_fine():
    assert ember.empty(2**40, device="meta").shape == torch.empty(2**40, device="meta").shape


def _goes_on(device: str) -> None:
    a = ember.arange(6.0, device=device).reshape(2, 3)
    assert (a * 2).sum().item() == 30.0
    assert np.array_equal(a.t().contiguous().cpu().numpy(), np.arange(6.0).reshape(2, 3).T)


#: 256 TiB of float32: more than a 47-bit address space holds, so no allocator can hand it out, whatever the
#: system's overcommit policy (a smaller size could be granted and then fault its pages in)
HUGE = 2**46


def test_cpu_allocation_failure_is_out_of_memory_and_the_process_goes_on():
    with pytest.raises(RuntimeError):
        torch.ones(HUGE)                            # torch: a RuntimeError (its DefaultCPUAllocator's)
    with pytest.raises(ember.OutOfMemoryError, match=r"out of memory on cpu: .*available host bytes") as info:
        ember.ones(HUGE)
    assert isinstance(info.value, RuntimeError) and not isinstance(info.value, MemoryError)
    a = ember.ones(2**20)
    with pytest.raises(ember.OutOfMemoryError, match=r"out of memory on cpu"):
        ember.ones(2**20) + ember.ones(HUGE)[: 2**20]        # inside an expression
    assert a.sum().item() == 2**20
    _goes_on("cpu")
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError is ember.errors.OutOfMemoryError


def test_opencl_allocation_failure_is_out_of_memory_and_the_allocator_is_unchanged():
    if not ember.opencl.is_available():
        pytest.skip("opencl backend not available")
    ember.opencl.synchronize()
    before = ember.opencl.memory_allocated()
    with pytest.raises(ember.OutOfMemoryError, match=r"empty.memory_format\(\): out of memory on opencl: .*allocated_bytes"):
        ember.empty(HUGE, device="opencl")
    assert ember.opencl.memory_allocated() == before
    _goes_on("opencl")


def test_cuda_pool_exhaustion_is_a_memory_error_the_dispatcher_converts():
    """Without a GPU: cupy's pool reports exhaustion as cupy.cuda.memory.OutOfMemoryError, a MemoryError, which
    ember-cuda's counting allocator passes on uncounted; the dispatcher turns every MemoryError a kernel
    raises into ember.OutOfMemoryError (the cpu test above shows it)."""
    cupy = pytest.importorskip("cupy", reason="needs cupy (not a GPU)")
    from ember_cuda.memory import CountingAllocator

    class ExhaustedPool:
        def malloc(self, n):
            raise cupy.cuda.memory.OutOfMemoryError(n, 0, 0)

    alloc = CountingAllocator(ExhaustedPool())
    with pytest.raises(MemoryError):
        alloc(1 << 30)
    assert alloc.device_stats(0).allocated == 0
