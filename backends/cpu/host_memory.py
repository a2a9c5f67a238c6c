"""Keeping freed host memory for reuse: the cpu backend's answer to page faults on every step.

A training step frees most of what it allocated (activations, gradients' temporaries) and then
allocates the same sizes again. glibc's malloc hands blocks of 128 KiB and more straight back to the
operating system (as mmap'd chunks, or by trimming the heap's top once 2x its adaptive threshold is
free), so each step touches fresh pages and pays a page fault per 4 KiB, zeroing included: a few
thousand per step of a small GPT here, several milliseconds. A caching allocator (torch's CUDA
allocator, jemalloc) keeps such blocks; numpy allocates through malloc, so the cpu backend tunes
malloc instead, once, when it loads: blocks below 32 MiB come from the heap, and the heap is trimmed
only when 512 MiB at its top are free. The process's resident memory then stays near its peak, as
with a caching allocator; tracemalloc and ember.memory, which count live allocations, are unchanged.

Only glibc has these knobs (Linux); elsewhere nothing changes. `EMBER_CPU_KEEP_FREED_MEMORY=0` opts
out.
"""
from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["keep_freed_memory"]

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20          # glibc's ceiling for the mmap threshold on 64-bit systems
TRIM_THRESHOLD = 512 << 20

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Tune glibc's malloc to keep freed blocks (once per process); whether it is tuned."""
    global _applied
    if _applied is None:
        _applied = _tune()
    return _applied


def _tune() -> bool:
    if os.environ.get("EMBER_CPU_KEEP_FREED_MEMORY", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):          # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
