"""ember.autograd.graph.saved_tensors_hooks against torch's: what the pack hook sees (inputs as they are,
outputs with their grad_fn, grad mode off), what the unpack hook's result stands for in the graph
(first and second derivatives through hooked saved inputs and outputs, leaves, op results and views),
custom Functions, nesting, threads, the hooks' errors, and ember's one deliberate difference (a pack
hook returning the tensor itself saves it as usual)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import ember
from ember.frontend.autograd import graph

LIBS = (torch, ember)
VALUES = [[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]]


def _seen(t, lib) -> tuple:
    """What a hook can observe of a tensor: shape, dtype, requires_grad, grad_fn's name, leafness."""
    fn = t.grad_fn
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad, None if fn is None else type(fn).__name__,
            t.is_leaf)


def _recording_hooks(lib, log: list, copy: bool = True):
    """Hooks that log what they see (and the grad mode they run in) and save a detached copy in a box."""
    def pack(t):
        log.append(("pack",) + _seen(t, lib) + (lib.is_grad_enabled(),))
        return ("box", t.detach().clone() if copy else t.detach())

    def unpack(box):
        log.append(("unpack", lib.is_grad_enabled()))
        return box[1]
    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().tolist()), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_hooks_see_and_restore_what_torchs_do():
    logs, grads = {}, {}
    for lib in LIBS:
        log = logs[lib.__name__] = []
        x = lib.tensor(VALUES[0], requires_grad=True)
        w = lib.tensor(VALUES[1], requires_grad=True)
        with _recording_hooks(lib, log):
            y = (x * w).exp()               # mul saves both inputs, exp its output
            z = (y * y.sin()).sum()
        log.append("backward")
        z.backward()
        grads[lib.__name__] = (x.grad, w.grad)
    assert logs["ember"] == logs["torch"]
    for e, t in zip(grads["ember"], grads["torch"]):
        _close(e, t)


def test_the_pack_hook_gets_an_output_itself_with_its_grad_fn():
    for lib in LIBS:
        seen = []
        x = lib.tensor(VALUES, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (seen.append(t), t.detach())[1], lambda t: t):
            y = x.exp()
        assert len(seen) == 1 and seen[0] is y, lib.__name__
        assert type(seen[0].grad_fn).__name__ == "ExpBackward0" and seen[0].requires_grad


@pytest.mark.parametrize("op", ["layer_norm", "group_norm", "max", "sort"])
def test_the_pack_hook_sees_which_outputs_are_differentiable(op):
    """layer_norm's saved mean and rstd are outputs without gradient, group_norm's have one; max's and
    sort's indices are integer outputs."""
    logs = {}
    for lib in LIBS:
        log = logs[lib.__name__] = []
        x = lib.tensor(np.linspace(-1, 1, 24).reshape(2, 4, 3).tolist(), dtype=lib.float64, requires_grad=True)
        with _recording_hooks(lib, log):
            out = {"layer_norm": lambda: lib.nn.functional.layer_norm(x, [3]),
                   "group_norm": lambda: lib.nn.functional.group_norm(x, 2),
                   "max": lambda: x.max(1)[0], "sort": lambda: x.sort(1)[0]}[op]()
        out.pow(2).sum().backward()
        logs[lib.__name__ + " grad"] = x.grad
    assert logs["ember"] == logs["torch"]
    _close(logs["ember grad"], logs["torch grad"])


def _input(lib, kind: str):
    """The tensor the hooked ops read, and the leaf gradients are taken for: a leaf, an op result, a view."""
    leaf = lib.tensor(VALUES[0], requires_grad=True)
    if kind == "leaf":
        return leaf, leaf
    if kind == "result":
        return leaf, leaf * 2 + 1
    return leaf, lib.cat([leaf, leaf * 3])[1:4]


@pytest.mark.parametrize("copy", [True, False], ids=["copied", "detached"])
@pytest.mark.parametrize("kind", ["leaf", "result", "view"])
def test_double_backward_through_hooked_saved_inputs(kind, copy):
    results = {}
    for lib in LIBS:
        log = []
        leaf, x = _input(lib, kind)
        with _recording_hooks(lib, log, copy):
            y = (x * x * x).sum() + (x.sin() * x).sum() + x.exp().sum()
        g, = lib.autograd.grad(y, leaf, create_graph=True)
        g2, = lib.autograd.grad((g * g).sum(), leaf, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), leaf)
        results[lib.__name__] = (g, g2, g3, [e for e in log if e[0] == "pack"])
        assert g.requires_grad and g2.requires_grad and not g3.requires_grad
    for e, t in zip(results["ember"][:3], results["torch"][:3]):
        _close(e, t)
    assert results["ember"][3] == results["torch"][3]


def test_double_backward_through_a_hooked_in_place_result():
    """exp_ saves its result: the pack hook sees it with exp_'s grad_fn, and double backward runs through it."""
    results = {}
    for lib in LIBS:
        log = []
        x = lib.tensor(VALUES[0], requires_grad=True)
        with _recording_hooks(lib, log):
            y = x * 0.5
            y.exp_()
            z = y.sigmoid().sum()
        g, = lib.autograd.grad(z, x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x)
        results[lib.__name__] = (g, g2, log)
    _close(results["ember"][0], results["torch"][0])
    _close(results["ember"][1], results["torch"][1])
    assert results["ember"][2] == results["torch"][2]


