"""ember.nn.Parameter: a Tensor that a Module registers as a parameter (torch.nn.Parameter).

A Parameter is a `Tensor` subclass sharing its storage with the tensor it wraps; it is a leaf
that requires grad unless told otherwise. Ops on a Parameter return plain Tensors, as in
PyTorch, and `repr` prints "Parameter containing:" first.
"""
from __future__ import annotations

from ember.frontend.tensor import Tensor
from ember.frontend.torch_function import disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "is_lazy"]


def _wrap(cls, data: Tensor):
    t = object.__new__(cls)
    t._data = data._data
    t._dtype = data._dtype
    t._device = data._device
    t._keys = data._keys
    t._storage = data._storage
    t._ag = None
    t._base = data._base
    t._keys &= ~_autograd_key()
    return t


def _autograd_key() -> int:
    from ember.dispatcher import keys as K

    return K.AUTOGRAD


class Parameter(Tensor):
    """A kind of Tensor that is to be considered a module parameter.

    Assigned as a Module attribute it is added to the module's parameters. `data` is shared
    (no copy); `requires_grad` defaults to True.
    """

    __torch_function__ = classmethod(disabled_torch_function_impl)   # ops on parameters give plain tensors

    _is_param = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            import ember

            data = ember.empty(0)
        if not isinstance(data, Tensor):
            from ember.core.errors import ArgumentTypeError

            raise ArgumentTypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        p = _wrap(cls, data.detach())
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach().cpu().numpy(), str(self.device), self.requires_grad))


def _rebuild_parameter(array, device: str, requires_grad: bool) -> Parameter:
    import ember

    return Parameter(ember.tensor(array, device=device), requires_grad)


class Buffer(Tensor):
    """A tensor to be registered as a module buffer when assigned (torch.nn.Buffer).

    `persistent=False` keeps it out of the module's state_dict.
    """

    __torch_function__ = classmethod(disabled_torch_function_impl)

    _is_param = False

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            import ember

            data = ember.empty(0)
        b = _wrap(cls, data.detach())
        b.persistent = persistent
        return b

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass


def is_lazy(param) -> bool:
    """Whether `param` is an uninitialized lazy parameter (ember has none)."""
    return False
