"""Allocator models replayed over a recorded timeline: what a device allocator would hold.

A tracker records the bytes tensors ask for. A device allocator hands out more: it rounds
sizes and keeps freed blocks cached in segments it reserved from the driver. Replaying the
timeline through a model of the allocator gives the `allocated` (rounded blocks in use) and
`reserved` (segments held) figures that torch.cuda.max_memory_allocated / max_memory_reserved
report.

    exact         every request costs its size; nothing is cached (the tracker's own peak)
    cuda-caching  PyTorch's CUDACachingAllocator with its default settings
                  (c10/cuda/CUDACachingAllocator.cpp):
                  - a request is rounded up to a multiple of 512 bytes (kMinBlockSize; 0 bytes
                    allocates nothing);
                  - requests up to 1 MiB (kSmallSize) come from the small pool, whose segments
                    are 2 MiB (kSmallBuffer); larger ones from the large pool, whose segments
                    are 20 MiB (kLargeBuffer) for requests under 10 MiB (kMinLargeAlloc) and
                    the request rounded up to 2 MiB (kRoundLarge) otherwise;
                  - a request takes the smallest cached free block of its pool that fits
                    (best fit, lowest address on ties), else a new segment;
                  - a block is split when the remainder is at least 512 bytes (small pool) or
                    more than 1 MiB (large pool); otherwise the whole block is handed out;
                  - a freed block merges with free neighbours in its segment; segments are
                    never returned (no empty_cache, no out-of-memory retry).
                  Not modelled: streams (one stream assumed), expandable segments,
                  max_split_size_mb and roundup_power2_divisions settings, garbage collection.
    cupy-pool     CuPy's default MemoryPool (cupy/cuda/memory.pyx, SingleDeviceMemoryPool):
                  requests rounded up to 512 bytes; one pool; the smallest cached free chunk that
                  fits is split (the remainder, a multiple of 512, stays cached), else a new
                  allocation of exactly the rounded size; freed chunks merge with free neighbours
                  of the same allocation; nothing is returned (free_all_blocks not called).
"""
from __future__ import annotations

MODELS = ("exact", "cuda-caching", "cupy-pool")

_MIN_BLOCK = 512
_SMALL_SIZE = 1 << 20
_SMALL_BUFFER = 2 << 20
_LARGE_BUFFER = 20 << 20
_MIN_LARGE_ALLOC = 10 << 20
_ROUND_LARGE = 2 << 20


def _round(n: int, to: int) -> int:
    return -(-n // to) * to


class _Block:
    __slots__ = ("segment", "offset", "size", "small", "free", "prev", "next")

    def __init__(self, segment: int, offset: int, size: int, small: bool) -> None:
        self.segment, self.offset, self.size, self.small = segment, offset, size, small
        self.free = True
        self.prev: _Block | None = None
        self.next: _Block | None = None


class CudaCachingModel:
    """A replay of PyTorch's caching allocator (see the module docstring for the rules)."""

    def __init__(self, cupy: bool = False) -> None:
        self.cupy = cupy              # CuPy's pool: one pool, segments of the rounded request size
        self.pools: dict[bool, list[_Block]] = {True: [], False: []}   # small? -> free blocks
        self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0
        self.segments = 0

    def malloc(self, nbytes: int) -> _Block | None:
        if nbytes <= 0:
            return None
        size = _round(nbytes, _MIN_BLOCK)
        small = size <= _SMALL_SIZE or self.cupy
        pool = self.pools[small]
        fits = [b for b in pool if b.size >= size]
        if fits:
            block = min(fits, key=lambda b: (b.size, b.segment, b.offset))
            pool.remove(block)
        else:
            if self.cupy:
                seg = size
            else:
                seg = _SMALL_BUFFER if small else (_LARGE_BUFFER if size < _MIN_LARGE_ALLOC else _round(size, _ROUND_LARGE))
            block = _Block(self.segments, 0, seg, small)
            self.segments += 1
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        rest = block.size - size
        if (rest >= _MIN_BLOCK) if small else (rest > _SMALL_SIZE):
            tail = _Block(block.segment, block.offset + size, rest, small)
            tail.prev, tail.next = block, block.next
            if block.next is not None:
                block.next.prev = tail
            block.next = tail
            block.size = size
            pool.append(tail)
        block.free = False
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def free(self, block: _Block | None) -> None:
        if block is None:
            return
        self.allocated -= block.size
        block.free = True
        pool = self.pools[block.small]
        for nb in (block.prev, block.next):
            if nb is not None and nb.free:
                pool.remove(nb)
                if nb is block.prev:
                    block.offset = nb.offset
                    block.prev = nb.prev
                    if nb.prev is not None:
                        nb.prev.next = block
                else:
                    block.next = nb.next
                    if nb.next is not None:
                        nb.next.prev = block
                block.size += nb.size
        pool.append(block)


def simulate(events, allocator: str = "exact", device: str | None = None) -> dict[str, int]:
    """Replay `events` through an allocator model: a tracker's `timeline` entries, or
    ("alloc" | "free", nbytes, key) triples (a free's nbytes is ignored: the key names the block). Returns peak_allocated, peak_reserved and the final
    allocated and reserved bytes. `device`: only timeline entries on this device ("cuda", "cpu:0")."""
    if allocator not in MODELS:
        raise ValueError(f"ember.memory.simulate(): argument 'allocator' must be one of {list(MODELS)}, "
                         f"got {allocator!r}")
    steps = []
    for e in events:
        if isinstance(e, dict):
            if device is not None and e["device"] != device and e["device"].split(":")[0] != device:
                continue
            steps.append((e["kind"], abs(e["bytes"]), e["id"]))
        else:
            steps.append(tuple(e))
    if allocator == "exact":
        cur = peak = 0
        sizes: dict = {}
        for kind, n, key in steps:
            if kind == "alloc":
                sizes[key] = n
                cur += n
                peak = max(peak, cur)
            else:
                cur -= sizes.pop(key, 0)
        return {"peak_allocated": peak, "peak_reserved": peak, "allocated": cur, "reserved": cur}
    model = CudaCachingModel(cupy=allocator == "cupy-pool")
    live: dict = {}
    for kind, n, key in steps:
        if kind == "alloc":
            live[key] = model.malloc(n)
        elif key in live:
            model.free(live.pop(key))
    return {"peak_allocated": model.peak_allocated, "peak_reserved": model.peak_reserved,
            "allocated": model.allocated, "reserved": model.reserved}
