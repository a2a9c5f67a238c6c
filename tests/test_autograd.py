"""Autograd as a PyTorch user relies on it, differentially tested against torch (the oracle).

Every test builds the same computation in ember and in torch from the same numpy arrays
and compares gradient values, dtypes and shapes, graph structure (grad_fn names,
next_functions), error types and messages. Covered: graph nodes; backward with
retain_graph / create_graph; autograd.grad (allow_unused, grad_outputs,
materialize_grads); leaf accumulation; requires_grad_; detach; tensor hooks and node
hooks; retain_grad; custom autograd.Function; gradcheck / gradgradcheck; the
saved-tensor-modified error; in-place ops on leaves, non-leaves and views (setitem);
broadcasting; higher-order gradients; anomaly mode; gradient dtypes. Grad-mode switches
(no_grad, enable_grad, set_grad_enabled, inference_mode, thread-locality) are in
tests/test_grad_mode.py.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember
from ember.frontend.autograd import graph as _graph
from op_names import OpNames

LIBS = (ember, torch)
SECOND_TIME = "Trying to backward through the graph a second time"
MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _rng(seed=0):
    return np.random.default_rng(seed)


def _np(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    t = t.detach()
    return t.float().numpy() if t.dtype is ember.bfloat16 else t.numpy()


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def assert_same(e, t, atol=1e-6, rtol=1e-5):
    """An ember tensor (or None) equals a torch tensor (or None) in value, shape and dtype."""
    if t is None or e is None:
        assert e is None and t is None, f"ember {e!r} vs torch {t!r}"
        return
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert _dtype_name(e) == _dtype_name(t), (e.dtype, t.dtype)
    np.testing.assert_allclose(_np(e), _np(t), atol=atol, rtol=rtol)


def both(fn, atol=1e-6, rtol=1e-5):
    """Run fn(lib) for ember and torch; compare the returned lists of tensors pairwise."""
    e_out, t_out = fn(ember), fn(torch)
    assert len(e_out) == len(t_out)
    for k, (e, t) in enumerate(zip(e_out, t_out)):
        try:
            assert_same(e, t, atol=atol, rtol=rtol)
        except AssertionError as exc:
            raise AssertionError(f"result {k}: {exc}") from None
    return e_out, t_out


def raises_both(fn, exc=RuntimeError, match=None):
    """fn(lib) raises `exc` (with `match` in the message) for ember and for torch alike."""
    for lib in LIBS:
        with pytest.raises(exc, match=match):
            fn(lib)


def node_name(node):
    return None if node is None else type(node).__name__


# -------------------------------------------------------------------------------------------
# graph nodes
# -------------------------------------------------------------------------------------------

A = _rng(1).uniform(0.5, 1.5, (2, 3))
B = _rng(2).uniform(0.5, 1.5, (3,))


@pytest.mark.parametrize("name, fn", [
    ("add", lambda lib, x, y: x + y),
    ("sub", lambda lib, x, y: x - y),
    ("mul", lambda lib, x, y: x * y),
    ("div", lambda lib, x, y: x / y),
    ("pow", lambda lib, x, y: x ** 2),
    ("neg", lambda lib, x, y: -x),
    ("exp", lambda lib, x, y: x.exp()),
    ("log", lambda lib, x, y: x.log()),
    ("tanh", lambda lib, x, y: x.tanh()),
    ("sigmoid", lambda lib, x, y: x.sigmoid()),
    ("relu", lambda lib, x, y: x.relu()),
    ("sqrt", lambda lib, x, y: x.sqrt()),
    ("sum", lambda lib, x, y: x.sum()),
    ("mm", lambda lib, x, y: x @ x.t().contiguous()),
    ("select", lambda lib, x, y: x[0]),
    ("slice", lambda lib, x, y: x[:, 1:]),
    ("view", lambda lib, x, y: x.view(6)),
    ("unsqueeze", lambda lib, x, y: x.unsqueeze(0)),
    ("expand", lambda lib, x, y: y.expand(2, 3)),
    ("clone", lambda lib, x, y: x.clone()),
    ("to", lambda lib, x, y: x.to(lib.float32)),
    ("abs", lambda lib, x, y: x.abs()),
])
def test_grad_fn_names_match_torch(name, fn):
    names = []
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        out = fn(lib, x, y)
        assert out.requires_grad and not out.is_leaf
        names.append(node_name(out.grad_fn))
    assert names[0] == names[1]


def test_next_functions_structure():
    shapes = []
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        c = lib.tensor(A)                                   # does not require grad
        y = x * c                                           # MulBackward0 -> (AccumulateGrad, None)
        z = (y + x).sum()                                   # SumBackward0 -> AddBackward0 -> (Mul, Acc)
        nf = y.grad_fn.next_functions
        assert len(nf) == 2
        assert node_name(nf[0][0]) == "AccumulateGrad" and nf[0][1] == 0
        assert nf[1] == (None, 0)
        add = z.grad_fn.next_functions[0][0]
        assert node_name(add) == "AddBackward0"
        assert add.next_functions[0][0] is y.grad_fn
        # the leaf's AccumulateGrad is one node shared by all its uses, pointing at the leaf
        assert add.next_functions[1][0] is nf[0][0]
        assert nf[0][0].variable is x
        shapes.append([node_name(n) for n, _ in add.next_functions])
    assert shapes[0] == shapes[1]


def test_next_functions_of_a_tensor_list_a_view_and_a_number():
    """A Tensor[] argument gives one edge per tensor (None for one needing no gradient); a view's edge
    is its own node; a number in a Tensor position has no edge (the recorder's three kinds of input)."""
    shapes = []
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        c = lib.tensor(A)
        cat = lib.cat([x, c, x * 2])
        view_sum = x[0] + x[1]
        scaled = lib.mul(x, 3.0)
        shapes.append([[(node_name(n) if n is not None else None, k) for n, k in t.grad_fn.next_functions]
                       for t in (cat, view_sum, scaled)])
        assert cat.grad_fn.next_functions[0][0] is scaled.grad_fn.next_functions[0][0]      # x's accumulator
    assert shapes[0] == shapes[1]
    assert shapes[0][0] == [("AccumulateGrad", 0), (None, 0), ("MulBackward0", 0)]


def test_leaf_accumulator_kept_without_reference_cycle():
    """A leaf's AccumulateGrad lives as long as the leaf (one node across graphs) without a
    reference cycle: an unused leaf is freed at once, no garbage collection needed. A graph
    outliving its leaf still runs the leaf's hooks, as PyTorch's does."""
    import gc
    import weakref

    x = ember.tensor(A, requires_grad=True)
    first = (x * 2).grad_fn.next_functions[0][0]
    assert (x * 3).grad_fn.next_functions[0][0] is first and first.variable is x
    x.requires_grad_(False)
    x.requires_grad_(True)
    assert (x * 2).grad_fn.next_functions[0][0] is not first       # a new AutogradMeta, a new node
    gc.disable()
    try:
        ref = weakref.ref(x)
        seen = []
        x.register_hook(lambda g: seen.append(g.sum().item()))
        y = (x * 2).sum()
        del x
        assert ref() is None
        y.backward()
        assert seen == [2.0 * A.size]
    finally:
        gc.enable()


def test_leaf_and_requires_grad_propagation():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        c = lib.tensor(A)
        assert x.is_leaf and x.grad_fn is None and x.requires_grad
        assert c.is_leaf and not c.requires_grad
        assert not (c * 2).requires_grad and (c * 2).grad_fn is None
        assert (c * x).requires_grad
        assert not (x > 1).requires_grad                    # bool results never require grad
        assert not x.argmax().requires_grad                 # nor integer ones
        values, indices = lib.max(x, 1)
        assert values.requires_grad and not indices.requires_grad
        assert node_name(values.grad_fn) == "MaxBackward0"


def test_max_dim_gradient():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        values, _ = lib.max(x, 1)
        (values * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum().backward()
        return [x.grad]
    both(f)


# -------------------------------------------------------------------------------------------
# backward: retain_graph, create_graph, arguments
# -------------------------------------------------------------------------------------------

def test_second_backward_without_retain_graph_raises():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = (x * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y.backward()
        # autograd.grad frees the graph too
        y2 = x.exp().sum()
        lib.autograd.grad(y2, x)
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            lib.autograd.grad(y2, x)
        # a saved list of tensors (index's indices) is freed as well
        y3 = x[lib.tensor([1, 0])].sum()
        y3.backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            y3.backward()


def test_second_backward_through_graph_without_saved_tensors_works():
    # PyTorch only fails when a freed saved tensor is needed: x + 1 and sum save none
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        return [x.grad]
    both(f)


def test_retain_graph_allows_repeated_backward_and_accumulates():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = (x * x.sin()).sum()
        y.backward(retain_graph=True)
        g1 = x.grad.clone()
        y.backward(retain_graph=True)
        y.backward()
        return [g1, x.grad]
    (g1, g3), _ = both(f)
    np.testing.assert_allclose(_np(g3), 3 * _np(g1))


# torch's advice on backward(create_graph=True), the call under test
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_create_graph_backward_gives_differentiable_grad():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad and g.grad_fn is not None
        x.grad = None
        g.sum().backward()
        return [g, x.grad]
    (g, gg), _ = both(f)
    np.testing.assert_allclose(_np(gg), 6 * A)


def test_backward_with_gradient_argument_and_shape_errors():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        (x * 3).backward(lib.tensor(A * 2))
        return [x.grad]
    both(f)
    raises_both(lambda lib: (lib.tensor(A, requires_grad=True) * 3).backward(),
                match="grad can be implicitly created only for scalar outputs")
    raises_both(lambda lib: (lib.tensor(A, requires_grad=True) * 3).backward(lib.ones(3, dtype=lib.float64)),
                match="Mismatch in shape")
    raises_both(lambda lib: lib.tensor(A).sum().backward(),
                match="element 0 of tensors does not require grad and does not have a grad_fn")


_ROOT_DEVICES = ["cpu", "meta"] + (["opencl"] if ember.opencl.is_available() else [])


@pytest.mark.parametrize("device", _ROOT_DEVICES)
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_implicit_root_gradient_is_fresh_ones_like_the_output(device, shape):
    """`out.backward()` on a one-element output starts from ones of its dtype, shape and device (on cpu
    and meta made without dispatching ones_like): a leaf that is its own root gets them as `.grad`,
    writable and not shared with the next root's."""
    first = ember.ones(shape, dtype=ember.float64, device=device, requires_grad=True)
    first.backward()
    second = ember.full(shape, 3.0, dtype=ember.float64, device=device, requires_grad=True)
    second.backward()
    for g in (first.grad, second.grad):
        assert g.dtype is ember.float64 and tuple(g.shape) == shape and g.device == first.device
    if device != "meta":
        first.grad.add_(1)
        assert first.grad.cpu().tolist() == torch.full(shape, 2.0).tolist()
        assert second.grad.cpu().tolist() == torch.ones(shape).tolist()


def test_implicit_root_gradient_is_ones_like_under_a_dispatch_mode():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with OpNames() as mode:
        (x * 2).sum().backward()
    assert "ones_like" in mode.names                 # as a TorchDispatchMode sees aten.ones_like
    assert x.grad.tolist() == [2.0, 2.0]


def test_backward_inputs_restricts_accumulation():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        (x * y).sum().backward(inputs=[x])
        return [x.grad, y.grad]
    both(f)


def test_autograd_backward_function():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y1, y2 = x * 2, x.exp()
        lib.autograd.backward([y1.sum(), y2], [None, lib.tensor(A)])
        return [x.grad]
    both(f)


# -------------------------------------------------------------------------------------------
# autograd.grad
# -------------------------------------------------------------------------------------------

def test_grad_returns_gradients_without_touching_dot_grad():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        gx, gy = lib.autograd.grad((x * y).sum(), (x, y))
        assert x.grad is None and y.grad is None
        assert not gx.requires_grad
        return [gx, gy]
    both(f)


def test_grad_single_input_returns_tuple():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        out = lib.autograd.grad((x * 2).sum(), x)
        assert isinstance(out, tuple) and len(out) == 1


def test_grad_allow_unused_and_materialize():
    raises_both(lambda lib: lib.autograd.grad((lib.tensor(A, requires_grad=True) * 2).sum(),
                                              [lib.tensor(A, requires_grad=True)]),
                match=r"The differentiated Tensor at index 0 appears to not have been used in the graph\. Set "
                      "allow_unused=True")

    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        w = lib.tensor(B, requires_grad=True)
        gx, gw = lib.autograd.grad((x * 2).sum(), [x, w], allow_unused=True, retain_graph=True)
        assert gw is None
        mx, mw = lib.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
        return [gx, mx, mw]
    both(f)


def test_grad_of_input_not_requiring_grad_raises():
    raises_both(lambda lib: lib.autograd.grad((lib.tensor(A, requires_grad=True) * 2).sum(), lib.tensor(A)),
                match="One of the differentiated Tensors does not require grad")


def test_grad_outputs_and_several_outputs():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * x
        w = lib.tensor(np.arange(6.0).reshape(2, 3))
        g1, = lib.autograd.grad(y, x, grad_outputs=w, retain_graph=True)
        g2, = lib.autograd.grad([y, y.sum()], [x], grad_outputs=[w, None], retain_graph=True)
        g3, = lib.autograd.grad(y.sum(), x, grad_outputs=lib.tensor(3.0, dtype=lib.float64))
        return [g1, g2, g3]
    both(f)


def test_grad_with_respect_to_intermediate():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        h = x.tanh()
        out = (h * h * x).sum()
        gh, gx = lib.autograd.grad(out, [h, x])
        return [gh, gx]
    both(f)


def test_grad_create_graph_for_higher_order():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        z = (x * y ** 2).sum()
        gx, = lib.autograd.grad(z, x, create_graph=True)
        assert gx.requires_grad
        gxx, gxy = lib.autograd.grad(gx.sum(), [x, y], allow_unused=True)
        return [gx, gxx, gxy]
    both(f)


# -------------------------------------------------------------------------------------------
# leaves: accumulation, requires_grad_, detach
# -------------------------------------------------------------------------------------------

def test_leaf_accumulates_across_backward_calls():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        (x * x).sum().backward()
        first = x.grad
        (x * 3).sum().backward()
        return [first, x.grad]
    (g1, g2), _ = both(f)
    np.testing.assert_allclose(_np(g2), 2 * A + 3)


def test_grad_assignment_then_accumulation_and_reset():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        x.grad = lib.full((2, 3), 5.0, dtype=lib.float64)
        (x * 2).sum().backward()
        acc = x.grad.clone()
        x.grad = None
        (x * 2).sum().backward()
        return [acc, x.grad]
    both(f)
    raises_both(lambda lib: setattr(lib.tensor(A, requires_grad=True), "grad", lib.ones(4, dtype=lib.float64)))


def test_requires_grad_():
    for lib in LIBS:
        t = lib.tensor(A)
        assert t.requires_grad_() is t
        assert t.requires_grad and t.is_leaf
        t.requires_grad_(False)
        assert not t.requires_grad
        t.requires_grad = True
        assert t.requires_grad
    raises_both(lambda lib: lib.tensor([1, 2]).requires_grad_(),
                match="only Tensors of floating point")
    raises_both(lambda lib: (lib.tensor(A, requires_grad=True) * 2).requires_grad_(False),
                match="you can only change requires_grad flags of leaf variables")

    def f(lib):   # a leaf that starts requiring grad late gets gradients from then on
        t = lib.tensor(A)
        y0 = t * 2
        t.requires_grad_()
        (t * 3 + y0).sum().backward()
        return [t.grad]
    both(f)


def test_assigning_grad_does_not_make_tensor_require_grad():
    for lib in LIBS:
        t = lib.tensor(A)
        t.grad = lib.ones(2, 3, dtype=lib.float64)
        assert not t.requires_grad and t.grad is not None
        assert not (t * 2).requires_grad


def test_legacy_variable():
    for lib in LIBS:
        t = lib.tensor(A)
        v = lib.autograd.Variable(t, requires_grad=True)
        assert v is not t and v.requires_grad and not t.requires_grad and v.is_leaf
        assert v.data_ptr() == t.data_ptr()
        assert isinstance(t, lib.autograd.Variable) and isinstance(v, lib.Tensor)
        y = lib.tensor(A, requires_grad=True) * 2
        assert not lib.autograd.Variable(y).requires_grad


def test_detach_shares_storage_and_version():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        d = x.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        assert d.data_ptr() == x.data_ptr()
        v0 = x._version
        d.add_(1)                                            # allowed: d does not require grad
        assert x._version == d._version == v0 + 1
        np.testing.assert_allclose(_np(x), A + 1)
        y = (x * 2).detach_()
        assert not y.requires_grad and y.grad_fn is None


def test_copies_start_at_version_zero_views_share_it_and_eval_dropout_is_the_input():
    """As torch: contiguous/reshape/flatten of a transposed tensor copy (a fresh version counter),
    of a contiguous one they view (the same counter); dropout outside training returns its input."""
    got = {}
    for lib in LIBS:
        a = lib.ones(2, 3)
        a.add_(1)
        t = a.t()
        x = lib.ones(3)
        got[lib.__name__] = [t.contiguous()._version, t.reshape(6)._version, t.flatten()._version,
                             a.reshape(6)._version, a.contiguous()._version,
                             lib.nn.functional.dropout(x, 0.5, training=False) is x,
                             lib.nn.functional.dropout(x, 0.0) is x]
    assert got["ember"] == got["torch"] == [0, 0, 0, 1, 1, True, True]


def test_modifying_detached_saved_tensor_is_detected():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = x.exp()
        y.detach().mul_(2)
        with pytest.raises(RuntimeError, match=MODIFIED):
            y.sum().backward()


def test_training_loop_updates_leaf_under_no_grad():
    def f(lib):
        w = lib.tensor(B, requires_grad=True)
        xs = lib.tensor(A)
        history = []
        for _ in range(3):
            loss = ((xs * w).sum(1) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
            history.append(w.grad.clone())
            w.grad = None
        assert w.is_leaf and w.requires_grad
        return history + [w]
    both(f)


def test_graph_is_freed_by_reference_counting():
    # no reference cycles: the memory estimator relies on deterministic frees
    import gc
    import weakref

    x = ember.tensor(A, requires_grad=True)

    class Twice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 2

    def build():
        y = x * 2
        v = y[0]
        y[1] = v * 3                       # CopySlices + AsStridedBackward0
        y.mul_(2)                          # v is now stale and gets regenerated below
        z = (v * y[0]).sum() + y.exp().sum() + Twice.apply(y).sum()
        return z, [weakref.ref(z.grad_fn), weakref.ref(y.grad_fn), weakref.ref(v.grad_fn), weakref.ref(y)]

    gc.disable()
    try:
        for run_backward in (True, False):
            z, refs = build()
            if run_backward:
                z.backward()
            del z
            assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()


# -------------------------------------------------------------------------------------------
# hooks and retain_grad
# -------------------------------------------------------------------------------------------

def test_tensor_hooks_leaf_and_non_leaf():
    def f(lib):
        seen = []
        x = lib.tensor(A, requires_grad=True)
        y = x * 2
        hy = y.register_hook(lambda g: g * 10)                       # replaces the gradient
        hx = x.register_hook(lambda g: seen.append(g.clone()))       # observes only
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = x.grad.clone()
        hy.remove()
        hx.remove()
        hy.remove()                                                  # removing twice is harmless
        x.grad = None
        z.backward()
        assert len(seen) == 1
        return [first, seen[0], x.grad]
    both(f)


def test_leaf_hook_modifies_accumulated_gradient():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        x.register_hook(lambda g: g + 1)
        x.register_hook(lambda g: g * 3)                             # hooks run in order
        (x * 3).sum().backward()
        return [x.grad]
    both(f)


def test_hooks_apply_to_autograd_grad_results():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        x.register_hook(lambda g: g * 100)
        gx, = lib.autograd.grad((x * 2).sum(), x)
        y = x * 2
        y.register_hook(lambda g: g - 1)
        gy, = lib.autograd.grad((y * y).sum(), y)
        return [gx, gy]
    both(f)


def test_hook_on_tensor_not_requiring_grad_raises():
    raises_both(lambda lib: lib.tensor(A).register_hook(lambda g: g),
                match="cannot register a hook on a tensor that doesn't require gradient")


def test_hook_on_multi_use_tensor_sees_summed_gradient():
    def f(lib):
        seen = []
        x = lib.tensor(A, requires_grad=True)
        y = x.sin()
        y.register_hook(lambda g: seen.append(g.clone()))
        (y * 2 + y * y).sum().backward()
        return [seen[0], x.grad]
    both(f)


def test_node_hooks():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x.exp()
        calls = []
        y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 2,))
        h = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: calls.append(
            (grad_inputs[0].clone(), grad_outputs[0].clone())))
        y.sum().backward(retain_graph=True)
        h.remove()
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] + 1,))
        g1 = x.grad.clone()
        x.grad = None
        y.sum().backward()
        assert len(calls) == 1
        return [calls[0][0], calls[0][1], g1, x.grad]
    both(f)


