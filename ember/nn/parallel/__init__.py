"""ember.nn.parallel (torch.nn.parallel): importable, so programs that import DistributedDataParallel at the top
run. ember.distributed has the process groups and collectives these wrappers are built on, but not the
wrappers yet: constructing DistributedDataParallel or DataParallel raises NotImplementedError saying so."""
from __future__ import annotations

__all__ = ["DistributedDataParallel", "DataParallel"]


class _Unavailable:
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"ember.nn.parallel.{type(self).__name__}: DDP's bucketed gradient all-reduce is "
                                  "not built yet; ember.distributed's collectives (all_reduce, broadcast) are")


class DistributedDataParallel(_Unavailable):
    """Not available yet (see the module docstring)."""


class DataParallel(_Unavailable):
    """Not available yet (see the module docstring)."""