def test_an_unpacked_leaf_stands_for_the_leaf():
    """Gradients through an unpacked leaf reach the leaf's .grad (as backward, not only autograd.grad)."""
    grads = {}
    for lib in LIBS:
        x = lib.tensor(VALUES[0], requires_grad=True)
        with _recording_hooks(lib, []):
            y = (x * x).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        g.pow(2).sum().backward()
        grads[lib.__name__] = x.grad
    _close(grads["ember"], grads["torch"])


def _cube(lib, through_output: bool):
    """x ** 3 saving its input and its output, its gradient computed from both or from the input alone."""
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x * x
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            ctx.seen = (_seen(x, lib), _seen(y, lib))
            return grad * 3 * (y / x if through_output else x * x)
    return Cube


def test_custom_function_inputs_saved_under_hooks():
    results = {}
    for lib in LIBS:
        log = []
        x = lib.tensor(VALUES[0], requires_grad=True)
        with _recording_hooks(lib, log):
            y = _cube(lib, through_output=False).apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x)
        results[lib.__name__] = (g, g2, log[0], y.grad_fn.seen[0])
    _close(results["ember"][0], results["torch"][0])
    _close(results["ember"][1], results["torch"][1])
    assert results["ember"][2:] == results["torch"][2:]


def test_custom_function_outputs_saved_under_hooks():
    results = {}
    for lib in LIBS:
        log = []
        x = lib.tensor(VALUES[0], requires_grad=True)
        with _recording_hooks(lib, log):
            y = _cube(lib, through_output=True).apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x)
        results[lib.__name__] = (g, g2, log[1], y.grad_fn.seen[1])
    _close(results["ember"][0], results["torch"][0])
    assert results["ember"][2:] == results["torch"][2:]
    _close(results["ember"][1], results["torch"][1])


def test_the_innermost_hooks_apply():
    counts = {}
    for lib in LIBS:
        outer, inner = [], []
        x = lib.tensor(VALUES[0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (outer.append(1), t.clone())[1], lambda t: t):
            a = x * x
            with lib.autograd.graph.saved_tensors_hooks(lambda t: (inner.append(1), t.clone())[1], lambda t: t):
                b = a.sin()
            c = b.exp().sum()
        c.backward()
        counts[lib.__name__] = (len(outer), len(inner), x.grad.tolist())
    assert counts["ember"][:2] == counts["torch"][:2] == (3, 1)
    np.testing.assert_allclose(counts["ember"][2], counts["torch"][2], rtol=1e-6)


def test_the_hooks_belong_to_their_thread():
    """A thread with hooks and one without run side by side: only the first one's tensors are packed."""
    for lib in LIBS:
        packed, ready = [], threading.Barrier(2)
        x = lib.tensor(VALUES[0], requires_grad=True)
        results = {}

        def hooked():
            with lib.autograd.graph.saved_tensors_hooks(lambda t: (packed.append("hooked"), t.clone())[1],
                                                        lambda t: t):
                ready.wait()
                y = (x * x).sum()
                ready.wait()
            results["hooked"] = lib.autograd.grad(y, x)[0].tolist()

        def plain():
            ready.wait()
            y = (x.sin() * x).sum()
            ready.wait()
            results["plain"] = lib.autograd.grad(y, x)[0].tolist()

        threads = [threading.Thread(target=f) for f in (hooked, plain)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert packed == ["hooked", "hooked"], lib.__name__
        np.testing.assert_allclose(results["hooked"], [2 * v for v in VALUES[0]], rtol=1e-6)
        np.testing.assert_allclose(results["plain"], [np.cos(v) * v + np.sin(v) for v in VALUES[0]], rtol=1e-6)
    assert graph.PACK_HOOKS is None


def test_no_hooks_anywhere_is_one_test():
    """Outside every block (nested, left by an exception, in another thread) there is no hook table at all:
    saving a tensor then costs one test."""
    assert graph.PACK_HOOKS is None
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(KeyError):
            with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                assert len(graph.PACK_HOOKS[threading.get_ident()]) == 2
                raise KeyError("inside")
        assert len(graph.PACK_HOOKS[threading.get_ident()]) == 1
    assert graph.PACK_HOOKS is None


@pytest.mark.parametrize("case", ["pack modifies in place", "unpack returns no tensor"])
def test_the_hooks_errors_as_torch(case):
    errors = {}
    for lib in LIBS:
        x = lib.tensor(VALUES[0], requires_grad=True)
        try:
            if case == "pack modifies in place":
                with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().mul_(1), lambda t: t):
                    (x * 1 * x).sum()
            else:
                with lib.autograd.graph.saved_tensors_hooks(lambda t: ("box", t), lambda box: 3):
                    y = (x * x).sum()
                y.backward()
        except Exception as e:      # noqa: BLE001 (compared with torch's below)
            errors[lib.__name__] = e
    assert set(errors) == {"torch", "ember"}
    assert isinstance(errors["ember"], type(errors["torch"]))
    assert str(errors["ember"]) == str(errors["torch"])


def test_a_second_backward_through_a_hooked_graph_raises_as_torch():
    for lib in LIBS:
        x = lib.tensor(VALUES[0], requires_grad=True)
        with _recording_hooks(lib, []):
            y = (x.exp() * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()


def test_a_pack_hook_returning_the_tensor_itself_saves_it_as_usual():
    """ember's deliberate difference: no unpack call, and the in-place modification check stays."""
    unpacked = []
    a = ember.ones(2, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(t)):
        b = a * 1
        c = (b * b).sum()
    (c * 1).backward(retain_graph=True)
    assert unpacked == [] and a.grad.tolist() == [2.0, 2.0]
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.backward()
