"""DataLoader worker processes: the loop each worker runs, and get_worker_info().

A worker receives tasks `(task_id, indices)` on its own queue (indices is None for an
IterableDataset: "the next batch of your stream"), and answers `(task_id, worker_id, result)`
on the shared result queue; result is a batch, `_IterationEnd` when its stream ran out, or
an `_ExceptionWrapper`. A `None` task ends the worker. Seeding follows torch: worker k uses
seed = base_seed + k for Python's `random`, ember's default generators and numpy's legacy
global generator (seed mod 2**32).
"""
from __future__ import annotations

import random
import traceback
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerInfo:
    """What `get_worker_info()` returns inside a worker process."""
    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's id, num_workers, seed and dataset copy; None in the main process."""
    return _worker_info


class _IterationEnd:
    """A worker's IterableDataset iterator is exhausted."""


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process as type + formatted text."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        self.msg = f"Caught {type(exc).__name__} {where}.\nOriginal {''.join(traceback.format_exception(exc))}"

    def reraise(self):
        try:
            err = self.exc_type(self.msg)
        except Exception:
            err = RuntimeError(self.msg)
        raise err


def _worker_loop(dataset, index_queue, result_queue, collate_fn, auto_collation: bool, batch_size,
                 drop_last: bool, base_seed: int, worker_init_fn, worker_id: int, num_workers: int,
                 is_iterable: bool) -> None:
    global _worker_info
    try:
        import numpy as np
        import ember

        seed = base_seed + worker_id
        random.seed(seed)
        ember.manual_seed(seed)
        np.random.seed(seed % 2 ** 32)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            stream = iter(dataset) if is_iterable else None
        except Exception as e:  # reported on the first task
            init_error = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            task = index_queue.get()
            if task is None:
                break
            task_id, indices = task
            if init_error is not None:
                result_queue.put((task_id, worker_id, init_error))
                continue
            try:
                if is_iterable:
                    if exhausted:
                        result = _IterationEnd()
                    else:
                        result = _fetch_stream(stream, collate_fn, auto_collation, batch_size, drop_last)
                        exhausted = isinstance(result, _IterationEnd)
                elif auto_collation:
                    result = collate_fn([dataset[i] for i in indices])
                else:
                    result = collate_fn(dataset[indices])
            except Exception as e:
                result = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
            result_queue.put((task_id, worker_id, result))
    except KeyboardInterrupt:
        pass


def _fetch_stream(stream, collate_fn, auto_collation: bool, batch_size, drop_last: bool):
    """The next batch (or sample) of an IterableDataset's iterator, or _IterationEnd."""
    if not auto_collation:
        try:
            return collate_fn(next(stream))
        except StopIteration:
            return _IterationEnd()
    data = []
    for item in stream:
        data.append(item)
        if len(data) == batch_size:
            break
    if not data or (drop_last and len(data) < batch_size):
        return _IterationEnd()
    return collate_fn(data)
