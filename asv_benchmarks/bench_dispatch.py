"""Per-call overhead of the dispatcher, ember vs PyTorch vs numpy on tiny tensors.

Run with `asv run --python=same --quick` (or `python asv_benchmarks/compare.py` for the
side-by-side ratios). The `framework` parameter runs the same operation in each library,
so ratios come from one run on one machine. The workloads are asv_benchmarks/workloads.py's.
"""
from __future__ import annotations

from . import workloads as W


class TinyAdd:
    """`a + b` on shape (8,) float32: the whole cost is per-call overhead."""

    params = (list(W.FRAMEWORKS), [False, True])
    param_names = ["framework", "requires_grad"]

    def setup(self, framework, requires_grad):
        self.fn = W.tiny_add(framework, requires_grad)    # numpy + requires_grad: NotImplementedError, asv skips

    def time_add(self, framework, requires_grad):
        self.fn()


class TinyMethodCall:
    """A Tensor method (`a.mul(b)`) on shape (8,): the method binding's cost on top of the op's."""

    params = list(W.FRAMEWORKS)
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = W.tiny_method(framework)

    def time_method(self, framework):
        self.fn()


class TinyInplace:
    """An in-place op (`a.mul_(b)`) on shape (8,): version counter and in-place bookkeeping."""

    params = list(W.FRAMEWORKS)
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = W.tiny_inplace(framework)

    def time_inplace(self, framework):
        self.fn()
