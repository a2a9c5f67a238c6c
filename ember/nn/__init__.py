"""ember.nn: neural-network building blocks (PyTorch's torch.nn).

`ember.nn.functional` holds the functional API; modules, Parameter and init arrive with the
"Training real models" issue.
"""
from __future__ import annotations

from . import functional  # noqa: F401
