"""What `ember.memory.track` costs: one digits-MLP training step (forward, backward, AdamW step)
on cpu, untracked vs tracked (issue 6: at most +20% with the optional paths off, nothing when
not in use).

`tracking` is a parameter of the same benchmark, so the ratio comes from one run on one machine:
"off" is the step every program pays (the tracker's hooks are module variables that stay None
outside a `track()` block, checked only where a storage is created or autograd saves a tensor);
"ops=False" records categories, modules, phases and the timeline; "ops=True" (the default) also
names each allocation's op, through a dispatch mode that costs one more dispatcher pass per call.
"""
from __future__ import annotations

import numpy as np


class TrainingStepTracked:
    """64x128x10 MLP, batch 64, AdamW: `time_step` with and without an enclosing tracker."""

    params = ["off", "ops=False", "ops=True"]
    param_names = ["tracking"]

    def setup(self, tracking):
        import ember
        import ember.memory

        rng = np.random.default_rng(0)
        self.x = ember.tensor(rng.normal(size=(64, 64)).astype(np.float32))
        self.y = ember.tensor(rng.integers(0, 10, size=(64,)))
        self.model = ember.nn.Sequential(ember.nn.Linear(64, 128), ember.nn.ReLU(), ember.nn.Linear(128, 10))
        self.opt = ember.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.loss = ember.nn.functional.cross_entropy
        self.step()                                    # optimizer state exists before timing
        self.tracker = (None if tracking == "off" else
                        ember.memory.track(model=self.model, optimizer=self.opt, ops=tracking == "ops=True"))
        if self.tracker is not None:
            self.tracker.__enter__()

    def teardown(self, tracking):
        if self.tracker is not None:
            self.tracker.__exit__(None, None, None)

    def step(self):
        self.opt.zero_grad()
        self.loss(self.model(self.x), self.y).backward()
        self.opt.step()

    def time_step(self, tracking):
        self.step()
