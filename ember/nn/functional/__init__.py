"""ember.nn.functional: PyTorch's torch.nn.functional, signature for signature.

Each function is a thin wrapper that maps torch.nn.functional's Python signature onto a
registry op (`ember._generated.functions`), so dispatch, autograd and autocast behave as for
every other op. One submodule per area; this module re-exports them all.
"""
from __future__ import annotations

from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .dropout import *  # noqa: E402,F401,F403
from .linear import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
