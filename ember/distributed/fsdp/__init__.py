"""ember.distributed.fsdp (torch.distributed.fsdp): fully sharded data parallelism.

`fully_shard` (torch's FSDP2 API) shards a module's parameters, gradients and, through them, the
optimizer state across the ranks of a process group; each rank holds 1/N of them and gathers a
unit's parameters only while that unit computes (_fully_shard.py, _param_group.py).
`FullyShardedDataParallel` is torch's FSDP1 wrapper on top of it (_wrapper.py), with its
auto-wrap policies in `ember.distributed.fsdp.wrap`.
"""
from __future__ import annotations

from ._fully_shard import CPUOffloadPolicy, FSDPModule, OffloadPolicy, fully_shard
from ._param_group import MixedPrecisionPolicy
from ._wrapper import (FullStateDictConfig, FullyShardedDataParallel, MixedPrecision, ShardedStateDictConfig,
                       ShardingStrategy, StateDictType)

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy",
           "FullyShardedDataParallel", "ShardingStrategy", "StateDictType", "MixedPrecision", "FullStateDictConfig",
           "ShardedStateDictConfig"]
