"""`ember.autograd`: backward, grad, grad modes, custom Functions, gradcheck, anomaly mode, saved-tensor hooks."""
import sys
import types

from ember.frontend.autograd.engine import backward, grad, queue_callback
from ember.frontend.autograd.function import Function, FunctionCtx
from ember.frontend.autograd.gradcheck import gradcheck, gradgradcheck
from ember.frontend.autograd.grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_enabled,
                                               is_grad_enabled, no_grad, set_detect_anomaly, set_grad_enabled)
from ember.frontend.autograd.graph import Node, saved_tensors_hooks


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        from ember.frontend.tensor import Tensor

        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy `Variable(tensor, requires_grad=False)` wrapper, kept for old code.

    As in PyTorch it returns a plain Tensor: `tensor` detached (sharing its storage),
    requiring grad when asked; every Tensor is an instance of Variable.
    """

    class _execution_engine:                      # noqa: N801 (torch's name)
        """The engine's hook for code that must run when a backward pass ends."""
        queue_callback = staticmethod(queue_callback)

    def __new__(cls, data, requires_grad: bool = False, volatile: bool = False):
        out = data.detach()
        if requires_grad:
            out.requires_grad_()
        return out


# torch.autograd.graph, as a namespace of this module (`import ember.autograd.graph` works too)
graph = types.ModuleType("ember.autograd.graph", "torch.autograd.graph: saved-tensor hooks and the graph's Node.")
graph.saved_tensors_hooks = saved_tensors_hooks
graph.Node = Node
sys.modules[graph.__name__] = graph

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "set_detect_anomaly", "detect_anomaly",
           "is_anomaly_enabled", "Node", "Variable", "graph"]
