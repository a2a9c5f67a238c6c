"""A caching allocator per device, with the statistics `ember_opencl.runtime` reports.

Sizes are rounded up to 512 bytes (small) or 2 MiB (large, above 1 MiB) as in PyTorch's CUDA
caching allocator; a freed block goes back to a free list of its rounded size and is reused
by the next allocation of that size, so a training loop stops calling clCreateBuffer after its
first step. Every device has one in-order queue, so a buffer freed while kernels that use it
are still queued is only reused by work queued after them. Blocks are released to the driver
by `empty_cache()` or when an allocation fails.
"""
from __future__ import annotations

import threading
from collections import defaultdict

SMALL = 512
LARGE = 2 * 2**20
LARGE_FROM = 2**20


def round_size(nbytes: int) -> int:
    if nbytes <= LARGE_FROM:
        return max(SMALL, -(-nbytes // SMALL) * SMALL)
    return -(-nbytes // LARGE) * LARGE


class Block:
    """One allocation: the buffer and its rounded size; returned to the pool when collected."""

    __slots__ = ("buffer", "size", "allocator", "__weakref__")

    def __init__(self, buffer, size: int, allocator: "CachingAllocator") -> None:
        self.buffer = buffer
        self.size = size
        self.allocator = allocator

    def __del__(self) -> None:
        alloc = self.allocator
        if alloc is not None:
            alloc._free(self.buffer, self.size)


class CachingAllocator:
    def __init__(self, context) -> None:
        self.context = context
        self.free: dict[int, list] = defaultdict(list)
        # reentrant: a Block collected by the garbage collector while this thread allocates frees
        # itself (Block.__del__ -> _free) with the lock already held
        self.lock = threading.RLock()
        self.allocated = 0          # bytes held by live blocks (rounded sizes)
        self.peak = 0
        self.reserved = 0           # bytes held from the driver (live + cached)
        self.peak_reserved = 0
        self.n_alloc = 0
        self.n_driver_alloc = 0

    def allocate(self, nbytes: int) -> Block:
        import pyopencl as cl

        size = round_size(nbytes)
        with self.lock:
            pool = self.free.get(size)
            buf = pool.pop() if pool else None
            if buf is None:
                try:
                    buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size)
                except cl.Error:
                    self._release_cached()
                    try:
                        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size)
                    except cl.Error as exc:     # the dispatcher turns a MemoryError into ember.OutOfMemoryError
                        raise MemoryError(f"the OpenCL device could not allocate {size:,} bytes "
                                          f"({type(exc).__name__}: {exc})") from None
                self.reserved += size
                self.peak_reserved = max(self.peak_reserved, self.reserved)
                self.n_driver_alloc += 1
            self.allocated += size
            self.peak = max(self.peak, self.allocated)
            self.n_alloc += 1
        return Block(buf, size, self)

    def _free(self, buffer, size: int) -> None:
        with self.lock:
            self.allocated -= size
            self.free[size].append(buffer)

    def _release_cached(self) -> None:
        for size, bufs in self.free.items():
            self.reserved -= size * len(bufs)
            for b in bufs:
                b.release()
        self.free.clear()

    def empty_cache(self) -> None:
        with self.lock:
            self._release_cached()

    def reset_peak(self) -> None:
        with self.lock:
            self.peak = self.allocated
            self.peak_reserved = self.reserved

    def stats(self) -> dict[str, int]:
        with self.lock:
            return {"allocated_bytes": self.allocated, "peak_bytes": self.peak, "reserved_bytes": self.reserved,
                    "peak_reserved_bytes": self.peak_reserved, "num_allocs": self.n_alloc,
                    "num_driver_allocs": self.n_driver_alloc}
