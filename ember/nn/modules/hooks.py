"""Module hooks: forward pre/post hooks, full backward pre/post hooks, and their global versions.

`Module.__call__` is `HookedCall._call_impl`: without any hook it is `forward` plus one check.
Backward hooks work as PyTorch's (torch.utils.hooks.BackwardHook): the module's tensor inputs
and outputs pass through an identity autograd Function (`BackwardHookFunction`), whose graph
nodes catch the gradients with respect to the outputs (calling the backward pre-hooks, which
may replace them) and, later, with respect to the inputs (calling the backward hooks with
`(module, grad_input, grad_output)`, which may replace grad_input). Non-tensor arguments
appear as None in those tuples.

The global registrations of torch.nn.modules.module (register_module_forward_pre_hook,
register_module_forward_hook, register_module_full_backward_pre_hook,
register_module_full_backward_hook) apply to every module and run before its own hooks.
"""
from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict

from ember.frontend.autograd.function import Function
from ember.frontend.autograd.grad_mode import is_grad_enabled
from ember.frontend.tensor import Tensor

__all__ = ["RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook"]


class RemovableHandle:
    """A handle whose `remove()` unregisters a hook (torch.utils.hooks.RemovableHandle)."""

    next_id = 0

    def __init__(self, hooks_dict: dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (extra_dict if isinstance(extra_dict, list)
                                                          else [extra_dict] if extra_dict is not None else []))

    def remove(self) -> None:
        hooks = self.hooks_dict_ref()
        if hooks is not None and self.id in hooks:
            del hooks[self.id]
        for ref in self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *args) -> None:
        self.remove()


# -- global hooks (torch.nn.modules.module.register_module_*) ----------------------------------------
_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """hook(module, args) -> None | new args, before every module's forward (and its own pre-hooks)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
    """hook(module, args, output) -> None | new output, after every module's forward."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[_global_forward_hooks_with_kwargs,
                                                                _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """hook(module, grad_output) -> None | new grad_output, for every module."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """hook(module, grad_input, grad_output) -> None | new grad_input, for every module."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


# -- backward hooks ------------------------------------------------------------------------------------
class BackwardHookFunction(Function):
    """Identity on its tensor arguments; its graph node is where backward hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


def _pack_with_none(indices, values, size: int) -> tuple:
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class BackwardHook:
    """Runs one module call's backward hooks (torch.utils.hooks.BackwardHook's protocol)."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _set_user_hook(self, grad_fn) -> None:
        def hook(grad_input, _):
            if self.grad_outputs is None:      # the outputs' gradients never arrived (not part of this backward)
                return None
            res = _pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args: tuple):
        tensors_idx, tensors = [], []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [t.grad_fn for t in new_tensors
                    if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        return (tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)), tensors_idx

    def setup_input_hook(self, args: tuple) -> tuple:
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        def fn(grad_fn) -> None:
            def hook(_, grad_output):
                self.grad_outputs = _pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected_len = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                        if hook_grad_outputs is None:
                            continue
                        if len(hook_grad_outputs) != expected_len:
                            raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                               f"got {len(hook_grad_outputs)}, but expected {expected_len}")
                        self.grad_outputs = hook_grad_outputs
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the hooks fire now, with grad_input all None
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients.", stacklevel=5)
                    grad_inputs = _pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is not None:
                    return tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return None

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


class HookedCall:
    """The hook half of nn.Module: registration and `_call_impl` (mixed into Module)."""

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) -> None | new args; with_kwargs: hook(module, args, kwargs) -> None | (args, kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) -> None | new output (with_kwargs: hook(module, args, kwargs, output))."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_output) -> None | new grad_output, before the gradients w.r.t. inputs are computed."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None | new grad_input, once the gradients w.r.t. the
        module's inputs are computed (tuples with None for non-tensor arguments)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_hooks or _global_forward_pre_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        backward_pre_hooks = backward_hooks = ()
        if _global_backward_pre_hooks or self._backward_pre_hooks or _global_backward_hooks or self._backward_hooks:
            backward_pre_hooks = [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
            backward_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
        with_kwargs_pre = self._forward_pre_hooks_with_kwargs
        for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if with_kwargs_pre and hook_id in with_kwargs_pre:
                result = hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {result}.")
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw_hook = None
        if backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(self, backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)
        forward_hooks = (*_global_forward_hooks.items(), *self._forward_hooks.items())
        with_kwargs = ({**_global_forward_hooks_with_kwargs, **self._forward_hooks_with_kwargs}
                       if _global_forward_hooks_with_kwargs or self._forward_hooks_with_kwargs else {})
        try:
            result = self.forward(*args, **kwargs)
        except Exception:           # no forward hook has run yet: the always_call ones run now
            always = {**_global_forward_hooks_always_called, **self._forward_hooks_always_called}
            for hook_id, hook in forward_hooks:
                if hook_id in always:
                    try:
                        hook(self, args, kwargs, None) if hook_id in with_kwargs else hook(self, args, None)
                    except Exception:
                        pass
            raise
        for hook_id, hook in forward_hooks:
            hook_result = hook(self, args, kwargs, result) if hook_id in with_kwargs else hook(self, args, result)
            if hook_result is not None:
                result = hook_result
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=2)
            result = bw_hook.setup_output_hook(result)
        return result
