"""The conformance suite on `opencl` (the ember-opencl plugin, here on PoCL's CPU device).

Skipped, with the reason, when the plugin is not installed or finds no OpenCL device.
`make test` runs a lean selection (tests/conftest.py): every check of the primitive ops, the
ops a training step leans on, and the suite's device-wide tests, float64 and int32 cases aside; `EMBER_OPENCL_FULL=1` runs
all of it (several minutes more on two cores). Missing opencl kernels run on the cpu (the
plugin's fallback, silenced here: tests/test_opencl_plugin.py checks the warning).
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("EMBER_OPENCL_FALLBACK", "silent")

pytest.register_assert_rewrite("ember.testing")

from ember.testing.plugin import NUMPY_WARNINGS  # noqa: E402

from test_conformance import plugin_suite, plugin_unavailable_reason  # noqa: E402

pytestmark = NUMPY_WARNINGS

REASON = plugin_unavailable_reason("opencl", "pip install ./backends/opencl[pocl]")
globals().update(plugin_suite("opencl", REASON))
