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

import ember  # noqa: E402
import ember.testing  # noqa: E402
from ember.testing.plugin import NUMPY_WARNINGS, resolve_device  # noqa: E402

from test_conformance import _collect  # noqa: E402

pytestmark = NUMPY_WARNINGS


def cuda_unavailable_reason() -> str:
    """'' when the cuda device works, else why not (plugin missing, no cupy, no GPU, broken)."""
    from ember.dispatcher.plugins import REGISTRY

    if "cuda" not in REGISTRY.records:
        return "the ember-cuda plugin is not installed (pip install ./backends/cuda[cuda12])"
    rec = REGISTRY.load("cuda")
    return "" if rec.state == "available" else f"cuda backend is {rec.state}: {rec.reason}"


REASON = cuda_unavailable_reason()


@pytest.fixture(scope="session")
def ember_device():
    if REASON:
        pytest.skip(REASON)
    return resolve_device("cuda")


SUITE = {name: fn for name, fn in _collect(ember.testing.TEST_MODULES).items()
         if not name.startswith("test_every") and name not in ("test_samples_cover_the_required_kinds",
                                                               "test_differentiable_ops_are_marked",
                                                               "test_gradcheck_detects_a_wrong_formula")}
globals().update(SUITE)
