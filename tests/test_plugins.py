"""Plugin discovery through entry points, broken plugins, status and `python -m ember info`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember.dispatcher import Backend, hookimpl

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A directory with two installed distributions declaring `ember.backends` entry points."""
    root = tmp_path_factory.mktemp("site")
    for dist, name, target in (("ember_testdev-1.0", "testdev", "ember_testdev"),
                               ("ember_broken-1.0", "broken", "ember_broken_plugin")):
        info = root / f"{dist}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist.split('-')[0]}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[ember.backends]\n{name} = {target}\n")
    return root


def run_python(code: str, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(PLUGINS)]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


def test_entry_point_plugins_are_discovered_and_broken_ones_reported(site):
    proc = run_python("""
        import json, ember
        print(json.dumps(ember.backends.status()))
        """, site)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["testdev"]["state"] == "available"
    assert rows["testdev"]["source"] == "entry point ember_testdev"
    assert rows["broken"]["state"] == "broken"
    assert "vendor_sdk" in rows["broken"]["reason"] and "ImportError" in rows["broken"]["reason"]
    assert rows["cpu"]["state"] == "available" and rows["meta"]["state"] == "available"


def test_broken_plugin_does_not_break_import_or_cpu(site):
    proc = run_python("""
        import ember
        a = ember.tensor([1.0, 2.0]) * 3
        print(a.tolist())
        try:
            ember.zeros(2, device="broken")
        except RuntimeError as exc:
            print("ERR", exc)
        """, site)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[3.0, 6.0]"
    assert lines[1].startswith("ERR device 'broken' is not available") and "vendor_sdk" in lines[1]


def test_plugin_module_is_imported_lazily(site):
    proc = run_python("""
        import sys, ember
        print("ember_testdev" in sys.modules)
        t = ember.ones(3, device="testdev")
        print("ember_testdev" in sys.modules, t.device, (t + t).tolist())
        """, site)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.splitlines()
    assert before == "False"
    assert after == "True testdev [2.0, 2.0, 2.0]"


def test_fallback_to_cpu_warns_once_naming_the_op(site):
    proc = run_python("""
        import warnings, ember
        warnings.simplefilter("always")
        x = ember.tensor([1.0, -2.0], device="testdev")
        with warnings.catch_warnings(record=True) as w:
            y = ember.mul(x, x)
            z = ember.mul(x, 2)
        print(y.device, y.tolist(), z.tolist())
        print([str(m.message) for m in w])
        """, site)
    assert proc.returncode == 0, proc.stderr
    out, warned = proc.stdout.splitlines()
    assert out == "testdev [1.0, 4.0] [2.0, -4.0]"
    messages = eval(warned)
    assert len(messages) == 1 and messages[0].startswith("mul.Tensor: backend 'testdev' has no kernel")


def test_a_random_op_falling_back_to_cpu_draws_from_its_own_devices_generator(site):
    proc = run_python("""
        import warnings, ember
        warnings.simplefilter("ignore")
        ember.manual_seed(0)
        x = ember.empty(4, device="testdev").uniform_()          # testdev has no uniform_: cpu runs it
        cpu_offset = ember.get_rng_state().tolist()[2:]         # (seed words, offset words)
        y = ember.empty(4).uniform_()                           # the cpu stream's first draw
        print(x.device, x.tolist() == y.tolist(), cpu_offset == [0, 0])
        """, site)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["testdev", "True", "True"]


def test_ember_info_cli(site):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(PLUGINS)]))
    proc = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
    assert "available" in lines["cpu"] and "available" in lines["testdev"]
    assert "broken" in lines["broken"] and "vendor_sdk" in lines["broken"]


class _NoFallbackBackend(Backend):
    """A device with allocation but no kernels and no fallback: ops must fail clearly."""

    device_type = "nofallback"

    def to_host(self, array):
        return array

    def from_host(self, ndarray, device_index=None):
        return ndarray.copy()


class _NoFallbackPlugin:
    @hookimpl
    def ember_backend(self):
        return _NoFallbackBackend()


def test_missing_kernel_names_op_and_backend():
    ember.backends.register("nofallback", _NoFallbackPlugin())
    x = ember.tensor([1.0, 2.0], device="nofallback")
    with pytest.raises(NotImplementedError) as info:
        ember.exp(x)
    msg = str(info.value)
    assert "exp" in msg and "'nofallback'" in msg and "primitive" in msg


def test_mixing_devices_names_both():
    a = ember.ones(2)
    b = ember.ones(2, device="meta")
    with pytest.raises(RuntimeError, match=r"add\.Tensor: expected all tensors to be on the same device.*cpu.*meta"):
        a + b


def test_zero_dim_cpu_tensor_acts_as_scalar_on_other_devices():
    a = ember.ones(2, 3, device="meta")
    out = a * ember.tensor(2.0)
    assert out.device.type == "meta" and tuple(out.shape) == (2, 3)
