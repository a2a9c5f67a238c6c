"""`ember.memory`: record and predict memory use (see docs/memory.md).

    with ember.memory.track(model=model, optimizer=opt) as mem:
        loss = loss_fn(model(x), y); loss.backward(); opt.step()
    print(mem.peak_bytes); print(mem.report())

On the meta device the same run predicts what a real device would allocate.
"""
from __future__ import annotations

from .allocators import MODELS, simulate
from .tracker import CATEGORIES, MemoryTracker

__all__ = ["track", "MemoryTracker", "CATEGORIES", "simulate", "MODELS"]


def track(model=None, optimizer=None, device=None, ops: bool = True, target: str | None = None) -> MemoryTracker:
    """A context manager recording every storage allocation and release (any backend, meta included).

    `model`: its parameters, gradients and buffers alive at entry are counted from the start and
    classified; `optimizer`: its state is classified as optimizer state and its steps are
    attributed to `optimizer.<Class>`; `device`: record only storages on this device (e.g. "cpu").

    `ops`: name the op behind each allocation (the timeline's "op") and count tensors made before
    the block from their first use by an op. It costs one more pass through the dispatcher per
    call; with `ops=False` allocations are still attributed to categories, modules and phases, an
    allocation's op is "", and tensors from before the block count only once a module, the
    optimizer or autograd sees them. Peaks of code that creates its inputs inside the block are
    the same either way.

    `target`: the device type a meta run predicts (default cpu). Backends declare the scratch their
    kernels allocate inside one call (`Backend.workspace_ops`, e.g. opencl's packed GEMM panels);
    with a target, meta records it as a temporary alive with that kernel's output.
    """
    return MemoryTracker(model=model, optimizer=optimizer, device=device, ops=ops, target=target)
