"""The conformance suite on `opencl` (the ember-opencl plugin, here on PoCL's CPU device).

Skipped, with the reason, when the plugin is not installed or finds no OpenCL device.
`make test` runs a lean selection (tests/conftest.py): every check of the primitive ops, the
ops a training step leans on, and the suite's device-wide tests; `EMBER_OPENCL_FULL=1` runs
all of it (several minutes more on two cores). Missing opencl kernels run on the cpu (the
plugin's fallback, silenced here: tests/test_opencl_plugin.py checks the warning).
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("EMBER_OPENCL_FALLBACK", "silent")

pytest.register_assert_rewrite("ember.testing")

import ember  # noqa: E402
import ember.testing  # noqa: E402
from ember.testing.plugin import NUMPY_WARNINGS, resolve_device  # noqa: E402

from test_conformance import _collect  # noqa: E402

pytestmark = NUMPY_WARNINGS


def opencl_unavailable_reason() -> str:
    """'' when the opencl device works, else why not (plugin missing, no device, broken)."""
    from ember.dispatcher.plugins import REGISTRY

    if "opencl" not in REGISTRY.records:
        return "the ember-opencl plugin is not installed (pip install ./backends/opencl[pocl])"
    rec = REGISTRY.load("opencl")
    return "" if rec.state == "available" else f"opencl backend is {rec.state}: {rec.reason}"


REASON = opencl_unavailable_reason()


@pytest.fixture(scope="session")
def ember_device():
    if REASON:
        pytest.skip(REASON)
    return resolve_device("opencl")


SUITE = {name: fn for name, fn in _collect(ember.testing.TEST_MODULES).items()
         if not name.startswith("test_every") and name not in ("test_samples_cover_the_required_kinds",
                                                               "test_differentiable_ops_are_marked",
                                                               "test_gradcheck_detects_a_wrong_formula")}
globals().update(SUITE)
