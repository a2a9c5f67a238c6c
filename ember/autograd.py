"""`ember.autograd`: backward, grad, grad modes, custom Functions, gradcheck, anomaly mode."""
from ember.frontend.autograd.engine import backward, grad
from ember.frontend.autograd.function import Function, FunctionCtx
from ember.frontend.autograd.gradcheck import gradcheck, gradgradcheck
from ember.frontend.autograd.grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_enabled,
                                               is_grad_enabled, no_grad, set_detect_anomaly, set_grad_enabled)
from ember.frontend.autograd.graph import Node

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "set_detect_anomaly", "detect_anomaly",
           "is_anomaly_enabled", "Node"]
