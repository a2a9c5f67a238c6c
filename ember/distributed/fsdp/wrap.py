"""torch.distributed.fsdp.wrap: which submodules FullyShardedDataParallel makes units."""
from __future__ import annotations

from ._wrapper import ModuleWrapPolicy, size_based_auto_wrap_policy

__all__ = ["ModuleWrapPolicy", "size_based_auto_wrap_policy"]
