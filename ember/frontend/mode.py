"""The Mode dispatch key: Python-level interception of every op call.

Subclass `DispatchMode` and override `__ember_dispatch__(op, args)`; while the mode is
active (a `with` block) every op call reaches it first, with the mode itself switched off
so that calling `op(*args)` inside runs the op normally. FLOP counters, memory trackers
and tracers are modes.
"""
from __future__ import annotations

from ember.dispatcher import keys as K
from ember.dispatcher.state import STATE


class DispatchMode:
    """Base class of dispatch modes; the default implementation just runs the op."""

    def __ember_dispatch__(self, op, args: tuple):
        return op(*args)

    def __enter__(self):
        STATE.modes.append(self)
        STATE.include |= K.MODE
        return self

    def __exit__(self, *exc) -> None:
        modes = STATE.modes
        modes.remove(self)
        if not modes:
            STATE.include &= ~K.MODE


def mode_kernel(op, below: int, args: tuple):
    st = STATE
    mode = st.modes.pop()
    if not st.modes:
        st.include &= ~K.MODE
    try:
        return mode.__ember_dispatch__(op, args)
    finally:
        st.modes.append(mode)
        st.include |= K.MODE


