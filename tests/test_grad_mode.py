"""Grad-mode switches against torch: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is checked as a context manager and as a decorator (with and without parentheses,
on plain functions and generators), for nesting, for restoring the previous mode after an
exception, and for thread-locality: a mode switched in one thread leaves others alone.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import ember

LIBS = (ember, torch)
A = np.arange(1.0, 7.0).reshape(2, 3)


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    yield
    leaked = not ember.is_grad_enabled() or not torch.is_grad_enabled()
    ember.set_grad_enabled(True)
    torch.set_grad_enabled(True)
    assert not leaked, "the test left grad mode disabled"


def _leaf(lib):
    return lib.tensor(A, requires_grad=True)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_context_managers(lib):
    x = _leaf(lib)
    with lib.no_grad():
        assert not lib.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
        with lib.enable_grad():
            assert lib.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    with lib.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with lib.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_set_grad_enabled_as_function(lib):
    x = _leaf(lib)
    lib.set_grad_enabled(False)
    try:
        assert not lib.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        lib.set_grad_enabled(True)
    assert (x * 2).requires_grad


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_mode_restored_after_exception(lib):
    with pytest.raises(ValueError):
        with lib.no_grad():
            raise ValueError
    assert lib.is_grad_enabled()
    with pytest.raises(ValueError):
        with lib.set_grad_enabled(False):
            raise ValueError
    assert lib.is_grad_enabled()
    with lib.no_grad():
        with pytest.raises(ValueError):
            with lib.enable_grad():
                raise ValueError
        assert not lib.is_grad_enabled()


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_decorators(lib):
    x = _leaf(lib)

    @lib.no_grad()
    def f_paren(t):
        """doc of f_paren"""
        return t * 2

    @lib.no_grad
    def f_bare(t):
        return t * 2

    @lib.enable_grad()
    def g(t):
        return t * 2

    @lib.set_grad_enabled(False)
    def h(t):
        return t * 2, lib.is_grad_enabled()

    # decorating does not change the mode where the function is defined
    assert lib.is_grad_enabled()
    assert not f_paren(x).requires_grad and not f_bare(x).requires_grad
    assert f_paren.__name__ == "f_paren" and f_paren.__doc__ == "doc of f_paren"
    out, enabled = h(x)
    assert not out.requires_grad and not enabled
    assert lib.is_grad_enabled() and (x * 2).requires_grad
    with lib.no_grad():
        assert g(x).requires_grad
        assert not (x * 2).requires_grad


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_inference_mode(lib):
    x = _leaf(lib)

    @lib.inference_mode()
    def f_paren(t):
        return t * 2, lib.is_inference_mode_enabled()

    @lib.inference_mode
    def f_bare(t):
        return t * 2, lib.is_inference_mode_enabled()

    for fn in (f_paren, f_bare):
        out, enabled = fn(x)
        assert enabled and not out.requires_grad
    assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        assert not (x * 2).requires_grad
        with lib.inference_mode(False):
            assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
            assert (x * 2).requires_grad
    with lib.inference_mode(False):
        assert (x * 2).requires_grad
    assert not lib.is_inference_mode_enabled()


def test_tensors_made_in_inference_mode_are_inference_tensors():
    for lib in LIBS:
        with lib.inference_mode():
            t = lib.ones(3) * 2
        assert t.is_inference()
        assert not lib.ones(3).is_inference()


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_generator_decorator(lib):
    x = _leaf(lib)

    @lib.no_grad()
    def gen():
        for _ in range(2):
            received = yield (x * 2).requires_grad, lib.is_grad_enabled()
            assert received in (None, "sent")

    it = gen()
    assert next(it) == (False, False)
    assert lib.is_grad_enabled()            # the caller's mode between steps
    assert it.send("sent") == (False, False)
    with pytest.raises(StopIteration):
        next(it)
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_grad_mode_is_thread_local(lib):
    x = _leaf(lib)
    seen = {}
    in_block = threading.Event()
    checked = threading.Event()

    def worker():
        in_block.wait(5)
        seen["enabled"] = lib.is_grad_enabled()
        seen["requires_grad"] = (x * 2).requires_grad
        with lib.no_grad():                         # switching here leaves the main thread alone
            seen["inner"] = (x * 2).requires_grad
            checked.set()
            in_block.wait(5)

    th = threading.Thread(target=worker)
    th.start()
    with lib.no_grad():
        in_block.set()
        assert checked.wait(5)
        seen["main_in_no_grad"] = (x * 2).requires_grad
    # the worker is still inside its no_grad block
    seen["main_after"] = (x * 2).requires_grad
    th.join(5)
    assert seen == {"enabled": True, "requires_grad": True, "inner": False,
                    "main_in_no_grad": False, "main_after": True}


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_set_grad_enabled_false_in_thread_does_not_leak(lib):
    x = _leaf(lib)
    out = {}

    def worker():
        lib.set_grad_enabled(False)
        out["worker"] = (x * 2).requires_grad

    th = threading.Thread(target=worker)
    th.start()
    th.join(5)
    assert out == {"worker": False}
    assert lib.is_grad_enabled() and (x * 2).requires_grad
    # and a fresh thread starts with grad enabled even while this one has it off
    lib.set_grad_enabled(False)
    try:
        th = threading.Thread(target=lambda: out.__setitem__("fresh", lib.is_grad_enabled()))
        th.start()
        th.join(5)
    finally:
        lib.set_grad_enabled(True)
    assert out["fresh"] is True


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_backward_inside_no_grad_still_computes_gradients(lib):
    x = _leaf(lib)
    y = (x * x).sum()
    with lib.no_grad():
        y.backward()
        assert not x.grad.requires_grad
    np.testing.assert_allclose(x.grad.numpy(), 2 * A)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_backward_in_threads_while_another_has_grad_disabled(lib):
    results, errors = {}, []

    def worker(k):
        try:
            x = lib.tensor(A * (k + 1), requires_grad=True)
            for _ in range(5):
                g, = lib.autograd.grad((x ** 3).sum(), x, create_graph=True)
                gg, = lib.autograd.grad(g.sum(), x)
            results[k] = (g.detach().numpy().copy(), gg.numpy().copy())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with lib.no_grad():
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(10)
        assert not lib.is_grad_enabled()
    assert not errors, errors
    for k in range(4):
        np.testing.assert_allclose(results[k][0], 3 * (A * (k + 1)) ** 2)
        np.testing.assert_allclose(results[k][1], 6 * A * (k + 1))
