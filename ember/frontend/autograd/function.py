"""Custom differentiable operations: subclass `ember.autograd.Function`.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

`forward` runs with grad mode off; `backward` returns one gradient per forward argument
(None for non-tensors or inputs that need none).
"""
from __future__ import annotations

from ember.dispatcher import keys as K
from ember.dispatcher.state import STATE, set_grad_enabled_state
from ember.core.errors import ArgumentTypeError, AutogradError
from ember.frontend.tensor import AutogradMeta, Tensor

from .graph import FREED, Node, edge_of, pack


class FunctionCtx:
    """The `ctx` of forward/backward: saved tensors and flags."""

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise ArgumentTypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                        f"{type(t).__name__}")
        self._to_save = tensors        # packed by Function.apply once the outputs have their grad_fn, as torch does

    @property
    def saved_tensors(self) -> tuple:
        return tuple(s.unpack(self) if s is not None else None for s in getattr(self, "_saved", ()))

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value


class BackwardCFunction(Node, FunctionCtx):
    """The graph node of one Function.apply call; it is also the ctx.

    Each Function subclass gets its own subclass of this, named `<Function>Backward`, so
    `type(y.grad_fn).__name__` reads as in PyTorch.
    """

    _fn_cls = None

    def __init__(self, fn_cls=None) -> None:
        Node.__init__(self)
        if fn_cls is not None:
            self._fn_cls = fn_cls
        self._materialize = True

    def name(self) -> str:
        return f"{self._fn_cls.__name__}Backward"

    def apply(self, grads: list):
        from ember._generated import functions as F

        if self._materialize:
            grads = [g if g is not None else F.zeros(meta[0], dtype=meta[1], device=meta[2])
                     for g, meta in zip(grads, self._output_meta)]
        result = self._fn_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._arg_is_tensor)
        if len(result) < n_args:
            result = result + (None,) * (n_args - len(result))
        if len(result) > n_args and any(r is not None for r in result[n_args:]):
            raise AutogradError(f"function {self.name()} returned an incorrect number of gradients "
                                f"(expected {n_args}, got {len(result)})")
        return [result[i] for i, is_t in enumerate(self._arg_is_tensor) if is_t]

    def release(self) -> None:
        saved = getattr(self, "_saved", None)
        if saved:
            self._saved = tuple(FREED if s is not None else None for s in saved)


class _FunctionMeta(type):
    """Gives every Function subclass its backward node class, `<Name>Backward`."""

    def __init__(cls, name, bases, attrs) -> None:
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_fn_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Base class of custom autograd operations (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args, **kwargs):
        node = cls._backward_cls()
        # keyword arguments count as inputs after the positional ones (needs_input_grad,
        # one gradient each from backward), as in PyTorch
        inputs = args + tuple(kwargs.values())
        arg_is_tensor = tuple(isinstance(a, Tensor) for a in inputs)
        node._arg_is_tensor = arg_is_tensor
        node.needs_input_grad = tuple(isinstance(a, Tensor) and a._ag is not None for a in inputs)
        record = STATE.grad_enabled and any(node.needs_input_grad)
        prev = set_grad_enabled_state(False)
        try:
            outputs = cls.forward(node, *args, **kwargs)
        finally:
            set_grad_enabled_state(prev)
        if not record:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        tensors_in = [a for a in inputs if isinstance(a, Tensor)]
        node.next_edges = tuple(edge_of(t) for t in tensors_in)
        node.input_meta = tuple((tuple(t.shape), t.dtype, t.device) if t._ag is not None else None
                                for t in tensors_in)
        node.n_outputs = len(outs)
        if STATE.anomaly:
            import traceback

            node.anomaly_trace = "".join(traceback.format_stack()[:-1])
        node._output_meta = tuple((tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else ((), None, None)
                                  for o in outs)
        non_diff = getattr(node, "_non_differentiable", set())
        dirty = getattr(node, "_dirty", ())
        result = []
        for k, o in enumerate(outs):
            if isinstance(o, Tensor) and o.dtype.is_floating_point and id(o) not in non_diff:
                if any(o is a for a in inputs) and not any(o is d for d in dirty):
                    o = o.detach()     # an input returned as is becomes a new output (PyTorch: a view)
                o._ag = AutogradMeta(node, k)
                o._keys |= K.AUTOGRAD
            result.append(o)
        to_save = node.__dict__.pop("_to_save", None)
        if to_save is not None:
            node._saved = tuple(_pack_saved(t, node, result) for t in to_save)
        return result[0] if single else tuple(result)


def _pack_saved(t, node, outputs):
    """What `node` keeps of a tensor given to save_for_backward: one of its own differentiable outputs is
    saved as such (no reference cycle; it gets its grad_fn back when unpacked)."""
    for k, o in enumerate(outputs):
        if t is o and o._ag is not None and o._ag.grad_fn is node:
            return pack(t, True, k, node)
    return pack(t)
