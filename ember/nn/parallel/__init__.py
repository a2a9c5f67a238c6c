"""ember.nn.parallel (torch.nn.parallel): DistributedDataParallel (data parallelism across processes, on
ember.distributed's process groups) and DataParallel (one device).

DistributedDataParallel is imported on first use, so `import ember.nn` does not load ember.distributed.
"""
from __future__ import annotations

from .data_parallel import DataParallel

__all__ = ["DistributedDataParallel", "DataParallel"]


def __getattr__(name: str):
    if name == "DistributedDataParallel":
        from .distributed import DistributedDataParallel

        return DistributedDataParallel
    raise AttributeError(f"module 'ember.nn.parallel' has no attribute {name!r}")
