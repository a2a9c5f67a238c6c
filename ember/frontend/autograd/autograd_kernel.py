"""The Autograd dispatch key's kernel: record graph nodes, then run the op below.

Only tensors that require grad carry the Autograd key, so calls on plain tensors never
come here. For an op with formulas the kernel runs the op below Autograd, creates the
op's generated backward node with edges to the inputs' nodes, saves what the formulas
need and attaches the node to the floating-point outputs. Composite ops are run through
their decomposition at this level, so autograd records the ops they decompose into.

In-place ops are recorded as "compute the new value out of place, write it into self,
and give self the new value's history"; writing into a view also rewrites its base's
history (a CopySlices node, as PyTorch's) and gives the view an AsStridedBackward0 over
the base, so gradients flow to the base as in PyTorch. Other views of that base notice
the change the next time they are used (graph.edge_of) and take the same new history.
"""
from __future__ import annotations

import traceback

from ember.dispatcher import keys as K
from ember.dispatcher.dispatch import call, redispatch
from ember.dispatcher.operator import ALL_OPS
from ember.dispatcher.state import STATE
from ember.core.errors import AutogradError
from ember.frontend.tensor import AutogradMeta, Tensor

from .graph import Node, edge_of, move_retain
from .recording import entry_for, recorder_for


def autograd_kernel(op, below: int, args: tuple):
    if op.records_inplace:
        return _inplace(op, below, args)
    if op.backward_cls is None:
        if op.impl == "composite":
            if op.shape_rule is not None:
                op.shape_rule(op, *args)
            return op.decomposition(*args)
        return redispatch(op, below, args)
    out = redispatch(op, below, args)
    recorder_for(op)(args, out)
    return out


def autograd_entry(op, below: int):
    """The Autograd entry of an out-of-place op with formulas, for one key set.

    The same as `autograd_kernel`, with the entry below Autograd resolved once, here: the
    dispatcher caches this entry per (op, key set) and forgets both on any registration.
    Other ops (in-place, composite, no formula) get None: they take `autograd_kernel`.
    """
    if op.records_inplace or op.backward_cls is None:
        return None
    return entry_for(op, op.cache.get(below) or op.resolve(below))


autograd_kernel.make_entry = autograd_entry


def _inplace(op, below: int, args: tuple):
    m = op.mutated[0]
    self = args[m]
    requires = self._ag is not None or any(
        isinstance(args[i], Tensor) and args[i]._ag is not None for i in op.tensor_args if i != m)
    if not requires:
        return redispatch(op, below, args)
    if self._ag is not None and self._ag.grad_fn is None:
        raise AutogradError(f"{op.name}: a leaf Variable that requires grad is being used in an in-place operation.")
    base = self._base
    if base is not None and base._ag is not None and base._ag.grad_fn is None:
        raise AutogradError(f"{op.name}: a view of a leaf Variable that requires grad is being used in an in-place "
                            "operation.")
    if op.shape_rule is not None:
        op.shape_rule(op, *args)            # the in-place op's own checks (shape, dtype, overlap), before computing
    new = _new_value(op, below, args)
    redispatch(ALL_OPS["copy_"], below, (self, new.detach(), False))
    _rebase(op, self, new)
    return self


def _new_value(op, below: int, args: tuple):
    """The value `self` will hold after the op, computed out of place with autograd.

    An in-place variant of an op (add_, mul_, ...) is its out-of-place op. Ops that
    overwrite `self` (copy_, fill_, random fills) compute into a fresh copy that gets the
    op's own node over `self`'s previous history (copy_: zeros to the old value, the
    gradient to `src`; fills: zeros), so `self` keeps requiring grad, as in PyTorch.
    """
    from ember._generated import functions as F

    self = args[op.mutated[0]]
    if op.inplace_of is not None:
        base_op = ALL_OPS[op.inplace_of]
        src = F.clone(self) if op.inplace_needs_clone else self
        out = call(base_op, (src,) + tuple(args[1:]))
        if out._ag is None and self._dtype.is_floating_point:
            # a non-differentiable op (eq_, ...) overwriting a float tensor with history:
            # PyTorch keeps requires_grad, with zero gradients to the previous value
            out = F._to_copy(out, dtype=self._dtype)
            _overwrite_history(op, self, out)
        return out
    if op.copy_from is not None and op.backward_cls is not None:
        # copy_ (the registry's `copy_from: src`): the new value is `src` converted to self's dtype,
        # device and shape: an alias of it when nothing needs converting (no copy here; the kernel
        # writes it into self)
        src = args[op.copy_from].detach()
        if src._dtype is not self._dtype or src._device != self._device:
            src = F._to_copy(src, dtype=self._dtype, device=self._device)
        if tuple(src._data.shape) != tuple(self._data.shape):
            src = F.expand(src, tuple(self._data.shape))
        tmp = src.detach()
        recorder_for(op)(args, tmp)
        return tmp
    tmp = F.clone(self.detach())
    redispatch(op, below & ~K.AUTOGRAD, (tmp,) + tuple(args[1:]))
    if op.backward_cls is not None:
        recorder_for(op)(args, tmp)
    elif self._ag is not None and tmp._dtype.is_floating_point:
        _overwrite_history(op, self, tmp)
    return tmp


