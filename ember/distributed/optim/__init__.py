"""ember.distributed.optim (torch.distributed.optim): optimizers for training across processes.

`ZeroRedundancyOptimizer` wraps any ember.optim optimizer class so that each rank of a process
group keeps the optimizer state of only its own share of the parameters (ZeRO stage 1), and
broadcasts its updated share to the other ranks after every step.
"""
from __future__ import annotations

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
