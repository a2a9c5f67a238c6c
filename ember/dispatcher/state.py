"""Thread-local dispatch state: included/excluded keys, grad mode, autocast, modes.

Everything here is per thread, as in PyTorch: a `no_grad` block or an autocast region in
one thread does not affect another.

Reading an attribute of a `threading.local` costs several times a plain attribute read,
and every op call reads this state, so the hot path is kept to one such read:

- `keys` holds (included keys, excluded keys) together; `include` and `exclude` are views of
  it for everything else. Most threads never set any: the module-level set `KEYED_THREADS`
  holds the ids of threads whose keys are not (0, 0) (the `keys` setter keeps it), and a call
  reads its thread's keys only when that set is not empty. (A thread that ends with keys set
  leaves its id there: calls then read their keys, as they would anyway.)
- inference mode and anomaly detection are rarely on: the module-level sets
  `INFERENCE_THREADS` / `ANOMALY_THREADS` hold the ids of threads that switched them on,
  and the hot path reads the thread's own flag only when the set is not empty.
"""
from __future__ import annotations

import threading

from .keys import AUTOGRAD

#: ids of threads that have inference mode / anomaly detection on (see the module docstring)
INFERENCE_THREADS: set[int] = set()
ANOMALY_THREADS: set[int] = set()
#: ids of threads whose included or excluded keys are not empty (see the module docstring)
KEYED_THREADS: set[int] = set()


class _DispatchState(threading.local):
    _keys: tuple[int, int] = (0, 0)
    grad_enabled: bool = True
    _inference_mode: bool = False
    _anomaly: bool = False

    def __init__(self) -> None:
        self.autocast: dict[str, object] = {}     # device type -> dtype while enabled
        self.autocast_cache: dict | None = None    # weight-cast cache of the outermost region
        self.autocast_depth = 0
        self.modes: list = []                      # Mode stack, innermost last

    @property
    def keys(self) -> tuple[int, int]:
        """(included keys, excluded keys) of every call's key set."""
        return self._keys

    @keys.setter
    def keys(self, value: tuple[int, int]) -> None:
        self._keys = value
        _mark_thread(KEYED_THREADS, value != (0, 0))

    @property
    def include(self) -> int:
        """Keys added to every call's key set (Autocast, Mode)."""
        return self.keys[0]

    @include.setter
    def include(self, value: int) -> None:
        self.keys = (value, self.keys[1])

    @property
    def exclude(self) -> int:
        """Keys removed from every call's key set (Autograd under no_grad, ...)."""
        return self.keys[1]

    @exclude.setter
    def exclude(self, value: int) -> None:
        self.keys = (self.keys[0], value)

    @property
    def inference_mode(self) -> bool:
        return self._inference_mode

    @inference_mode.setter
    def inference_mode(self, on: bool) -> None:
        self._inference_mode = on
        _mark_thread(INFERENCE_THREADS, on)

    @property
    def anomaly(self) -> bool:
        """Autograd anomaly detection."""
        return self._anomaly

    @anomaly.setter
    def anomaly(self, on: bool) -> None:
        self._anomaly = on
        _mark_thread(ANOMALY_THREADS, on)


def _mark_thread(threads: set[int], on: bool) -> None:
    if on:
        threads.add(threading.get_ident())
    else:
        threads.discard(threading.get_ident())


STATE = _DispatchState()


def set_grad_enabled_state(enabled: bool) -> bool:
    """Switch grad mode for this thread; return the previous setting."""
    st = STATE
    prev = st.grad_enabled
    st.grad_enabled = enabled
    include, exclude = st.keys
    st.keys = (include, exclude & ~AUTOGRAD if enabled else exclude | AUTOGRAD)
    return prev
