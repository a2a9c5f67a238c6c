"""ember.nn: neural-network building blocks (PyTorch's torch.nn).

`ember.nn.functional` is the functional API; `Module`, `Parameter`, the containers and the
layers come from `ember.nn.modules`; `ember.nn.init` and `ember.nn.utils` as in torch.
"""
from __future__ import annotations

from . import functional  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import init, parallel, utils  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
