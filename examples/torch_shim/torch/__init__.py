"""A shim that makes `import torch` import ember (and torch.X import ember.X), to run PyTorch's example programs
unchanged on ember. Only aliases module names."""
import importlib
import sys

import ember

_SUBMODULES = ["nn", "nn.functional", "nn.modules", "nn.modules.activation", "nn.modules.container",
               "nn.modules.dropout", "nn.modules.linear", "nn.modules.normalization", "nn.modules.sparse",
               "nn.modules.transformer", "nn.modules.rnn", "nn.utils", "nn.utils.rnn", "nn.init", "optim",
               "optim.lr_scheduler", "onnx", "serialization", "utils", "utils.data", "accelerator", "distributions",
               "autograd", "cuda", "amp"]
sys.modules["torch"] = ember
for name in _SUBMODULES:
    try:
        sys.modules["torch." + name] = importlib.import_module("ember." + name)
    except ImportError as exc:
        print(f"shim: ember.{name} is not importable: {exc}", file=sys.stderr)
