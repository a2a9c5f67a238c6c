"""`DataLoader`: batches from a dataset, in the main process or in worker processes.

Map-style datasets are read in the order of a sampler (SequentialSampler, or RandomSampler
when shuffle=True), grouped by a BatchSampler and collated by `collate_fn`
(default_collate; default_convert when batch_size=None). IterableDatasets are read as a
stream and chunked into batches. With num_workers > 0 each worker process gets its own copy
of the dataset; batches come back in sampler order (for IterableDatasets, round-robin over
the workers until each is exhausted, as torch). `pin_memory` is accepted and has no effect:
ember's cpu tensors live in ordinary host memory, and device backends copy from it directly.
Workers are started at each `iter()` (persistent_workers is accepted; workers are not kept
between epochs).
"""
from __future__ import annotations

import itertools
import multiprocessing
import queue as _queue
from typing import Any, Callable, Iterable

from ._collate import default_collate, default_convert
from ._worker import _ExceptionWrapper, _IterationEnd, _worker_loop
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """For IterableDatasets: one None per item requested."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """torch.utils.data.DataLoader's arguments and semantics (see the module docstring)."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                from math import ceil

                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return self._single_process_iter()
        return _MultiProcessIter(self)

    def _single_process_iter(self):
        if self._is_iterable:
            from ._worker import _fetch_stream

            stream = iter(self.dataset)
            while True:
                batch = _fetch_stream(stream, self.collate_fn, self._auto_collation, self.batch_size, self.drop_last)
                if isinstance(batch, _IterationEnd):
                    return
                yield batch
        elif self._auto_collation:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])


class _MultiProcessIter:
    """One epoch over worker processes: up to prefetch_factor * num_workers tasks in flight,
    results yielded in task order."""

    _POLL = 1.0          # seconds between checks that the workers are still alive

    def __init__(self, loader: DataLoader) -> None:
        from ember._generated import functions as F

        self._loader = loader
        self._num_workers = loader.num_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        gen = loader.generator
        base_seed = int(F.randint(0, 2 ** 62, (1,), generator=gen).item()) if gen is not None \
            else int(F.randint(0, 2 ** 62, (1,)).item())
        self._result_queue = ctx.Queue()
        self._index_queues = []
        self._workers = []
        self._shutdown = False
        for wid in range(self._num_workers):
            iq = ctx.Queue()
            w = ctx.Process(target=_worker_loop, daemon=True,
                            args=(loader.dataset, iq, self._result_queue, loader.collate_fn, loader._auto_collation,
                                  loader.batch_size, loader.drop_last, base_seed, loader.worker_init_fn, wid,
                                  self._num_workers, loader._is_iterable))
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._tasks = iter(loader._index_sampler) if not loader._is_iterable else None
        self._active = [True] * self._num_workers        # iterable: workers whose stream is not exhausted
        self._next_worker = itertools.cycle(range(self._num_workers))
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_worker: dict[int, int] = {}
        self._cache: dict[int, Any] = {}
        for _ in range(loader.prefetch_factor * self._num_workers):
            if not self._put_task():
                break

    def _put_task(self) -> bool:
        if self._loader._is_iterable:
            if not any(self._active):
                return False
            for _ in range(self._num_workers):
                wid = next(self._next_worker)
                if self._active[wid]:
                    break
            indices = None
        else:
            try:
                indices = next(self._tasks)
            except StopIteration:
                return False
            wid = next(self._next_worker)
        self._index_queues[wid].put((self._send_idx, indices))
        self._task_worker[self._send_idx] = wid
        self._send_idx += 1
        return True

    def __iter__(self):
        return self

    def _get_result(self):
        waited = 0.0
        while True:
            try:
                return self._result_queue.get(timeout=self._POLL)
            except _queue.Empty:
                waited += self._POLL
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(str(w.pid) for w in dead)}) exited "
                                       "unexpectedly") from None
                if self._loader.timeout > 0 and waited >= self._loader.timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} seconds") from None

    def __next__(self):
        while True:
            if self._rcvd_idx >= self._send_idx:
                self._shutdown_workers()
                raise StopIteration
            while self._rcvd_idx not in self._cache:
                task_id, wid, result = self._get_result()
                self._cache[task_id] = result
            result = self._cache.pop(self._rcvd_idx)
            self._rcvd_idx += 1
            if isinstance(result, _IterationEnd):
                self._active[self._task_worker[self._rcvd_idx - 1]] = False
                self._put_task()
                continue
            self._put_task()
            if isinstance(result, _ExceptionWrapper):
                self._shutdown_workers()
                result.reraise()
            return result

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            try:
                q.put(None)
            except Exception:
                pass
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:
            pass
