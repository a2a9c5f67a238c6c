"""Where an allocation happens, for ember.memory.track: the module (innermost in forward; in backward
the module whose forward made the autograd node running) and the phase, as an index into the
tracker's interned (module, phase) places."""
from __future__ import annotations

import functools
import weakref
from bisect import bisect_right
from typing import TYPE_CHECKING

from ember.frontend.autograd.graph import next_sequence_number
from ember.utils.module_tracker import ModuleTracker

if TYPE_CHECKING:
    from .tracker import MemoryTracker

#: the place of allocations outside any module and optimizer step (the tracker interns it first)
GLOBAL_PLACE = 0


class ModuleAttribution(ModuleTracker):
    """Keeps the tracker's place (module, phase) current: the innermost module running in forward,
    and in backward the module whose forward made the node the engine is running.

    ModuleTracker names the modules and, without `model=`, installs the global forward hooks (with
    `model=`, `wrap` follows the model's modules through their forward instead); its own backward
    tracking (gradient hooks on every module call's inputs and outputs, the name removed when the
    first input's gradient arrives) is replaced by the autograd nodes' creation numbers. Each module
    entry and exit takes a number (`next_sequence_number`) and records the module innermost from
    then on, so a node's `seq` finds the module that made it by bisection. This costs nothing per
    module call in backward, and sibling modules sharing an input (LLaMA's w1 and w3) each get
    their own backward.
    """

    def __init__(self, tracker: "MemoryTracker") -> None:
        super().__init__()
        self._tracker = tracker
        self._places_of: dict[str, tuple[int, int]] = {}    # module name -> (forward, backward) place
        self._places_by_id: dict[int, tuple] = {}           # id(module) -> (weakref, forward, backward place)
        self._running: list[tuple[int, int]] = []           # places of the enclosing modules, outermost first
        self._bounds: list[int] = []           # sequence number at each module entry and exit, increasing
        self._backward_place: list[int] = []   # the backward place of nodes numbered from each bound on
        self._wrapped: list[tuple] = []        # (module, its own instance forward or None) while `wrap`ped

    def places(self, mod) -> tuple[int, int]:
        """`mod`'s forward and backward places."""
        known = self._places_by_id.get(id(mod))
        if known is not None and known[0]() is mod:
            return known[1], known[2]
        name = self._get_mod_name(mod)
        places = self._places_of.get(name)
        if places is None:
            intern = self._tracker._intern_place
            places = self._places_of[name] = (intern((name, "forward")), intern((name, "backward")))
        self._places_by_id[id(mod)] = (weakref.ref(mod), *places)
        return places

    def wrap(self, model) -> None:
        """Attribute `model`'s modules only, through their forward: each gets an instance attribute
        `forward` doing what the two global hooks do, without Module.__call__'s hooked path (the
        hooks' dispatch is most of their cost). Modules outside `model` count as the caller's place.
        A module copied or pickled inside the block leaves the wrapper out (Module.__getstate__)."""
        for mod in model.modules():
            own = mod.__dict__.get("forward")
            mod.__dict__["forward"] = self._traced(mod, own if own is not None else mod.forward, own)
            self._wrapped.append((mod, own))

    def unwrap(self) -> None:
        for mod, own in self._wrapped:
            if own is None:
                mod.__dict__.pop("forward", None)
            else:
                mod.__dict__["forward"] = own
        self._wrapped = []

    def _enter_module(self, places) -> None:
        self._running.append(places)
        self._tracker._place_now = places[0]
        self._bounds.append(next_sequence_number())
        self._backward_place.append(places[1])

    def _exit_module(self) -> None:
        running = self._running
        if running:
            running.pop()
        places = running[-1] if running else (GLOBAL_PLACE, GLOBAL_PLACE)
        self._tracker._place_now = places[0]
        self._bounds.append(next_sequence_number())
        self._backward_place.append(places[1])

    def _traced(self, mod, forward, own):
        places = self.places(mod)
        enter, leave, on_forward = self._enter_module, self._exit_module, self._tracker._on_module_forward

        @functools.wraps(forward)
        def traced_forward(*args, **kwargs):
            enter(places)
            try:
                on_forward(mod, args)
                return forward(*args, **kwargs)
            finally:
                leave()
        traced_forward.__ember_memory_own_forward__ = own       # what Module.__getstate__ keeps instead
        return traced_forward

    def _fw_pre_hook(self, mod, args) -> None:
        self._enter_module(self.places(mod))
        self._tracker._on_module_forward(mod, args)

    def _fw_post_hook(self, mod, args, output) -> None:
        self._exit_module()

    def backward_place(self, seq: int) -> int:
        """The backward place of the node numbered `seq`: that of the module innermost when it was made."""
        i = bisect_right(self._bounds, seq) - 1
        return self._backward_place[i] if i >= 0 else GLOBAL_PLACE
