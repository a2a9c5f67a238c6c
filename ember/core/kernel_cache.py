"""The on-disk kernel cache: generated kernel sources, written once and loaded from their files.

A backend's fused-kernel generator (ember.compile's code generation) writes each kernel's source
here under a name derived from the kernel's key, and loads it from that file: nothing is run from
a string, so a traceback through a compiled call shows a file and a line a user can open, and a
compiler's own cache beside it (numba's `__pycache__`) survives the process, so a second process
compiling the same program is warm.

The directory is `$EMBER_CACHE_DIR/kernels` when EMBER_CACHE_DIR is set, else
`$XDG_CACHE_HOME/ember/kernels` (`~/.cache/ember/kernels`). Writes are atomic (a temporary file
renamed into place), so processes sharing the cache never read half a file.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["cache_dir", "write_source", "load_module"]

_LOCK = threading.Lock()


def cache_dir() -> Path:
    """The kernel cache directory (created on first use)."""
    root = os.environ.get("EMBER_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ember"
    path = base / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_source(name: str, text: str) -> Path:
    """The file `name` in the cache holding `text`, written now unless it already holds exactly that."""
    path = cache_dir() / name
    try:
        if path.read_text() == text:
            return path
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def load_module(path: Path) -> ModuleType:
    """The Python module in `path` (a generated source in the cache), imported once per process under
    the name `ember_kernels.<file stem>`."""
    name = f"ember_kernels.{path.stem}"
    with _LOCK:
        module = sys.modules.get(name)
        if module is not None:
            return module
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
        return module