class OverwriteBackward(Node):
    """History of a tensor overwritten by an op without formulas (random fills): zeros to
    the previous value. Subclassed per op for PyTorch's names (NormalBackward0, ...)."""

    __slots__ = ()

    def apply(self, grads: list) -> list:
        from ember._generated import functions as F

        return [F.zeros_like(grads[0])]


_OVERWRITE_CLASSES: dict = {}     # OpDef -> its OverwriteBackward subclass


def _overwrite_history(op, self: Tensor, tmp: Tensor) -> None:
    cls = _OVERWRITE_CLASSES.get(op)
    if cls is None:
        # only the class's name comes from the op's (PyTorch's: normal_ -> NormalBackward0)
        stem = op.name.split(".")[0].strip("_")
        name = "".join(part.capitalize() for part in stem.split("_")) + "Backward0"
        cls = _OVERWRITE_CLASSES[op] = type(name, (OverwriteBackward,), {"__slots__": ()})
    node = cls()
    node.next_edges = (edge_of(self),)
    node.input_meta = (_meta(self),)
    _set_node(tmp, node, 0)


def _set_history(t: Tensor, new) -> None:
    if new is not None and new._ag is not None:
        _set_node(t, new._ag.grad_fn, new._ag.output_nr)
    else:
        t._ag = None
        t._keys &= ~K.AUTOGRAD


def _set_node(t: Tensor, node, output_nr: int) -> None:
    """Give `t` a new grad_fn, keeping its other autograd state (retain_grad, .grad)."""
    ag = t._ag
    if ag is None:
        t._ag = AutogradMeta(node, output_nr)
        t._keys |= K.AUTOGRAD
        return
    old_node, old_nr = ag.grad_fn, ag.output_nr
    ag.grad_fn, ag.output_nr = node, output_nr
    if ag.retains_grad:
        move_retain(t, old_node, old_nr)


def _meta(t: Tensor):
    return (tuple(t._data.shape), t._dtype, t._device) if t._ag is not None else None


def _window(op_name: str, view: Tensor, base: Tensor):
    """(size, stride, offset) of `view` inside its contiguous base, offset relative to the base."""
    if not base.is_contiguous():
        raise AutogradError(f"{op_name}: in-place modification of a view whose base is not contiguous is not "
                            "supported by autograd; call .contiguous() on the base first")
    return (tuple(view._data.shape), view.stride(), view.storage_offset() - base.storage_offset())


class CopySlices(Node):
    """History of a base after an in-place op on one of its views.

    Inputs: the base's previous value, and the view's new value. The base gets the
    gradient with the view's window zeroed, the new value gets the window.
    """

    __slots__ = ("size", "stride", "offset")

    def __init__(self, size, stride, offset) -> None:
        super().__init__()
        self.size, self.stride, self.offset = size, stride, offset

    def apply(self, grads: list) -> list:
        from ember._generated import functions as F

        grad = grads[0]
        # the window's strides are those of the contiguous base, so address it in a
        # contiguous gradient with its own storage (not an expanded or offset one)
        if not grad.is_contiguous():
            grad = F.contiguous(grad)
        if grad.storage_offset() != 0:
            grad = F.clone(grad)
        out = [None, None]
        if self.next_edges[0] is not None:
            zeros = F.zeros(self.size, dtype=grad.dtype, device=grad.device)
            out[0] = F.as_strided_scatter(grad, zeros, self.size, self.stride, self.offset)
        if self.next_edges[1] is not None:
            out[1] = F.as_strided(grad, self.size, self.stride, self.offset)
        return out


class AsStridedBackward0(Node):
    """History of a view taken through its base's current history (after in-place ops).

    Saves only the geometry, so later in-place ops on the base do not invalidate it.
    """

    __slots__ = ("base_shape", "size", "stride", "offset")

    def __init__(self, base_shape, size, stride, offset) -> None:
        super().__init__()
        self.base_shape, self.size, self.stride, self.offset = base_shape, size, stride, offset

    def apply(self, grads: list) -> list:
        from ember._generated import functions as F

        grad = grads[0]
        n = 1
        for d in self.base_shape:
            n *= d
        flat = F.zeros((n,), dtype=grad.dtype, device=grad.device)
        out = F.as_strided_scatter(flat, grad, self.size, self.stride, self.offset)
        return [F.reshape(out, self.base_shape)]


def _view_history(view: Tensor, base: Tensor, window) -> None:
    """Give `view` the history "as_strided of its base's current history"."""
    size, stride, offset = window
    node = AsStridedBackward0(tuple(base._data.shape), size, stride, offset)
    node.next_edges = (edge_of(base),)
    node.input_meta = (_meta(base),)
    node._view_of = base._ag.grad_fn
    if STATE.anomaly:
        node.anomaly_trace = "".join(traceback.format_stack()[:-3])
    _set_node(view, node, 0)


def regenerate_view_history(view: Tensor) -> None:
    """Called by graph.edge_of for a view whose base got a new history after the view did."""
    base = view._base
    _view_history(view, base, _window("autograd", view, base))


def _rebase(op, self: Tensor, new) -> None:
    base = self._base
    if base is None or (base._ag is None and new._ag is None):
        _set_history(self, new)
        return
    window = _window(op.name, self, base)
    node = CopySlices(*window)
    node.next_edges = (edge_of(base), edge_of(new))
    node.input_meta = (_meta(base), _meta(new))
    if STATE.anomaly:
        node.anomaly_trace = "".join(traceback.format_stack()[:-3])
    _set_node(base, node, 0)
    _view_history(self, base, window)