def test_retain_grad():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 2
        y.retain_grad()
        assert y.retains_grad
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = y.grad.clone()
        z.backward()
        return [first, y.grad, x.grad]
    both(f)


def test_retain_grad_engine_support():
    """The engine side of retain_grad (graph.retain_grad), driven directly.

    Ordering as in PyTorch: after the tensor's own hooks; accumulated across passes;
    filled by autograd.grad too; follows the tensor through an in-place op.
    """
    def run(lib, y):
        if lib is torch:
            y.retain_grad()
        else:
            _graph.retain_grad(y)

    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * 10)
        run(lib, y)
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = y.grad.clone()
        z.backward(retain_graph=True)
        second = y.grad.clone()
        y.grad = None
        lib.autograd.grad((y * 3).sum(), x)
        from_grad = y.grad
        w = x * 1
        run(lib, w)
        w.mul_(x)
        (w * 2).sum().backward()
        leaf = lib.tensor(A, requires_grad=True)
        run(lib, leaf)                                    # a no-op on leaves
        (leaf * 2).sum().backward()
        return [first, second, from_grad, w.grad, leaf.grad]
    both(f)


# -------------------------------------------------------------------------------------------
# custom autograd.Function
# -------------------------------------------------------------------------------------------

def _mulc(lib):
    class MulC(lib.autograd.Function):
        """x*y*c and x+y: two outputs, a non-tensor argument and a keyword flag."""

        @staticmethod
        def forward(ctx, x, y, c, flag=False):
            ctx.save_for_backward(x, y)
            ctx.c = c
            ctx.seen_needs = tuple(ctx.needs_input_grad)
            return x * y * c, x + y

        @staticmethod
        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            gx = g1 * y * ctx.c + g2 if ctx.needs_input_grad[0] else None
            gy = g1 * x * ctx.c + g2 if ctx.needs_input_grad[1] else None
            return gx, gy, None, None
    return MulC


