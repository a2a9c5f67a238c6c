"""The differential fuzzer on the device under test (ember.testing.fuzz).

  test_fuzz   N mutated op calls per seed (seeds 0, 1, 2; N from --fuzz, EMBER_FUZZ_CASES[_<DEVICE>] or 300),
              each run by ember and torch: no crash (an exception leaked from inside ember that is
              not an EmberError, or a hang), and no more differences from torch than DIFFERING_CEILING

Every failing case prints the command that reruns it alone, `python -m ember.testing.fuzz --device D
--seed S --case K`.
"""
from __future__ import annotations

import pytest

from .fuzz import SEEDS, fuzz
from .plugin import NUMPY_WARNINGS, fuzz_cases

pytestmark = NUMPY_WARNINGS

#: the largest fraction of cases that may differ from torch, deliberate differences included. A ratchet: what is
#: left is a long tail of single checks made in another order than torch's, and the deliberate differences
#: (fuzz.DELIBERATE); each class closed lowers it
DIFFERING_CEILING = 0.03


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz(seed, ember_device, request):
    report = fuzz(ember_device.name, seed, fuzz_cases(request.config, ember_device))
    print(report.summary())
    crashes = [line for line, (_, outcome) in zip(report.lines(), report.failures) if outcome.status == "crash"]
    assert not crashes, f"{report.summary()}\n" + "\n".join(crashes)
    assert report.differing <= DIFFERING_CEILING * report.cases, \
        f"{report.summary()}: more than {DIFFERING_CEILING:.0%}\n" + "\n".join(report.lines())
