"""The Autograd dispatch key's kernel: record graph nodes, then run the op below.

Only tensors that require grad carry the Autograd key, so calls on plain tensors never
come here. For an op with formulas the kernel runs the op below Autograd, creates the
op's generated backward node with edges to the inputs' nodes, saves what the formulas
need and attaches the node to the floating-point outputs. Composite ops are run through
their decomposition at this level, so autograd records the ops they decompose into.

In-place ops are recorded as "compute the new value out of place, write it into self,
and give self the new value's history"; writing into a view also rewrites its base's
history (as an as_strided_scatter), so gradients flow to the base as in PyTorch.
"""
from __future__ import annotations

import traceback

from ember.dispatcher import keys as K
from ember.dispatcher.dispatch import call, redispatch
from ember.dispatcher.operator import ALL_OPS
from ember.dispatcher.state import STATE
from ember.errors import AutogradError
from ember.frontend.tensor import AutogradMeta, Tensor

from .graph import edge_of


def autograd_kernel(op, below: int, args: tuple):
    if op.mutated:
        return _inplace(op, below, args)
    if op.backward_cls is None:
        if op.impl == "composite":
            if op.shape_rule is not None:
                op.shape_rule(op, *args)
            return op.decomposition(*args)
        return redispatch(op, below, args)
    out = redispatch(op, below, args)
    record(op, args, out)
    return out


def record(op, args: tuple, out) -> None:
    """Create `op`'s backward node for this call and attach it to the outputs `out`."""
    edges, metas, needs = [], [], []
    lists = op.tensor_list_args
    for i in op.differentiable:
        a = args[i]
        if i in lists:
            any_need = False
            for t in a:
                if t._ag is not None:
                    edges.append(edge_of(t))
                    metas.append((tuple(t._data.shape), t._dtype, t._device))
                    any_need = True
                else:
                    edges.append(None)
                    metas.append(None)
            needs.append(any_need)
        elif isinstance(a, Tensor) and a._ag is not None:
            edges.append(edge_of(a))
            metas.append((tuple(a._data.shape), a._dtype, a._device))
            needs.append(True)
        else:
            edges.append(None)
            metas.append(None)
            needs.append(False)
    if not any(needs):
        return
    node = op.backward_cls()
    node.next_edges = tuple(edges)
    node.input_meta = tuple(metas)
    node.needs = tuple(needs)
    outs = out if op.n_outputs > 1 else (out,)
    node.save(args, outs)
    if STATE.anomaly:
        node.anomaly_trace = "".join(traceback.format_stack()[:-3])
    for k, o in enumerate(outs):
        if o._dtype.is_floating_point:
            o._ag = AutogradMeta(node, k)
            o._keys |= K.AUTOGRAD


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
    new = _new_value(op, below, args)
    redispatch(ALL_OPS["copy_"], below, (self, new.detach(), False))
    _rebase(op, self, new)
    return self


def _new_value(op, below: int, args: tuple):
    """The value `self` will hold after the op, computed out of place with autograd."""
    from ember._generated import functions as F

    self = args[op.mutated[0]]
    if op.inplace_of is not None:
        base_op = ALL_OPS[op.inplace_of]
        src = F.clone(self) if op.inplace_needs_clone else self
        return call(base_op, (src,) + tuple(args[1:]))
    if op.name == "copy_":
        src = args[1]
        if src._dtype is not self._dtype or src._device != self._device:
            src = F._to_copy(src, dtype=self._dtype, device=self._device)
        if tuple(src._data.shape) != tuple(self._data.shape):
            src = F.expand(src, tuple(self._data.shape))
        return src
    # fills and random numbers: not differentiable; compute into a fresh copy
    tmp = F.clone(self.detach())
    redispatch(op, below & ~K.AUTOGRAD, (tmp,) + tuple(args[1:]))
    return tmp


def _set_history(t: Tensor, new) -> None:
    if new is not None and new._ag is not None:
        t._ag = AutogradMeta(new._ag.grad_fn, new._ag.output_nr)
        t._keys |= K.AUTOGRAD
    else:
        t._ag = None
        t._keys &= ~K.AUTOGRAD


def _rebase(op, self: Tensor, new) -> None:
    base = self._base
    if base is None or (base._ag is None and new._ag is None):
        _set_history(self, new)
        return
    size, stride, offset = tuple(self._data.shape), self.stride(), self.storage_offset()
    if not base.is_contiguous() or base.storage_offset() != 0:
        raise AutogradError(f"{op.name}: in-place modification of a view whose base is not contiguous is not "
                            "supported by autograd; call .contiguous() on the base first")
    record(ALL_OPS["as_strided_scatter"], (base, new, size, stride, offset), base)
    record(ALL_OPS["as_strided"], (base, size, stride, offset), self)
