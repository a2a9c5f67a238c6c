"""Collected with the suite (`pytest --pyargs ember.testing --ember-device=NAME`).

The `--ember-device` option and the `ember_device` fixture come from ember.testing.plugin,
which the `pytest11` entry point of ember's distribution registers when pytest starts (a
conftest.py is loaded too late to add command-line options under --pyargs). When the
entry point did not register it (a source tree on PYTHONPATH, run by path, where this file
is an initial conftest), pytest_addoption below registers it, in time for the option.
"""
import importlib.util

import pytest

pytest.register_assert_rewrite("ember.testing.compare")

from ember.testing import plugin  # noqa: E402

if importlib.util.find_spec("torch") is None:
    raise pytest.UsageError(f"{plugin.NO_TORCH} (no module named 'torch')")


def pytest_addoption(parser, pluginmanager):
    if not pluginmanager.is_registered(plugin):
        pluginmanager.register(plugin, plugin.PLUGIN_NAME)


def pytest_report_collectionfinish(config):
    return plugin.describe(config)
