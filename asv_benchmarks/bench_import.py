"""Time to `import` the framework in a fresh interpreter (ember vs PyTorch vs numpy, which ember imports)."""
from __future__ import annotations

import subprocess
import sys


class Import:
    params = ["ember", "torch", "numpy"]
    param_names = ["framework"]
    timeout = 120

    def track_import_seconds(self, framework):
        code = f"import time; t = time.perf_counter(); import {framework}; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return float(out.stdout)

    track_import_seconds.unit = "seconds"