def test_function_multiple_outputs_and_non_tensor_args():
    needs = []

    def f(lib):
        MulC = _mulc(lib)
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        o1, o2 = MulC.apply(x, y, 3.0)
        needs.append(o1.grad_fn.seen_needs)
        assert o1.grad_fn is o2.grad_fn
        assert (o1.output_nr, o2.output_nr) == (0, 1)
        assert type(o1.grad_fn).__name__ == "MulCBackward"
        (o1.sum() + (o2 * o2).sum()).backward()
        x2 = lib.tensor(A, requires_grad=True)
        o1, _ = MulC.apply(x2, lib.tensor(B), 2.0, flag=True)
        needs.append(o1.grad_fn.seen_needs)
        o1.sum().backward()                                     # only o1 used: g2 arrives as zeros
        return [o1, x.grad, y.grad, x2.grad]
    both(f)
    assert needs[0] == needs[2] == (True, True, False)
    assert needs[1] == needs[3] == (True, False, False, False)   # the keyword argument counts too


def test_function_no_graph_without_grad():
    for lib in LIBS:
        MulC = _mulc(lib)
        o1, o2 = MulC.apply(lib.tensor(A), lib.tensor(B), 2.0)
        assert not o1.requires_grad and o1.grad_fn is None
        with lib.no_grad():
            o1, _ = MulC.apply(lib.tensor(A, requires_grad=True), lib.tensor(B), 2.0)
        assert not o1.requires_grad


