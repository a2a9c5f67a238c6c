"""Run by `python -m codegen` in a fresh interpreter: how each op runs per backend, as JSON.

Built-in backends are asked through ember.dispatcher.coverage_matrix. In-repo plugins
(PLUGINS) are read from their kernel table, built from the plugin's source without a device
or its driver library, so docs/ops.md is the same on every machine, with or without the
plugin installed or an OpenCL driver present. The rules are coverage_matrix's: native when
the plugin has a kernel, else the op's explicit kernel, else its decomposition, else the
plugin's cpu fallback (ember.dispatcher.coverage.how_op_runs).
"""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = ("cpu", "meta")
# device type: (source folder of the distribution, module, backend class)
PLUGINS = {"opencl": ("backends/opencl", "ember_opencl.plugin", "OpenCLBackend")}


def plugin_kernel_names(device_type: str) -> set[str]:
    """The op names the in-repo plugin `device_type` has kernels for (its own kernel table)."""
    folder, module, cls = PLUGINS[device_type]
    sys.path.insert(0, str(ROOT / folder))
    try:
        backend = getattr(importlib.import_module(module), cls)()
        return set(backend.kernels())
    finally:
        sys.path.remove(str(ROOT / folder))


def main() -> None:
    from ember.dispatcher.coverage import coverage_matrix, how_op_runs
    from ember.dispatcher.operator import ALL_OPS

    matrix = coverage_matrix(list(BUILTIN))
    for dt in PLUGINS:
        native = plugin_kernel_names(dt)
        for name, op in ALL_OPS.items():
            matrix.setdefault(name, {})[dt] = how_op_runs(op, name in native, True)
    print(json.dumps(matrix))


if __name__ == "__main__":
    main()
