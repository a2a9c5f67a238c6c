"""Every function of ember and its backends fits on a screen, every file in one sitting.

No function over 80 lines and no file over 600 lines in ember/ and backends/, generated code
(`_generated/` folders) aside: a longer one is to be split along a real seam.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 600


def _sources():
    for top in ("ember", "backends"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if "_generated" in parts or any(p.endswith(".egg-info") for p in parts):
                continue
            yield path


def test_the_scan_sees_the_code():
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert {"ember/dispatcher/operator.py", "backends/cpu/array_kernels/pointwise.py",
            "backends/opencl/ember_opencl/kernels/pointwise.py", "backends/cuda/ember_cuda/kernels/fused.py"} <= names
    assert not any("_generated" in n for n in names)


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)


def test_no_file_is_longer_than_a_sitting():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources()
            if (n := p.read_text().count("\n")) > MAX_FILE_LINES]
    assert not long, "\n".join(long)
