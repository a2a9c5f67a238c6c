"""ModuleTracker: which modules are running, forward and backward (torch.utils.module_tracker).

Inside `with ModuleTracker() as tracker:`, `tracker.parents` is the set of the fully qualified
names of the modules whose forward is running, plus "Global". A module is named by the
first root module the tracker sees: the root is its class name and each child is
`parent_name.attribute` (torch's naming: "GPT2.h.0.attn").

Backward: the forward post-hook registers gradient hooks on the module's outputs that
require grad (their gradient arriving means the module's backward starts: its name is
added) and the pre-hook on its inputs (their gradient arriving means it ended: the name is
removed). torch waits for the gradients of all inputs (register_multi_grad_hook) and
resets the set after each backward through an engine callback; ember's engine has
neither, so the name is removed when the first input's gradient arrives, and a root's
forward pre-hook clears names left over from an earlier backward.
"""
from __future__ import annotations

import weakref

from ember.frontend.tensor import Tensor

__all__ = ["ModuleTracker"]


def _tensors_requiring_grad(value) -> list:
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            if v.requires_grad:
                out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return out


class ModuleTracker:
    """Context manager tracking the module hierarchy during forward and backward."""

    def __init__(self) -> None:
        self.parents: set[str] = {"Global"}
        self._known_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._seen_modules: weakref.WeakSet = weakref.WeakSet()
        self._hooks: list = []
        self._handles: list = []
        self._running_forward = 0
        self._is_bw = False
        self.version = 0             # bumped at every change of `parents` or `is_bw` (for caches)

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running: True from the first module gradient seen until the next
        module forward (torch asks its engine; its flag also stays True until another forward)."""
        return self._is_bw

    def _get_mod_name(self, mod) -> str:
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        mod_name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for name, submod in mod.named_children():
                self._known_modules[submod] = f"{mod_name}.{name}"
                self._get_mod_name(submod)
            self._seen_modules.add(mod)
        return mod_name

    def _add_fn(self, name: str):
        def fn(*args) -> None:
            self._is_bw = True
            self.parents.add(name)
            self.version += 1
        return fn

    def _remove_fn(self, name: str):
        def fn(*args) -> None:
            self._is_bw = True
            self.parents.discard(name)
            self.version += 1
        return fn

    def _fw_pre_hook(self, mod, input) -> None:
        if self._running_forward == 0:
            self.parents = {"Global"}            # names left by an earlier backward
            self._is_bw = False
        self._running_forward += 1
        name = self._get_mod_name(mod)
        self.parents.add(name)
        self.version += 1
        remove = self._remove_fn(name)
        for t in _tensors_requiring_grad(input):
            self._hooks.append(t.register_hook(remove))

    def _fw_post_hook(self, mod, input, output) -> None:
        self._running_forward -= 1
        name = self._get_mod_name(mod)
        self.parents.discard(name)
        self.version += 1
        add = self._add_fn(name)
        for t in _tensors_requiring_grad(output):
            self._hooks.append(t.register_hook(add))

    def __enter__(self) -> "ModuleTracker":
        from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._handles = [register_module_forward_pre_hook(self._fw_pre_hook),
                         register_module_forward_hook(self._fw_post_hook, always_call=True)]
        return self

    def __exit__(self, *args) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