def _cube(lib, detach_in_backward=False, wrong=False):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            if detach_in_backward:
                x = x.detach()
            return g * (3.3 if wrong else 3) * x * x
    return Cube


def test_function_double_backward():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        g, = lib.autograd.grad(_cube(lib).apply(x).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return [g, gg]
    both(f)


def test_function_saved_tensor_modified_and_freed():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        out = _cube(lib).apply(y)
        y.add_(1)
        with pytest.raises(RuntimeError, match=MODIFIED):
            out.sum().backward()
        out = _cube(lib).apply(x)
        s = out.sum()
        s.backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            s.backward()


def test_function_saves_only_tensors_or_none():
    for lib in LIBS:
        class SavesANumber(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 2 is of type int"):
            SavesANumber.apply(lib.tensor(A, requires_grad=True))


def test_function_mark_dirty_and_non_differentiable():
    def f(lib):
        class AddOne_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        class WithIndex(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = lib.tensor([1.0, 0.0, 2.0], dtype=lib.float64)
                ctx.mark_non_differentiable(idx)
                return x * 2, idx

            @staticmethod
            def backward(ctx, g, g_idx):
                return g * 2

        x = lib.tensor(A, requires_grad=True)
        y = x * 3
        z = AddOne_.apply(y)
        assert z is y and type(y.grad_fn).__name__ == "AddOne_Backward"
        (z * z).sum().backward()
        x2 = lib.tensor(B, requires_grad=True)
        a, idx = WithIndex.apply(x2)
        assert a.requires_grad and not idx.requires_grad
        a.sum().backward()
        return [x.grad, x2.grad]
    both(f)


def test_function_returning_input_and_bad_gradients():
    def f(lib):
        class Ident(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = lib.tensor(A, requires_grad=True)
        o = Ident.apply(x)
        assert o is not x and o.grad_fn is not None and x.grad_fn is None
        o.sum().backward()
        return [x.grad]
    both(f)

    def too_many(lib):
        class Wrong(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g, g
        Wrong.apply(lib.tensor(A, requires_grad=True)).sum().backward()
    raises_both(too_many, match="returned an incorrect number of gradients")

    def wrong_shape(lib):
        class WrongShape(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return lib.ones(4, dtype=lib.float64)
        WrongShape.apply(lib.tensor(A, requires_grad=True)).sum().backward()
    raises_both(wrong_shape, match="returned an invalid gradient at index 0")


# -------------------------------------------------------------------------------------------
# gradcheck / gradgradcheck
# -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda lib, x, y: (x * y).tanh(),
    lambda lib, x, y: x ** y,
    lambda lib, x, y: (x / y).sigmoid() + x.exp(),
    lambda lib, x, y: _mulc(lib).apply(x, y, 2.0),
    lambda lib, x, y: _cube(lib).apply(x) * y,
])
def test_gradcheck_and_gradgradcheck_pass(fn):
    for lib in LIBS:
        inputs = (lib.tensor(A, requires_grad=True), lib.tensor(B, requires_grad=True))
        assert lib.autograd.gradcheck(lambda x, y: fn(lib, x, y), inputs)
        assert lib.autograd.gradgradcheck(lambda x, y: fn(lib, x, y), inputs)


def test_gradcheck_fails_on_wrong_function():
    for lib in LIBS:
        bad = _cube(lib, wrong=True)
        x = lib.tensor(A, requires_grad=True)
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradcheck(bad.apply, (x,))
        assert lib.autograd.gradcheck(bad.apply, (x,), raise_exception=False) is False
        # first derivative right, second wrong (backward not differentiable through x)
        not_twice = _cube(lib, detach_in_backward=True)
        assert lib.autograd.gradcheck(not_twice.apply, (x,))
        assert lib.autograd.gradgradcheck(not_twice.apply, (x,), raise_exception=False) is False
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            lib.autograd.gradgradcheck(not_twice.apply, (x,))


def test_gradcheck_needs_an_input_requiring_grad():
    raises_both(lambda lib: lib.autograd.gradcheck(lambda x: x * 2, (lib.tensor(A),)), exc=ValueError,
                match="at least one input tensor to require gradient")


# -------------------------------------------------------------------------------------------
# saved tensors modified in place
# -------------------------------------------------------------------------------------------

def test_saved_output_modified_in_place_raises():
    msgs = []
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = x.exp()
        y.add_(1)
        with pytest.raises(RuntimeError, match=MODIFIED) as info:
            y.sum().backward()
        msgs.append(str(info.value))
    # both name the tensor and the versions: "[torch.DoubleTensor [2, 3]], which is output 0 of ..."
    for m in msgs:
        assert re.search(r"DoubleTensor \[2, 3\]\], which is output 0 of Exp", m), m
        assert "is at version 1; expected version 0 instead" in m


def test_saved_input_modified_in_place_raises():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        a = x * 1
        b = (a * a).sum()
        a.mul_(2)
        with pytest.raises(RuntimeError, match=MODIFIED):
            b.backward()


def test_in_place_on_tensor_not_saved_is_fine():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        a = x * 2                 # MulBackward0 with a constant saves nothing about x * 2
        b = a + 1
        a.mul_(3)                 # modifies a, which no node saved
        (a * b).sum().backward()
        return [x.grad]
    both(f)


def test_linear_saves_the_input_only_for_the_weights_gradient_and_the_weight_only_for_the_inputs():
    """As torch's addmm: a frozen layer keeps no activation, so changing its input after the forward
    is fine; a layer whose input needs no gradient keeps no weight, so changing the weight is fine."""
    W = _rng(3).uniform(0.5, 1.5, (4, 3))

    def frozen(lib):
        x = lib.tensor(A, requires_grad=True)
        h = x * 1
        out = lib.nn.functional.linear(h, lib.tensor(W), lib.tensor(np.ones(4)))
        h.mul_(2)                                   # not saved: only h's gradient is asked for
        out.sum().backward()
        return [x.grad]
    both(frozen)

    def input_free(lib):
        w = lib.tensor(W, requires_grad=True)
        wt = w * 1
        out = lib.nn.functional.linear(lib.tensor(A), wt)
        wt.mul_(2)                                  # not saved: the input needs no gradient
        out.sum().backward()
        return [w.grad]
    both(input_free)

    for lib in LIBS:                                # the weight's gradient does read the input
        h = lib.tensor(A) * 1
        out = lib.nn.functional.linear(h, lib.tensor(W, requires_grad=True))
        h.mul_(2)
        with pytest.raises(RuntimeError, match=MODIFIED):
            out.sum().backward()


@pytest.mark.parametrize("x_shape, w_shape", [((4, 3), (5, 3)), ((2, 4, 3), (5, 3)), ((3,), (5, 3)),
                                              ((4, 3), (3,)), ((2, 4, 3), (3,)), ((4, 0), (5, 0))])
@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (True, False, True), (False, True, True)])
def test_linear_backward_without_the_operands_a_gradient_does_not_read(x_shape, w_shape, mask):
    """linear_backward's `self` and `weight` may be None where its mask says their reader is not asked
    for: the cpu kernel and the decomposition (the meta device runs it) give torch's gradients."""
    from ember._generated import functions as EF

    rng = _rng(4)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = torch.nn.functional.linear(tx, tw)
    g = rng.standard_normal(tuple(out.shape))
    gi, gw = torch.autograd.grad(out, (tx, tw), torch.tensor(g))
    # the bias's gradient: summed over the output's leading dims; with neither operand to tell a 1-D
    # weight, over all but the last (the engine reduces that to the bias's shape)
    features = 1 if (not mask[0] and not mask[1]) or len(w_shape) == 2 else 0
    lead = tuple(range(max(out.dim() - features, 0)))
    gb = torch.tensor(g).sum(dim=lead) if lead else torch.tensor(g)
    for device in ("cpu", "meta"):
        args = (ember.tensor(x, device=device) if mask[1] else None, ember.tensor(g, device=device),
                ember.tensor(w, device=device) if mask[0] else None, list(mask))
        got = EF.linear_backward(*args)
        for k, (e, t) in enumerate(zip(got, (gi, gw, gb))):
            if not mask[k]:
                assert e is None
                continue
            assert tuple(e.shape) == tuple(t.shape) and e.device.type == device
            if device == "cpu":
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"linear_backward\(\): argument 'self' is needed for the weight's gradient"):
        EF.linear_backward(None, ember.tensor(g), ember.tensor(w), [False, True, False])


# -------------------------------------------------------------------------------------------
# in-place ops under autograd
# -------------------------------------------------------------------------------------------

def test_in_place_on_leaf_requiring_grad_raises():
    raises_both(lambda lib: lib.tensor(A, requires_grad=True).add_(1),
                match="a leaf Variable that requires grad is being used in an in-place operation.")
    raises_both(lambda lib: lib.tensor(A, requires_grad=True)[0].mul_(2),
                match="a view of a leaf Variable that requires grad is being used in an in-place operation.")

    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        with lib.no_grad():
            x.mul_(2)                                   # allowed under no_grad
        assert x.is_leaf and x.requires_grad
        (x * x).sum().backward()
        return [x, x.grad]
    both(f)


def test_in_place_chain_on_non_leaf():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.tensor(B, requires_grad=True)
        z = x * 2
        z.mul_(x)
        z.add_(y, alpha=3)
        z.sub_(x, alpha=2)
        z.div_(y)
        z.pow_(2)
        z.sigmoid_()
        assert not z.is_leaf and z.requires_grad
        z.sum().backward()
        return [z, x.grad, y.grad]
    both(f)


def test_in_place_into_tensor_not_requiring_grad():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.zeros(2, 3, dtype=lib.float64)
        y.add_(x * x)                                    # y now has history
        assert y.requires_grad and not y.is_leaf
        assert node_name(y.grad_fn) == "AddBackward0"
        (y * y).sum().backward()
        return [x.grad]
    both(f)


def test_in_place_with_dtype_mixing():
    def f(lib):
        x = lib.tensor(B, requires_grad=True)                          # float64
        w = lib.tensor(B.astype(np.float32), requires_grad=True)       # float32
        y = w * 1
        y.add_(x * x)                                                  # float32 += float64
        assert _dtype_name(y) == "float32"
        (y * y).sum().backward()
        return [y, x.grad, w.grad]
    both(f)


def test_overwriting_in_place_ops_keep_requires_grad():
    # copy_, fill_ and random fills on a non-leaf: it still requires grad, its previous
    # value gets zero gradient and copy_'s source gets the gradient (cast and summed back)
    def f(lib):
        x = lib.tensor(A.astype(np.float32), requires_grad=True)
        s = lib.tensor(B, requires_grad=True)                          # float64, broadcast
        y = x * 2
        y.copy_(s * 5)
        assert y.requires_grad
        (y * y).sum().backward()
        x2 = lib.tensor(A, requires_grad=True)
        z = x2 * 2
        z.fill_(3.0)
        assert z.requires_grad and not z.is_leaf
        w = x2 * 3
        w.normal_()
        assert w.requires_grad
        (z.sum() + w.sum()).backward()
        p = lib.zeros(3, dtype=lib.float64)
        p.copy_(s)                                                     # plain tensor takes src's history
        assert p.requires_grad
        return [y, x.grad, s.grad, x2.grad]
    both(f)


def _setitem_cases():
    def tensor_row(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(B, requires_grad=True)
        y = x * 1
        y[0] = v * 2
        (y * y).sum().backward()
        return [y, x.grad, v.grad]

    def column_then_plain_sum(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(B[:2].copy(), requires_grad=True)
        y = x.sin()
        y[:, 1] = v
        y.sum().backward()                 # an expanded (non-contiguous) gradient reaches the copy
        return [y, x.grad, v.grad]

    def scalar_value(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * x
        y[1, 1:] = 0.0
        y.sum().backward()
        return [y, x.grad]

    def broadcast_value(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(np.float64(3.0), requires_grad=True)
        y = x * 1
        y[:, 0] = v
        (y * y).sum().backward()
        return [y, x.grad, v.grad]

    def two_windows(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(B, requires_grad=True)
        y = x.exp()
        y = y * 1
        y[0] = v
        y[1, :2] = v[1:] * v[:2]
        (y ** 2).sum().backward()
        return [y, x.grad, v.grad]

    def into_plain_tensor(lib):
        x = lib.tensor(A, requires_grad=True)
        y = lib.zeros(2, 3, dtype=lib.float64)
        y[0] = x[1] * 3
        assert y.requires_grad
        (y * y).sum().backward()
        return [y, x.grad]

    def view_of_view(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        y[1][1:] = lib.tensor(B[:2].copy())
        y[0][0] = 7.0
        (y * x).sum().backward()
        return [y, x.grad]

    def transposed_view(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(B[:2].copy(), requires_grad=True)
        y = x * 1
        y.t()[2] = v
        (y * y).sum().backward()
        return [y, x.grad, v.grad]

    def transposed_gradient(lib):
        x = lib.tensor(A, requires_grad=True)
        v = lib.tensor(B[:2].copy(), requires_grad=True)
        y = x * 1
        y[:, 2] = v * 2
        (y.t() * lib.tensor(np.arange(6.0).reshape(3, 2))).sum().backward()   # a permuted gradient
        return [y, x.grad, v.grad]

    return [tensor_row, column_then_plain_sum, scalar_value, broadcast_value, two_windows, into_plain_tensor,
            view_of_view, transposed_view, transposed_gradient]


@pytest.mark.parametrize("case", _setitem_cases(), ids=lambda f: f.__name__)
def test_setitem_into_non_leaf_view(case):
    both(case)


def test_setitem_grad_fn_is_copy_slices():
    for lib in LIBS:
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        y[0] = lib.tensor(B, requires_grad=True)
        assert node_name(y.grad_fn) == "CopySlices"


def test_in_place_through_view_updates_base():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x.clone()
        v = y.view(6)
        v.mul_(2)
        w = y[1]
        w.add_(x[0])
        y.sum().backward()
        return [y, x.grad]
    both(f)


def test_view_used_after_its_base_was_modified_in_place():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x.clone()
        v = y[0]                      # taken before the in-place op on its base
        w = y[:, 1:]
        y.mul_(3)
        ((v * v).sum() + w.sum()).backward()
        return [v, x.grad]
    both(f)

    def g(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        a, b = y[0], y[1]
        a.mul_(2)                     # another view of the same base changes the base
        (b * y[0]).sum().backward()
        return [x.grad]
    both(g)


def test_view_history_survives_later_in_place_on_base():
    # a view written in place keeps only geometry in its history, so a later in-place op
    # on the base does not invalidate it (as PyTorch's AsStridedBackward0)
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        v = y[0]
        v.mul_(2)
        z = v * 3
        y.add_(1)
        z.sum().backward()
        return [x.grad]
    both(f)


def test_as_strided_scatter_src_gradient_with_expanded_grad():
    def f(lib):
        src = lib.tensor(B[:2].copy(), requires_grad=True)
        lib.as_strided_scatter(lib.zeros(2, 3, dtype=lib.float64), src, (2,), (3,), 1).sum().backward()
        return [src.grad]
    both(f)


def test_as_strided_backward_does_not_save_input():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        y = x * 1
        z = lib.as_strided(y, (2,), (3,), 1) * 2
        y.add_(1)
        z.sum().backward()
        return [x.grad]
    both(f)


# -------------------------------------------------------------------------------------------
# broadcasting, dtypes, shapes
# -------------------------------------------------------------------------------------------

def test_broadcasting_gradients():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)                            # (2, 3)
        y = lib.tensor(B, requires_grad=True)                            # (3,)
        s = lib.tensor(np.float64(2.0), requires_grad=True)              # ()
        c = lib.tensor(A[:, :1].copy(), requires_grad=True)              # (2, 1)
        (x * y + s * c - y / c).sum().backward()
        return [x.grad, y.grad, s.grad, c.grad]
    both(f)

    def g(lib):
        x = lib.tensor(A.reshape(2, 1, 3), requires_grad=True)
        y = lib.tensor(B.reshape(3, 1), requires_grad=True)
        k = lib.ones(1, 3, 1, dtype=lib.float64, requires_grad=True)
        out = x + y * k
        out.backward(lib.tensor(np.arange(18.0).reshape(2, 3, 3)))
        return [x.grad, y.grad, k.grad]
    both(g)

    def h(lib):
        e = lib.tensor(A[:, :1].copy(), requires_grad=True)
        (e.expand(2, 3) * lib.tensor(B)).sum().backward()
        return [e.grad]
    both(h)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_gradient_dtype_and_shape_follow_input(dtype):
    def f(lib):
        d = getattr(lib, dtype)
        x = lib.tensor(A, dtype=d, requires_grad=True)
        y = lib.tensor(B, dtype=lib.float32, requires_grad=True)
        (x * x).sum().backward()
        (x.float() * y).sum().backward()                   # the cast's gradient comes back as `dtype`
        return [x.grad, y.grad]
    tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5
    both(f, atol=tol, rtol=tol)


def test_gradient_dtype_with_type_promotion():
    def f(lib):
        x = lib.tensor(A.astype(np.float32), requires_grad=True)
        y = lib.tensor(B, requires_grad=True)                             # float64
        i = lib.tensor(np.arange(3))                                      # int64
        ((x * y) * i).sum().backward()
        return [x.grad, y.grad]
    both(f)


# -------------------------------------------------------------------------------------------
# higher-order gradients
# -------------------------------------------------------------------------------------------

SECOND_ORDER = {
    "pow_scalar": lambda lib, x: x ** 3,
    "pow_tensor_exponent": lambda lib, x: x ** lib.tensor(B),
    "pow_scalar_base": lambda lib, x: 2.0 ** x,
    "pow_tensor_base": lambda lib, x: lib.tensor(B) ** x,
    "mul": lambda lib, x: x * x * x,
    "tanh": lambda lib, x: x.tanh(),
    "exp": lambda lib, x: x.exp(),
    "sigmoid": lambda lib, x: lib.sigmoid(x),
    "composite": lambda lib, x: (x.sigmoid() * x.tanh()).exp() ** 2,
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_gradients(name):
    op = SECOND_ORDER[name]

    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        g, = lib.autograd.grad(op(lib, x).sum(), x, create_graph=True)
        assert g.requires_grad
        gg, = lib.autograd.grad(g.sum(), x)
        return [g, gg]
    both(f)


def test_third_order_and_hessian_vector_product():
    def f(lib):
        x = lib.tensor(A, requires_grad=True)
        g, = lib.autograd.grad(x.tanh().sum(), x, create_graph=True)
        g2, = lib.autograd.grad(g.sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        y = lib.tensor(A, requires_grad=True)
        v = lib.tensor(np.ones((2, 3)) * 0.5)
        gy, = lib.autograd.grad((y.sin() * y).sum(), y, create_graph=True)
        hvp, = lib.autograd.grad(gy, y, grad_outputs=v)
        return [g3, hvp]
    both(f)


# -------------------------------------------------------------------------------------------
# anomaly mode
# -------------------------------------------------------------------------------------------

def _anomaly_enabled(lib):
    return torch.is_anomaly_enabled() if lib is torch else ember.autograd.is_anomaly_enabled()


def test_anomaly_mode_names_the_op():
    for lib in LIBS:
        assert not _anomaly_enabled(lib)
        lib.autograd.set_detect_anomaly(True)              # the plain function form
        try:
            assert _anomaly_enabled(lib)
            x = lib.tensor([0.0, 1.0], requires_grad=True)
            y = x.sqrt()
            z = (y * 0).sum()                              # 0 * inf = nan in SqrtBackward0
            with pytest.warns(UserWarning) if lib is torch else _nothing():
                with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th "
                                                       r"output"):
                    z.backward()
        finally:
            lib.autograd.set_detect_anomaly(False)
        assert not _anomaly_enabled(lib)
        with lib.autograd.set_detect_anomaly(True):        # and the context manager form
            assert _anomaly_enabled(lib)
        assert not _anomaly_enabled(lib)


def test_anomaly_error_has_forward_traceback_and_is_off_by_default():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x.sqrt()   # marker-line-for-traceback
        with pytest.raises(RuntimeError) as info:
            (y * 0).sum().backward()
    assert "marker-line-for-traceback" in str(info.value)
    # without anomaly mode the NaN gradient is simply returned, as in PyTorch
    for lib in LIBS:
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        assert np.isnan(_np(x.grad)[0])


def test_anomaly_mode_custom_function():
    for lib in LIBS:
        class NanGrad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * float("nan")

        with lib.autograd.set_detect_anomaly(True):
            out = NanGrad.apply(lib.tensor(B, requires_grad=True))
            with pytest.warns(UserWarning) if lib is torch else _nothing():
                with pytest.raises(RuntimeError, match="Function 'NanGradBackward' returned nan values"):
                    out.sum().backward()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_data_assignment_of_another_shape_conforms_later_gradients_to_it():
    """A leaf's (shape, dtype, device) as an op input is kept with its autograd state after the first use;
    `w.data = ...` of another shape or dtype drops it, so the next graph's gradient has the new shape, as
    torch's."""
    for lib in (ember, torch):
        w = lib.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        w.data = lib.ones(2, 3, dtype=lib.float64)
        w.grad = None
        (w * lib.ones(2, 3, dtype=lib.float64)).sum().backward()
        assert tuple(w.grad.shape) == (2, 3) and w.grad.dtype == lib.float64, lib.__name__
