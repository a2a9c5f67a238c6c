"""Thread-local dispatch state: included/excluded keys, grad mode, autocast, modes.

Everything here is per thread, as in PyTorch: a `no_grad` block or an autocast region in
one thread does not affect another.
"""
from __future__ import annotations

import threading

from .keys import AUTOGRAD


class _DispatchState(threading.local):
    include: int = 0          # keys added to every call's key set (Autocast, Mode)
    exclude: int = 0          # keys removed from every call's key set (Autograd under no_grad)
    grad_enabled: bool = True
    inference_mode: bool = False
    anomaly: bool = False             # autograd anomaly detection

    def __init__(self) -> None:
        self.autocast: dict[str, object] = {}     # device type -> dtype while enabled
        self.autocast_cache: dict | None = None    # weight-cast cache of the outermost region
        self.autocast_depth = 0
        self.modes: list = []                      # Mode stack, innermost last


STATE = _DispatchState()


def set_grad_enabled_state(enabled: bool) -> bool:
    """Switch grad mode for this thread; return the previous setting."""
    st = STATE
    prev = st.grad_enabled
    st.grad_enabled = enabled
    if enabled:
        st.exclude &= ~AUTOGRAD
    else:
        st.exclude |= AUTOGRAD
    return prev
