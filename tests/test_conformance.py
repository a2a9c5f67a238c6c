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

# the suite's tests about the registry as a whole, run once here rather than per plugin device
_REGISTRY_WIDE = ("test_samples_cover_the_required_kinds", "test_differentiable_ops_are_marked",
                  "test_gradcheck_detects_a_wrong_formula")


def plugin_unavailable_reason(device_type: str, install: str) -> str:
    """'' when the plugin's device works, else why not (plugin missing, no device, broken)."""
    from ember.dispatcher.plugins import REGISTRY

    if device_type not in REGISTRY.records:
        return f"the ember-{device_type} plugin is not installed ({install})"
    rec = REGISTRY.load(device_type)
    return "" if rec.state == "available" else f"{device_type} backend is {rec.state}: {rec.reason}"


def plugin_suite(device_type: str, reason: str) -> dict:
    """The suite's per-device tests plus an `ember_device` fixture for `device_type` that skips
    with `reason` when it is not empty: a plugin's conformance module does `globals().update()`."""
    @pytest.fixture(scope="session", name="ember_device")
    def ember_device():
        if reason:
            pytest.skip(reason)
        return resolve_device(device_type)

    tests = {name: fn for name, fn in _collect(ember.testing.TEST_MODULES).items()
             if not name.startswith("test_every") and name not in _REGISTRY_WIDE}
    return {"ember_device": ember_device, **tests}


def test_the_suite_is_collected_here():
    assert len(SUITE) >= 15, sorted(SUITE)
    assert {"test_outputs", "test_grad", "test_gradcheck", "test_errors", "test_random_statistics",
            "test_pointwise_output_strides_fuzz", "test_every_registered_op_has_an_entry"} <= set(SUITE)
