"""Connect the generated op table to its shape rules, kernels, formulas and keys.

Runs once at `import ember`: every OpDef gets its shared shape rule, its explicit kernel
or decomposition (in-place twins get "out-of-place op, then copy_"), its generated
backward node, and the Mode / Autocast / Autograd / Sparse kernels. Backend kernels arrive later,
when a plugin's device is first used.
"""
from __future__ import annotations

from ember._generated.autocast_policy import AUTOCAST_POLICY
from ember._generated.backward import CLASSES as BACKWARD_CLASSES
from ember.decompositions import DECOMPOSITIONS, EXPLICIT
from ember.dispatcher import keys as K
from ember.dispatcher.dispatch import call
from ember.dispatcher.operator import ALL_OPS, register_functionality
from ember.shape_rules import RULES
from ember.sparse.kernels import sparse_dispatch

from .autocast import autocast_kernel
from .autograd.autograd_kernel import autograd_kernel
from .mode import mode_kernel
from .torch_function import torch_function_kernel


def _inplace_decomposition(op):
    base = ALL_OPS[op.inplace_of]
    copy = ALL_OPS["copy_"]

    def decomposition(self, *rest):
        return call(copy, (self, call(base, (self,) + rest), False))
    decomposition.__name__ = op.name.split(".")[0]
    return decomposition


def wire() -> None:
    for name, op in ALL_OPS.items():
        op.shape_rule = RULES[op.shape_rule_name]
        op.explicit = EXPLICIT.get(name)
        op.decomposition = DECOMPOSITIONS.get(name)
        if op.inplace_of is not None:
            op.decomposition = _inplace_decomposition(op)
        op.backward_cls = BACKWARD_CLASSES.get(name)
    register_functionality(K.TORCH_FUNCTION, torch_function_kernel)
    register_functionality(K.MODE, mode_kernel)
    register_functionality(K.AUTOGRAD, autograd_kernel)
    register_functionality(K.SPARSE, sparse_dispatch)
    register_functionality(K.AUTOCAST, autocast_kernel, [ALL_OPS[n] for n in AUTOCAST_POLICY])
