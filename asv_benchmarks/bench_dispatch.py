"""Per-call overhead of the dispatcher, ember vs PyTorch vs numpy on tiny tensors.

Run with `asv run --python=same --quick` (or `python asv_benchmarks/compare.py` for the
side-by-side ratios). The `framework` parameter runs the same operation in each library,
so ratios come from one run on one machine.
"""
from __future__ import annotations

import numpy as np


def _setup(framework: str, requires_grad: bool = False):
    data = np.arange(8, dtype=np.float32)
    if framework == "ember":
        import ember as lib
    elif framework == "torch":
        import torch as lib
    else:
        return data.copy(), data.copy()
    a = lib.tensor(data, requires_grad=requires_grad)
    b = lib.tensor(data, requires_grad=requires_grad)
    return a, b


class TinyAdd:
    """`a + b` on shape (8,) float32: the whole cost is per-call overhead."""

    params = (["ember", "torch", "numpy"], [False, True])
    param_names = ["framework", "requires_grad"]

    def setup(self, framework, requires_grad):
        if framework == "numpy" and requires_grad:
            raise NotImplementedError  # asv skips: numpy has no autograd
        self.a, self.b = _setup(framework, requires_grad)

    def time_add(self, framework, requires_grad):
        self.a + self.b


class TinyMethodCall:
    """A Tensor method (`a.mul(b)`) and an in-place op (`a.add_(b)`) on shape (8,)."""

    params = ["ember", "torch", "numpy"]
    param_names = ["framework"]

    def setup(self, framework):
        self.a, self.b = _setup(framework)

    def time_method(self, framework):
        if framework == "numpy":
            np.multiply(self.a, self.b)
        else:
            self.a.mul(self.b)

    def time_inplace(self, framework):
        if framework == "numpy":
            np.add(self.a, self.b, out=self.a)
        else:
            self.a.add_(self.b)
