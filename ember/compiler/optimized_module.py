"""`OptimizedModule`: what `ember.compile(module)` returns, as torch's does.

The module it wraps is its `_orig_mod` submodule, so `state_dict()` keys carry the `_orig_mod.`
prefix, as in torch; calling it runs the compiled forward; other attributes are read from the
wrapped module (`compiled.config`, `compiled.generate(...)`).
"""
from __future__ import annotations

from ember.nn.modules.module import Module

from .compiled import CompiledCode

__all__ = ["OptimizedModule"]


class OptimizedModule(Module):
    def __init__(self, mod: Module, settings: dict) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_code", CompiledCode(mod, mod, settings))

    def forward(self, *args, **kwargs):
        return self._code(args, kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)
