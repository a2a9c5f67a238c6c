"""The conformance suite as a vendor runs it: `pytest --pyargs ember.testing --ember-device=NAME`.

The suite's own checks run on cpu and meta in tests/test_conformance.py. Here: the command
line (a usage error for a device that is not there, a run from outside the repository), the
plugin staying inert in other pytest runs, `import ember` not importing the suite, and the
suite on a device that is neither cpu nor meta: it passes on a correct one and fails on a
subtly wrong one.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember.testing.op_db import OPS_BY_NAME
from ember.testing.plugin import resolve_device
from ember.testing.test_gradients import test_grad as grad_check
from ember.testing.test_gradients import test_gradcheck as gradcheck_check
from ember.testing.test_gradients import test_gradgradcheck as gradgradcheck_check
from ember.testing.test_gradients import test_second_order as second_order_check
from ember.testing.test_op_errors import test_errors as errors_check
from ember.testing.test_outputs import test_outputs as outputs_check
from ember.testing.test_outputs import test_requires_grad_matches_torch as requires_grad_check
from ember.testing.test_random import test_random_determinism as determinism_check
from ember.testing.test_random import test_random_fills_write_in_place_through_views as fills_check
from ember.testing.test_random import test_random_matches_cpu as matches_cpu_check
from ember.testing.test_random import test_random_statistics as statistics_check

PLUGINS = Path(__file__).parent / "plugins"
sys.path.insert(0, str(PLUGINS))
import ember_fakegpu  # noqa: E402

REINSTALL = "the pytest11 entry point is not registered: reinstall ember (pip install -e .) after editing pyproject.toml"


def run(args, cwd, **env):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, **env})


# ------------------------------------------------------------------------- the command line
def test_an_unknown_device_is_a_usage_error(tmp_path):
    proc = run(["-m", "pytest", "--pyargs", "ember.testing", "--ember-device=nosuchdev"], tmp_path)
    assert "unrecognized arguments" not in proc.stderr, REINSTALL
    assert proc.returncode == 4, proc.stdout + proc.stderr          # pytest's usage-error exit code
    assert "--ember-device=nosuchdev: device type 'nosuchdev' is not available" in proc.stderr
    # every installed plugin with its state, in name order (cuda, opencl: whatever this machine has)
    installed = proc.stderr.split("installed backends: ", 1)[1].splitlines()[0]
    assert installed.startswith("cpu (available), ") and "meta (available)" in installed
    if "cuda (" in installed:
        assert "cuda (unavailable: " in installed or "cuda (available)" in installed
    assert "Traceback" not in proc.stderr


def test_pyargs_runs_the_suite_from_outside_the_repository(tmp_path):
    # one module of the package, to keep this quick: the option, conftest and fixture are the same
    proc = run(["-m", "pytest", "-p", "no:cacheprovider", "-rs", "--pyargs", "ember.testing.test_random",
                "--ember-device=meta"], tmp_path)
    assert "unrecognized arguments" not in proc.stderr, REINSTALL
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "ember conformance suite: device 'meta' (shapes, dtypes and strides vs torch's meta device)" in proc.stdout
    assert "meta tensors carry no data: random values cannot be checked on the meta device" in proc.stdout
    summary = proc.stdout.strip().splitlines()[-1]
    assert " skipped" in summary and "passed" not in summary and "failed" not in summary, summary


def test_the_plugin_is_inert_in_other_pytest_runs(tmp_path):
    (tmp_path / "test_other.py").write_text(textwrap.dedent("""
        import sys

        def test_nothing_heavy_was_imported(request):
            assert "torch" not in sys.modules and "ember.testing.test_outputs" not in sys.modules
            assert request.config.getoption("ember_device") is None
        """))
    proc = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_other.py"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_ember_does_not_import_the_suite():
    proc = run(["-c", "import sys, ember; print(sorted(m for m in ('ember.testing', 'torch', 'pytest') "
                      "if m in sys.modules))"], Path(__file__).parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# --------------------------------------------------------------------- a third device
def _registered(device_type: str, plugin):
    """Register a device plugin in code for one module's tests, then forget it (so that later
    tests in the same process, e.g. of ember.accelerator, do not see it)."""
    from ember.dispatcher.plugins import REGISTRY

    ember.backends.register(device_type, plugin)
    yield resolve_device(device_type)
    del REGISTRY.records[device_type]
    REGISTRY.pm.unregister(name=f"ember-backend-{device_type}")


@pytest.fixture(scope="module")
def fakegpu():
    yield from _registered("fakegpu", ember_fakegpu.FakeGPU())


@pytest.fixture(scope="module")
def badgpu():
    yield from _registered("badgpu", ember_fakegpu.BadGPU())


def _op(name):
    return OPS_BY_NAME[name]


# one case per kind of check, each exercising the device paths (inputs made on the device,
# results and gradients moved to cpu, gradcheck through .to(device), random draws vs cpu)
CASES = {
    "values exp": lambda d: outputs_check(_op("exp"), "float32", d),
    "values add_ (in place)": lambda d: outputs_check(_op("add_.Tensor"), "float16", d),
    "values sum": lambda d: outputs_check(_op("sum.dim_IntList"), "int64", d),
    "values view (aliasing)": lambda d: outputs_check(_op("view"), "float32", d),
    "values zeros (factory)": lambda d: outputs_check(_op("zeros"), "bool", d),
    "values max.dim (named tuple)": lambda d: outputs_check(_op("max.dim"), "float32", d),
    "requires_grad eq": lambda d: requires_grad_check(_op("eq.Tensor"), d),
    "grad exp": lambda d: grad_check(_op("exp"), "float32", d),
    "grad matmul": lambda d: grad_check(_op("matmul"), "float64", d),
    "gradcheck where": lambda d: gradcheck_check(_op("where.self"), d),
    "gradcheck exp": lambda d: gradcheck_check(_op("exp"), d),
    "second order exp": lambda d: second_order_check("exp", "float64", d),
    "gradgradcheck tanh": lambda d: gradgradcheck_check("tanh", d),
    "errors mm": lambda d: errors_check(_op("mm"), 0, d),
    "random statistics": lambda d: statistics_check("rand", "float32", d),
    "random determinism": lambda d: determinism_check("uniform_", d),
    "random fills": lambda d: fills_check(d),
    "random matches cpu": lambda d: matches_cpu_check("rand", d),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_suite_passes_on_a_correct_device(case, fakegpu):
    CASES[case](fakegpu)


@pytest.mark.parametrize("case,should_fail", [("values exp", True), ("grad exp", True), ("gradcheck exp", False),
                                              ("random matches cpu", True), ("values sum", False)])
def test_the_suite_fails_on_a_wrong_device(case, should_fail, badgpu):
    """badgpu's exp is 1e-4 off and its uniform_ draws other numbers than cpu's."""
    if not should_fail:      # the control: what badgpu does right still passes (gradcheck only sees
        CASES[case](badgpu)  # a consistently scaled exp, whose formula uses the result)
        return
    with pytest.raises(AssertionError):
        CASES[case](badgpu)
