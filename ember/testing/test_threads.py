"""Several threads on the device under test at once (ember.testing.stress).

  test_training_in_threads_equals_alone   4 and 8 threads training at once give, bit for bit, the
                                          losses and weights of the same run alone
  test_backward_in_threads_keeps_every_gradient
                                          backward passes in 4 threads over one shared weight
                                          accumulate every pass's gradient

On meta, which has no values, the threads must run through and give the right shapes.
`EMBER_STRESS_STEPS` sets the steps per thread (200; the repository's lean `make test` run takes 20).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from . import stress
from .plugin import NUMPY_WARNINGS

pytestmark = NUMPY_WARNINGS

#: steps per thread: enough for every thread to overlap every other through whole steps
STEPS = int(os.environ.get("EMBER_STRESS_STEPS", "200"))


@pytest.mark.parametrize("threads", [4, 8])
def test_training_in_threads_equals_alone(threads, ember_device):
    alone = stress.train_alone(ember_device.name, STEPS)
    runs = stress.train_in_threads(ember_device.name, threads, STEPS)
    assert len(runs) == threads
    for i, run in enumerate(runs):
        if ember_device.is_meta:
            assert [w.shape for w in run.weights.values()] == [w.shape for w in alone.weights.values()]
            assert len(run.losses) == STEPS
        else:
            assert run.differences(alone) == [], f"thread {i} of {threads}"


def test_backward_in_threads_keeps_every_gradient(ember_device):
    grad, expected = stress.backward_in_threads(ember_device.name, threads=4, passes=50)
    assert grad.shape == expected.shape
    if not ember_device.is_meta:
        np.testing.assert_array_equal(grad, expected)
