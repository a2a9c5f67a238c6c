"""ember.nn.Parameter: a Tensor that a Module registers as a parameter (torch.nn.Parameter).

A Parameter is a `Tensor` subclass sharing its storage with the tensor it wraps; it is a leaf
that requires grad unless told otherwise. Ops on a Parameter return plain Tensors, as in
PyTorch, and `repr` prints "Parameter containing:" first.
"""
from __future__ import annotations

from typing import Any

from ember.frontend.tensor import Tensor
from ember.frontend.torch_function import default_torch_function, disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin",
           "is_lazy"]


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


class UninitializedTensorMixin:
    """What lazy modules' parameters and buffers share before their shape is known: they hold no values
    (an empty tensor carrying the device, dtype and requires_grad to create them with), refuse every op
    except conversions (`to`, `double`, `cpu`, ... and `copy_`) with a ValueError, and `materialize(shape)`
    gives them their storage and makes them plain Parameters (Tensors)."""

    __slots__ = ()
    cls_to_become: type
    _allowed_functions = frozenset({"_to_copy", "copy_"})

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give this tensor an uninitialised storage of `shape` (its own device and dtype unless given)
        and turn it into `cls_to_become`."""
        import ember

        device = self._device if device is None else device
        dtype = self._dtype if dtype is None else dtype
        self.data = ember.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def detach(self):
        _refuse(type(self), "detach")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", None) in cls._allowed_functions:      # on the empty tensor it holds
            plain = tuple(Tensor.detach(a) if isinstance(a, UninitializedTensorMixin) else a for a in args)
            return default_torch_function(cls, func, types, plain, kwargs)
        _refuse(cls, getattr(func, "__name__", repr(func)))


def _refuse(cls, what: str) -> None:
    raise ValueError(f"Attempted to use an uninitialized parameter in {what}(). Lazy modules' parameters and "
                     f"buffers (ember.nn.parameter.{cls.__name__}) have no shape until the module's first forward: "
                     "call it with a dummy batch before using them in other ops.")


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (a lazy module's): only conversions of its device and dtype
    and `materialize` work on it, which makes it a Parameter. `device`/`dtype` are those it will get."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        import ember

        return Tensor._make_subclass(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self._device, self._dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy module's); `materialize` makes it a plain Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        import ember

        t = Tensor._make_subclass(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self._device, self._dtype, getattr(self, "persistent", True))
        memo[id(self)] = result
        return result


def is_lazy(param) -> bool:
    """Whether `param` is an UninitializedParameter or UninitializedBuffer (a lazy module's, not yet shaped)."""
    return isinstance(param, UninitializedTensorMixin)
