"""LazyModuleMixin (torch.nn.modules.lazy): modules whose parameter shapes come from their first input.

A lazy module holds UninitializedParameters (and UninitializedBuffers) until its first call: a forward
pre-hook runs `initialize_parameters(*args, **kwargs)`, which materializes them from the input's shape and
initialises them as the regular layer would; the hook then removes itself and, where the class names a
`cls_to_become`, the module becomes an instance of that class (LazyLinear becomes Linear), so later calls
pay nothing. Loading a state dict whose tensors have shapes materializes the lazy ones first, so a lazy
module takes a trained layer's checkpoint; state dicts of a lazy module keep its uninitialized entries.
"""
from __future__ import annotations

from typing import Any

from ..parameter import is_lazy
from .state_dict import _EXTRA_STATE_KEY_SUFFIX

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixed in before a layer class: `initialize_parameters` (the subclass's) shapes its parameters on the
    first forward; `cls_to_become` (or None to keep the class) is the class it then takes."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """As Module's, except that uninitialized entries are saved as they are (they cannot be detached)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if (is_lazy(param) or keep_vars) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if (is_lazy(buf) or keep_vars) else buf.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """Materialize each uninitialized entry the state dict gives a shaped tensor for, then load as Module
        does; an uninitialized entry given an uninitialized one stays as it is (nothing to copy)."""
        both_lazy = set()
        for store in (self._parameters, self._buffers):
            for name, value in store.items():
                key = prefix + name
                if value is None or key not in state_dict or not is_lazy(value):
                    continue
                if is_lazy(state_dict[key]):
                    both_lazy.add(name)
                else:
                    value.materialize(state_dict[key].shape)
        if not both_lazy:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)
            return
        params, buffers = self._parameters, self._buffers
        self.__dict__["_parameters"] = {k: v for k, v in params.items() if k not in both_lazy}
        self.__dict__["_buffers"] = {k: v for k, v in buffers.items() if k not in both_lazy}
        try:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                          error_msgs)
        finally:
            self.__dict__["_parameters"], self.__dict__["_buffers"] = params, buffers
        handled = {prefix + name for name in both_lazy}
        unexpected_keys[:] = [k for k in unexpected_keys if k not in handled]

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Shape and initialise the parameters from the first call's arguments (each lazy layer defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer of this module (not its children) is still uninitialized."""
        return any(is_lazy(v) for v in (*self._parameters.values(), *self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        """The forward pre-hook: initialize, check that nothing is left uninitialized, remove the hook and take
        `cls_to_become`."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")
