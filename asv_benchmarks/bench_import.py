"""Time to `import` the framework in a fresh interpreter (ember vs PyTorch vs numpy, which ember imports).

Measured with bytecode caches in place, as an installed package has them: PYTHONDONTWRITEBYTECODE
is dropped from the child's environment and setup imports once, so an editable install's
first-import compilation of ember's sources is not what is measured (see compare.import_times).
"""
from __future__ import annotations

import os
import subprocess
import sys

_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class Import:
    params = ["ember", "torch", "numpy"]
    param_names = ["framework"]
    timeout = 120

    def setup(self, framework):
        subprocess.run([sys.executable, "-c", f"import {framework}"], check=True, env=_ENV)

    def track_import_seconds(self, framework):
        code = f"import time; t = time.perf_counter(); import {framework}; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_ENV)
        return float(out.stdout)

    track_import_seconds.unit = "seconds"
