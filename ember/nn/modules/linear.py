"""Identity, Linear, Bilinear (torch.nn.modules.linear)."""
from __future__ import annotations

import math

import ember
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear", "LazyLinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b; W is (out_features, in_features), kaiming_uniform(a=sqrt(5)) initialised."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        # the registered parameters read from their dict: `self.weight` reaches Module.__getattr__ only
        # after Python has made and dropped an AttributeError (~1 us each, two per call); a weight that
        # is not a registered parameter (deleted and set as a plain attribute, or a property) still
        # takes the attribute path
        params = self._parameters
        if "weight" in params and "bias" in params:
            return F.linear(input, params["weight"], params["bias"])
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear (MultiheadAttention's out_proj has this class name in torch)."""


class Bilinear(Module):
    """y = x1^T A x2 + b; A is (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        if input1.shape[:-1] != input2.shape[:-1]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} "
                               f"and {list(input2.shape[:-1])}")
        if input1.shape[-1] != self.in1_features or input2.shape[-1] != self.in2_features:
            raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]}, {input2.shape[-1]} do not match "
                               f"weight sizes {self.in1_features}, {self.in2_features}")
        lead = input1.shape[:-1]
        x1 = input1.reshape(-1, self.in1_features)
        x2 = input2.reshape(-1, self.in2_features)
        # (n, in1) @ (in1, out*in2) -> (n, out, in2), then contract with x2
        t = ember.matmul(x1, self.weight.permute(1, 0, 2).reshape(self.in1_features, -1))
        y = (t.reshape(-1, self.out_features, self.in2_features) * x2.unsqueeze(1)).sum(-1)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(tuple(lead) + (self.out_features,))

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the last size of its first input (then it becomes a Linear)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:          # parameters loaded from a state dict before the first call
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]
