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

from .tensor_tree import tensors_in

__all__ = ["ModuleTracker"]


def _tensors_requiring_grad(value) -> list:
    return [t for t in tensors_in(value) if t.requires_grad]


class ModuleTracker:
    """Context manager tracking the module hierarchy during forward and backward."""

    def __init__(self) -> None:
        self.parents: set[str] = {"Global"}
        # id(module) -> (weakref to it, its name, whether its children are named too): a plain dict
        # (asked twice per module call; a WeakKeyDictionary builds a weakref per lookup)
        self._names: dict[int, tuple] = {}
        self._grad_hooks: dict[str, tuple] = {}     # name -> (add, remove) gradient hooks
        self._handles: list = []
        self._active = False
        self._running_forward = 0
        self._is_bw = False

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running: True from the first module gradient seen until the next
        module forward (torch asks its engine; its flag also stays True until another forward)."""
        return self._is_bw

    def _get_mod_name(self, mod) -> str:
        entry = self._names.get(id(mod))
        if entry is not None and entry[2] and entry[0]() is mod:
            return entry[1]
        mod_name = entry[1] if entry is not None and entry[0]() is mod else type(mod).__name__
        self._names[id(mod)] = (weakref.ref(mod), mod_name, True)
        for name, submod in mod.named_children():
            known = self._names.get(id(submod))
            if known is None or known[0]() is not submod:
                self._names[id(submod)] = (weakref.ref(submod), f"{mod_name}.{name}", False)
            self._get_mod_name(submod)
        return mod_name

    def _hooks_of(self, name: str) -> tuple:
        """The gradient hooks marking `name`'s backward: `add` on its outputs (its backward starts),
        `remove` on its inputs (it ended). Made once per name; inert outside the `with` block, so
        they need no removal (they go with the tensors)."""
        hooks = self._grad_hooks.get(name)
        if hooks is None:
            def add(*args) -> None:
                if self._active:
                    self._is_bw = True
                    self.parents.add(name)

            def remove(*args) -> None:
                if self._active:
                    self._is_bw = True
                    self.parents.discard(name)
            hooks = self._grad_hooks[name] = (add, remove)
        return hooks

    def _fw_pre_hook(self, mod, input) -> None:
        if self._running_forward == 0:
            self.parents = {"Global"}            # names left by an earlier backward
            self._is_bw = False
        self._running_forward += 1
        name = self._get_mod_name(mod)
        self.parents.add(name)
        remove = self._hooks_of(name)[1]
        for t in _tensors_requiring_grad(input):
            t.register_hook(remove)

    def _fw_post_hook(self, mod, input, output) -> None:
        self._running_forward -= 1
        name = self._get_mod_name(mod)
        self.parents.discard(name)
        add = self._hooks_of(name)[0]
        for t in _tensors_requiring_grad(output):
            t.register_hook(add)

    def __enter__(self) -> "ModuleTracker":
        from ember.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        self._active = True
        self._handles = [register_module_forward_pre_hook(self._fw_pre_hook),
                         register_module_forward_hook(self._fw_post_hook, always_call=True)]
        return self

    def __exit__(self, *args) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self._active = False
