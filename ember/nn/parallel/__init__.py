"""ember.nn.parallel (torch.nn.parallel): importable, so programs that import DistributedDataParallel at the top
run. Data parallelism itself belongs to ember.distributed, which ember does not have yet: constructing
DistributedDataParallel or DataParallel raises NotImplementedError saying so."""
from __future__ import annotations

__all__ = ["DistributedDataParallel", "DataParallel"]


class _Unavailable:
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"ember.nn.parallel.{type(self).__name__}: data parallelism needs ember.distributed, "
                                  "which ember does not have yet")


class DistributedDataParallel(_Unavailable):
    """Not available yet (see the module docstring)."""


class DataParallel(_Unavailable):
    """Not available yet (see the module docstring)."""
