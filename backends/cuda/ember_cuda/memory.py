"""Memory statistics on top of cupy's memory pool: a counting allocator per device.

cupy's `MemoryPool` caches freed blocks (512-byte rounding, like PyTorch's caching allocator)
and reports `used_bytes()` / `total_bytes()`, but no peak and no allocation count. The
`CountingAllocator` installed with `cupy.cuda.set_allocator` forwards every allocation to the
pool and wraps the block in an `UnownedMemory` whose owner is a small `_Lease`; the lease is
collected when the last array viewing the block is, so it subtracts the block's size then and
the pooled block returns to the pool. That gives `allocated_bytes` (live tensors, rounded as
the pool rounds), `peak_bytes`, `num_allocs`, and from the pool `reserved_bytes` (live plus
cached). The counter covers every cupy allocation in the process (raw cupy code too), as
torch.cuda.memory_allocated covers every torch allocation.
"""
from __future__ import annotations

import threading


class _Lease:
    """Holds a pooled MemoryPointer; un-counts its bytes when the last view is gone."""

    __slots__ = ("ptr", "size", "stats")

    def __init__(self, ptr, size: int, stats: "DeviceStats") -> None:
        self.ptr = ptr
        self.size = size
        self.stats = stats

    def __del__(self) -> None:
        st = self.stats
        if st is not None:
            st.allocated -= self.size


class DeviceStats:
    """Counters of one device (bytes are the pool's rounded sizes)."""

    __slots__ = ("allocated", "peak", "num_allocs", "peak_reserved")

    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self.num_allocs = 0
        self.peak_reserved = 0


class CountingAllocator:
    """`allocator(nbytes) -> MemoryPointer` for cupy.cuda.set_allocator, counting per device."""

    def __init__(self, pool) -> None:
        self.pool = pool                       # a cupy.cuda.MemoryPool
        self.stats: dict[int, DeviceStats] = {}
        self.lock = threading.Lock()

    def device_stats(self, device_id: int) -> DeviceStats:
        st = self.stats.get(device_id)
        if st is None:
            with self.lock:
                st = self.stats.setdefault(device_id, DeviceStats())
        return st

    def __call__(self, nbytes: int):
        import cupy

        pooled = self.pool.malloc(nbytes)
        if nbytes == 0:
            return pooled
        dev = pooled.device_id
        size = pooled.mem.size                 # the pool's rounded size
        st = self.device_stats(dev)
        st.allocated += size
        st.num_allocs += 1
        if st.allocated > st.peak:
            st.peak = st.allocated
        mem = cupy.cuda.memory.UnownedMemory(pooled.ptr, size, _Lease(pooled, size, st), dev)
        return cupy.cuda.MemoryPointer(mem, 0)

    def stats_of(self, device_id: int) -> dict[str, int]:
        import cupy

        st = self.device_stats(device_id)
        with cupy.cuda.Device(device_id):
            reserved = int(self.pool.total_bytes())
        st.peak_reserved = max(st.peak_reserved, reserved)
        return {"allocated_bytes": st.allocated, "peak_bytes": st.peak, "reserved_bytes": reserved,
                "peak_reserved_bytes": st.peak_reserved, "num_allocs": st.num_allocs}

    def reset_peak(self, device_id: int) -> None:
        import cupy

        st = self.device_stats(device_id)
        st.peak = st.allocated
        with cupy.cuda.Device(device_id):
            st.peak_reserved = int(self.pool.total_bytes())

    def empty_cache(self) -> None:
        self.pool.free_all_blocks()
