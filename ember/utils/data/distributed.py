"""DistributedSampler: each process of a data-parallel job reads its own share of a dataset.

As torch's: with `shuffle`, every rank draws the same permutation (a generator seeded with
`seed + epoch`, so call `set_epoch` at the start of each epoch for a new order) and takes every
`num_replicas`-th index from its rank on. Without `drop_last`, the list is padded by repeating
its start so every rank gets `ceil(len / num_replicas)` indices; with it, the tail that does not
divide evenly is dropped.
"""
from __future__ import annotations

import math
from typing import Iterator

from ember.frontend.random import Generator
from ember._generated.functions import randperm

from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """torch.utils.data.distributed.DistributedSampler. `num_replicas` and `rank` default to the
    default process group's world size and this process's rank."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ember import distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        own = indices[self.rank:self.total_size:self.num_replicas]
        return iter(own)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch seeds the shuffle (seed + epoch): call it before each epoch's iterator."""
        self.epoch = epoch
