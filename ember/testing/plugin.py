"""pytest wiring of the conformance suite: the `--ember-device` option and the device fixture.

`pytest --pyargs ember.testing --ember-device=NAME` must know the option before pytest
parses the command line, and pytest loads a package's conftest.py only when it collects
the package, too late for that (with --pyargs it never loads it as an initial conftest).
So this module is a pytest plugin registered through the `pytest11` entry point
`ember_conformance` of ember's distribution (pyproject.toml): every pytest run in an
environment with ember installed knows `--ember-device`. It stays inert unless the option
is given: importing it imports neither ember nor torch. `ember/testing/conftest.py`
registers it itself when the entry point did not (ember run from a source tree, by path).

The repository's own `tests/test_conformance.py` reuses the same test functions with its
own `ember_device` fixture, parametrised over cpu and meta.
"""
from __future__ import annotations

import contextlib
import dataclasses

import pytest

PLUGIN_NAME = "ember_conformance"          # the pytest11 entry point's name
ORACLE_TORCH = "2.13.0"        # the torch release the expectations were recorded against

# torch's (the oracle's) advice about the edge cases the suite calls it with on purpose (a variance
# of one element, 'same' padding with an even kernel, its own mse_loss backward resizing an output):
# messages about torch's call, not results. pytest `filterwarnings` lines.
ORACLE_WARNINGS = ("ignore:.*degrees of freedom is <= 0:UserWarning",
                   "ignore:Using padding='same' with even kernel lengths:UserWarning",
                   "ignore:An output with one or more elements was resized:UserWarning")


def add_warning_filters(config) -> None:
    """The warning filters of a test run: the ones a program has once ember's plugins are loaded (the
    cpu plugin's numpy RuntimeWarnings, the opencl plugin's build-log notice), and ORACLE_WARNINGS.

    A plugin installs its filters when it loads, and in a test run that happens inside some test's
    warning capture, which drops them when the test ends; so a run adds them to its own filters."""
    from ember_cpu.plugin import QUIET_MODULES

    lines = [f"ignore::RuntimeWarning:{module}" for module in QUIET_MODULES]
    try:
        from ember_opencl.plugin import COMPILER_LOG_NOTICE
    except ImportError:            # the opencl plugin is not installed
        pass
    else:
        lines.append(f"ignore:{COMPILER_LOG_NOTICE}")
    for line in (*lines, *ORACLE_WARNINGS):
        config.addinivalue_line("filterwarnings", line)


