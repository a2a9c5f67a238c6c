"""The wheels list every package: setuptools' explicit `packages` lists are easy to forget when a
subpackage is added, and an editable install (what the tests run on) hides the omission."""
from __future__ import annotations

import pathlib
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# ember and each in-repo plugin distribution
DISTRIBUTIONS = ["pyproject.toml", "backends/opencl/pyproject.toml", "backends/cuda/pyproject.toml"]


def _packages_on_disk(package: str, directory: pathlib.Path) -> set[str]:
    found = set()
    for init in directory.rglob("__init__.py"):
        rel = init.parent.relative_to(directory)
        if "__pycache__" in rel.parts:
            continue
        found.add(".".join((package, *rel.parts)) if rel.parts else package)
    return found


@pytest.mark.parametrize("pyproject", DISTRIBUTIONS)
def test_every_package_is_listed(pyproject):
    path = ROOT / pyproject
    config = tomllib.loads(path.read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    package_dir = config.get("package-dir", {})
    roots = {p for p in listed if "." not in p}
    on_disk = set()
    for root in roots:
        directory = path.parent / package_dir.get(root, root)
        on_disk |= _packages_on_disk(root, directory)
    assert on_disk - listed == set(), f"{pyproject}: packages missing from [tool.setuptools] packages"
    assert listed - on_disk == set(), f"{pyproject}: listed packages that do not exist"
