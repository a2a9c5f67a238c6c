"""Medium and large tensors, ember vs PyTorch vs numpy: here the work is numpy's (or BLAS's), and
ember should add nothing measurable on top of the numpy counterpart.
"""
from __future__ import annotations

from . import workloads as W


class Elementwise:
    """One elementwise op on 256x256 float32 (add, mul, exp, relu)."""

    params = (list(W.FRAMEWORKS), list(W.ELEMENTWISE_OPS))
    param_names = ["framework", "op"]

    def setup(self, framework, op):
        self.fn = W.elementwise(framework, op)

    def time_elementwise(self, framework, op):
        self.fn()


class Reduction:
    """One reduction of 256x256 float32: full sum, mean, amax, and sum over dim 1."""

    params = (list(W.FRAMEWORKS), list(W.REDUCTION_OPS))
    param_names = ["framework", "op"]

    def setup(self, framework, op):
        self.fn = W.reduction(framework, op)

    def time_reduction(self, framework, op):
        self.fn()


class Matmul:
    """`a @ b`, 1024x1024 float32 (target: ember's throughput >= 0.95x numpy's)."""

    params = list(W.FRAMEWORKS)
    param_names = ["framework"]

    def setup(self, framework):
        self.fn = W.matmul(framework, 1024)

    def time_matmul(self, framework):
        self.fn()
