"""The operator conformance suite (ember.testing) on cpu, meta and primdev.

primdev (tests/plugins/ember_primdev.py) implements only the primitive set and has no fallback
device, so every other op runs through its explicit kernel or decomposition there: the suite
passing on it shows the decompositions are complete.

Vendors run the same functions on their device with
`pytest --pyargs ember.testing --ember-device=NAME`; here every test function of the suite's
modules is collected again, with an `ember_device` fixture parametrised over cpu and meta
(it overrides the plugin's, which reads --ember-device). Device-independent checks of the
sample database run once.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("ember.testing")

import ember.testing  # noqa: E402
from ember.testing.plugin import NUMPY_WARNINGS, resolve_device  # noqa: E402

pytestmark = NUMPY_WARNINGS

sys.path.insert(0, str(Path(__file__).parent / "plugins"))
import ember  # noqa: E402
import ember_primdev  # noqa: E402

ember.backends.register("primdev", ember_primdev)
DEVICES = ["cpu", "meta", "primdev"]


@pytest.fixture(scope="session", params=DEVICES)
def ember_device(request):
    return resolve_device(request.param)


def _collect(modules):
    """{name: test function} of the suite's modules (each name once)."""
    found = {}
    for name in modules:
        module = importlib.import_module(f"ember.testing.{name}")
        for attr, obj in vars(module).items():
            if attr.startswith("test_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__:
                assert attr not in found, f"{attr} is defined in two suite modules"
                found[attr] = obj
    return found


SUITE = _collect(ember.testing.TEST_MODULES)
globals().update(SUITE)


def test_the_suite_is_collected_here():
    assert len(SUITE) >= 15, sorted(SUITE)
    assert {"test_outputs", "test_grad", "test_gradcheck", "test_errors", "test_random_statistics",
            "test_pointwise_output_strides_fuzz", "test_every_registered_op_has_an_entry"} <= set(SUITE)
