"""Fresh interpreters: the time to `import` the framework (ember vs PyTorch vs numpy, which ember imports),
and a cold start, a whole small training program run from a fresh interpreter (ember vs PyTorch).

Measured with bytecode caches in place, as an installed package has them: PYTHONDONTWRITEBYTECODE
is dropped from the child's environment and setup runs the program once, so an editable install's
first-import compilation of ember's sources is not what is measured (see compare.import_times).
"""
from __future__ import annotations

import os
import subprocess
import sys

from . import workloads as W

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


class ColdStart:
    """`python -c CODE` with workloads.cold_start_code's program: import the framework, build the digits MLP
    (64-128-10, nn.Sequential of Linear/ReLU), one SGD training step on a batch of 64, print the loss. The
    wall time of the whole process, interpreter start and exit included, as `time python train.py` reports."""

    params = ["ember", "torch"]
    param_names = ["framework"]
    timeout = 120
    number = 1

    def setup(self, framework):
        self.code = W.cold_start_code(framework)
        self._run()

    def _run(self):
        subprocess.run([sys.executable, "-c", self.code], check=True, capture_output=True, env=_ENV)

    def time_program(self, framework):
        self._run()
