"""What `ember.memory.track` costs: one digits-MLP training step (forward, backward, AdamW step)
on cpu, untracked vs tracked (the bound: at most +20% with the optional paths off, nothing when
not in use).

Tracking modes: "off" is the step every program pays (the tracker's hooks are module variables
that stay None outside a `track()` block, checked only where a storage is created, autograd saves
a tensor or the engine runs a node); "ops=False" records categories, modules, phases and the
timeline; "ops=True" (the default) also names each allocation's op, through a dispatch mode that
costs one more dispatcher pass per call.

`TrackerOverhead.track_ratio` is the bounded figure: asv runs each parameter of a timing
benchmark in its own processes, minutes apart, and on a shared machine the load moves between
them by more than the tracker costs, so the ratio of `TrainingStepTracked`'s times is noise. The
ratio benchmark alternates untracked and tracked blocks of steps in one process and divides the
medians, the way `compare.py` measures ember against torch.
"""
from __future__ import annotations

import statistics
import time

import numpy as np


def _digits_mlp_adamw():
    """The step `TrainingStepTracked` and `TrackerOverhead` time, with its model and optimizer."""
    import ember

    rng = np.random.default_rng(0)
    x = ember.tensor(rng.normal(size=(64, 64)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, size=(64,)))
    model = ember.nn.Sequential(ember.nn.Linear(64, 128), ember.nn.ReLU(), ember.nn.Linear(128, 10))
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    loss = ember.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss(model(x), y).backward()
        opt.step()
    step()                                          # optimizer state exists before timing
    return step, model, opt


class TrainingStepTracked:
    """64x128x10 MLP, batch 64, AdamW: `time_step` with and without an enclosing tracker."""

    params = ["off", "ops=False", "ops=True"]
    param_names = ["tracking"]

    def setup(self, tracking):
        import ember.memory

        self.step, model, opt = _digits_mlp_adamw()
        self.tracker = (None if tracking == "off" else
                        ember.memory.track(model=model, optimizer=opt, ops=tracking == "ops=True"))
        if self.tracker is not None:
            self.tracker.__enter__()

    def teardown(self, tracking):
        if self.tracker is not None:
            self.tracker.__exit__(None, None, None)

    def time_step(self, tracking):
        self.step()


class TrackerOverhead:
    """Time of a block of digits-MLP AdamW steps inside `with ember.memory.track(...)` over the same
    block untracked: alternating blocks in one process, median over median (bound: <= 1.2 with
    ops=False). Each tracked block enters and leaves its own tracker, as a user's `with` does."""

    params = ["ops=False", "ops=True"]
    param_names = ["tracking"]
    unit = "ratio"
    timeout = 300
    steps_per_block = 10
    rounds = 31

    def setup(self, tracking):
        self.step, self.model, self.opt = _digits_mlp_adamw()

    def _block(self, tracking) -> float:
        import ember.memory

        steps, step = range(self.steps_per_block), self.step
        t0 = time.perf_counter()
        if tracking is None:
            for _ in steps:
                step()
        else:
            with ember.memory.track(model=self.model, optimizer=self.opt, ops=tracking == "ops=True"):
                for _ in steps:
                    step()
        return time.perf_counter() - t0

    def track_ratio(self, tracking):
        untracked, tracked = [], []
        for r in range(self.rounds):           # the order alternates, so neither side always runs first
            if r % 2:
                tracked.append(self._block(tracking))
                untracked.append(self._block(None))
            else:
                untracked.append(self._block(None))
                tracked.append(self._block(tracking))
        return statistics.median(tracked) / statistics.median(untracked)
