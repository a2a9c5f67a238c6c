"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each works as a context manager and as a decorator, and affects only the current thread.
Disabling grad mode excludes the Autograd dispatch key, so ops skip graph recording
entirely rather than checking a flag per call.
"""
from __future__ import annotations

import functools
import inspect

from ember.dispatcher.state import STATE, set_grad_enabled_state


class _GradModeContext:
    """Base: a context manager that also decorates functions and generators."""

    _enabled: bool = False

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    with self.clone():
                        try:
                            response = gen.send(request)
                        except StopIteration as stop:
                            return stop.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()

    def __enter__(self):
        self._prev = set_grad_enabled_state(self._enabled)
        return self

    def __exit__(self, *exc) -> None:
        set_grad_enabled_state(self._prev)


class no_grad(_GradModeContext):
    """Disable gradient recording in this thread."""

    _enabled = False

    def __init__(self, orig_func=None) -> None:
        # `@no_grad` without parentheses is accepted, as in PyTorch
        self._orig = orig_func

    def __new__(cls, orig_func=None):
        obj = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            obj.__init__()
            return obj(orig_func)
        return obj


class enable_grad(_GradModeContext):
    """Enable gradient recording in this thread (inside a no_grad block, say)."""

    _enabled = True


class set_grad_enabled(_GradModeContext):
    """Set gradient recording on or off: a function call, context manager or decorator."""

    def __init__(self, mode: bool) -> None:
        self._enabled = bool(mode)
        self._prev = set_grad_enabled_state(self._enabled)

    def __call__(self, fn):
        # used as a decorator: the mode applies inside the function only, so undo the
        # switch the constructor made (as PyTorch does)
        if hasattr(self, "_prev"):
            set_grad_enabled_state(self._prev)
            del self._prev
        return super().__call__(fn)

    def clone(self):
        obj = object.__new__(type(self))
        obj._enabled = self._enabled
        return obj

    def __enter__(self):
        if not hasattr(self, "_prev"):
            self._prev = set_grad_enabled_state(self._enabled)
        return self

    def __exit__(self, *exc) -> None:
        set_grad_enabled_state(self._prev)
        del self._prev


class inference_mode(_GradModeContext):
    """Like no_grad, for inference code (tensors made inside report is_inference())."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        # `@inference_mode` without parentheses, as PyTorch accepts
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self._enabled = not mode
        self._mode = mode

    def clone(self):
        return type(self)(self._mode)

    def __enter__(self):
        self._prev_inf = STATE.inference_mode
        STATE.inference_mode = bool(self._mode)
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        STATE.inference_mode = self._prev_inf


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference_mode


class set_detect_anomaly:
    """Anomaly detection: name the forward op whose backward produced NaN."""

    def __init__(self, mode: bool = True) -> None:
        self._prev = STATE.anomaly
        STATE.anomaly = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        STATE.anomaly = self._prev


class detect_anomaly(set_detect_anomaly):
    def __init__(self) -> None:
        super().__init__(True)


def is_anomaly_enabled() -> bool:
    return STATE.anomaly
