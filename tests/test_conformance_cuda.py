"""The conformance suite on `cuda` (the ember-cuda plugin, cupy on an NVIDIA GPU).

Skipped, with the reason, when the plugin is not installed, cupy is missing or there is no
GPU (CI: the tests are collected and every one skips naming the reason). `make gpu-check`
runs it on a GPU machine with the lean selection of tests/conftest.py (the primitive ops,
the ops a training step leans on and the fused kernels, no finite-difference gradchecks);
`EMBER_CUDA_FULL=1` runs all of it. bfloat16 cases are deselected: cupy has no bfloat16.
"""
from __future__ import annotations

import pytest

pytest.register_assert_rewrite("ember.testing")

from ember.testing.plugin import NUMPY_WARNINGS  # noqa: E402

from test_conformance import plugin_suite, plugin_unavailable_reason  # noqa: E402

pytestmark = NUMPY_WARNINGS

REASON = plugin_unavailable_reason("cuda", "pip install ./backends/cuda[cuda12]")
globals().update(plugin_suite("cuda", REASON))