# numpy's floating-point warnings (sqrt of a negative, ...): PyTorch is silent, and the cpu
# plugin filters them, but pytest resets warning filters per test
NUMPY_WARNINGS = [pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
                  pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
                  pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")]


@dataclasses.dataclass(frozen=True)
class DeviceUnderTest:
    """The device the suite runs ember on; torch always runs on cpu (or on meta, for meta)."""
    name: str          # as given: "cpu", "meta", "cuda:1", ...
    type: str          # the device type: "cpu", "meta", "cuda", ...

    @property
    def is_meta(self) -> bool:
        return self.type == "meta"

    def __str__(self) -> str:
        return self.name


def resolve_device(name: str) -> DeviceUnderTest:
    """The device `name`, checked to exist and work; a clear pytest.UsageError otherwise."""
    import ember

    def installed() -> str:
        rows = ember.backends.status()
        return ", ".join(f"{r['name']} ({r['state']}{': ' + r['reason'] if r['reason'] else ''})" for r in rows)

    try:
        dev = ember.device(name)
        ember.empty(0, device=name)        # allocates nothing, but needs a working backend
    except Exception as exc:  # noqa: BLE001 - any failure is a usage error here
        raise pytest.UsageError(
            f"--ember-device={name}: {exc}\n"
            f"  installed backends: {installed()}\n"
            f"  give an available device, e.g. --ember-device=cpu or --ember-device=meta; "
            f"`python -m ember info` lists them") from None
    return DeviceUnderTest(name, dev.type)


# --------------------------------------------------------------------------- pytest hooks
NO_TORCH = (f"the ember conformance suite needs torch=={ORACLE_TORCH} (the CPU build) as its oracle; "
            "install it with: pip install 'ember[conformance]'")


def pytest_addoption(parser):
    group = parser.getgroup("ember", "ember operator conformance suite (pytest --pyargs ember.testing)")
    group.addoption("--ember-device", action="store", default=None, metavar="NAME",
                    help="device to run the conformance suite on (default: cpu); 'meta' compares shapes, "
                         "dtypes and strides with torch's meta device instead of values")
    group.addoption("--fuzz", action="store", type=int, default=None, metavar="N", dest="ember_fuzz",
                    help="cases per seed of the differential fuzzer (ember.testing.fuzz, seeds 0, 1 and 2; "
                         f"default {FUZZ_CASES}, or EMBER_FUZZ_CASES)")


def pytest_configure(config):
    """Check an explicitly given --ember-device (and the oracle) before anything runs."""
    name = config.getoption("ember_device", None)
    if name is None or config.getoption("help", False):
        return
    import importlib.util

    if importlib.util.find_spec("torch") is None:       # (importing torch takes seconds: the tests will)
        raise pytest.UsageError(f"{NO_TORCH} (no module named 'torch')")
    config.stash[_DEVICE_KEY] = resolve_device(name)
    add_warning_filters(config)


_DEVICE_KEY = pytest.StashKey[DeviceUnderTest]()

#: the fuzzer's cases per seed when neither --fuzz nor EMBER_FUZZ_CASES says
FUZZ_CASES = 300


def fuzz_cases(config, device: DeviceUnderTest) -> int:
    """Cases per seed of the fuzz test: --fuzz, else EMBER_FUZZ_CASES_<DEVICE TYPE> (EMBER_FUZZ_CASES_OPENCL),
    else EMBER_FUZZ_CASES, else FUZZ_CASES."""
    import os

    given = config.getoption("ember_fuzz", None)
    if given is None:
        given = os.environ.get(f"EMBER_FUZZ_CASES_{device.type.upper()}", os.environ.get("EMBER_FUZZ_CASES", FUZZ_CASES))
    return int(given)


def device_under_test(config) -> DeviceUnderTest:
    """The device of --ember-device (cpu when not given), checked."""
    if _DEVICE_KEY not in config.stash:
        config.stash[_DEVICE_KEY] = resolve_device(config.getoption("ember_device", None) or "cpu")
    return config.stash[_DEVICE_KEY]


def describe(config) -> str:
    """A one-line summary of the run: device, mode, oracle."""
    import torch

    dev = device_under_test(config)
    note = "" if torch.__version__.split("+")[0] == ORACLE_TORCH else f" (expectations recorded with {ORACLE_TORCH})"
    mode = "shapes, dtypes and strides vs torch's meta device" if dev.is_meta else "values vs torch on cpu"
    return f"ember conformance suite: device {dev.name!r} ({mode}); oracle torch {torch.__version__}{note}"


@pytest.fixture(scope="session")
def ember_device(request) -> DeviceUnderTest:
    """The device under test: --ember-device (default cpu)."""
    return device_under_test(request.config)


# ------------------------------------------------------------------------- test helpers
def require_data(device: DeviceUnderTest, what: str, meta_mode: str | None = None) -> None:
    """Skip on the meta device, which has shapes but no values to compare."""
    if device.is_meta:
        also = f"; on meta, {meta_mode}" if meta_mode else ""
        pytest.skip(f"meta tensors carry no data: {what} cannot be checked on the meta device{also}")


@contextlib.contextmanager
def known_failure(reason: str | None):
    """A strict expected failure decided at run time (it may depend on the device):
    the body must fail (reported as xfail), and passing is an error asking to drop the entry."""
    if not reason:
        yield
        return
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - pytest's skip/xfail outcomes are BaseExceptions
        pytest.xfail(f"{reason} [{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}]")
    pytest.fail(f"[XPASS(strict)] {reason}: this known failure is fixed; remove its entry from "
                f"ember.testing.plugin.KNOWN_FAILURES (or the OpInfo's xfail)", pytrace=False)


# Known failures: {(op name, test kind, dtype or None, device type or None): reason}. Kinds:
# values, meta, grad, gradcheck, requires_grad, errors:<error input desc>. Each entry is a
# strict expected failure, so the suite stays green and says so loudly once the bug is
# fixed. Today there are none.
KNOWN_FAILURES: dict[tuple[str, str, str | None, str | None], str] = {
}


def failure_reason(op, kind: str, dtype: str | None, device: DeviceUnderTest) -> str | None:
    """The reason `op` is expected to fail test `kind` at `dtype` on `device`, or None."""
    for d in (dtype, None):
        for t in (device.type, None):
            reason = KNOWN_FAILURES.get((op.name, kind, d, t))
            if reason:
                return reason
        reason = op.xfail.get((kind, d))
        if reason:
            return reason
    return None
